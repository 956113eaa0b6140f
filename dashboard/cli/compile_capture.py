"""Compile a script's Triton kernels under pass dumps and ingest the result: the compiler's capture.

    dashboard compile-capture [--name N] [--kernel K] [--data DIR] -- my_kernels.py args...

The script runs in a child Python with `MLIR_ENABLE_DUMP=1` (or the kernel
name given by `--kernel`) and `TRITON_ALWAYS_COMPILE=1` (a cache hit would
compile, and dump, nothing); its stderr is teed to the terminal and to
`<data>/compile-captures/<name>/stderr.log`, which is then ingested with the
script itself when it defines kernels. No GPU is needed when the script
compiles with an explicit `GPUTarget` (`triton.compile(..., target=GPUTarget("cuda", 90, 32))`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click

from dashboard.collectors.base import IngestError
from dashboard.store import safe_name


def run_with_dumps(script: Path, args: list[str], log_path: Path, kernel: str | None, llvm: bool,
                   echo: bool) -> int:
    """Run the script with the dump variables set, stderr teed to `log_path`; its exit code."""
    env = {**os.environ, "MLIR_ENABLE_DUMP": kernel or "1", "TRITON_ALWAYS_COMPILE": "1"}
    if llvm:
        env["LLVM_IR_ENABLE_DUMP"] = "1"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log, subprocess.Popen(
        [sys.executable, str(script), *args], stderr=subprocess.PIPE, env=env, cwd=script.parent or None,
    ) as child:
        assert child.stderr is not None
        while chunk := child.stderr.read1(1 << 16):
            log.write(chunk)
            if echo:
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
    return child.returncode


@click.command("compile-capture", context_settings={"ignore_unknown_options": True})
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default="data",
              show_default=True, envvar="DASHBOARD_DATA", help="Data folder holding runs/.")
@click.option("--name", default=None, help="Run name (default: compile-<script name>).")
@click.option("--kernel", default=None, help="Dump only modules holding this kernel (MLIR_ENABLE_DUMP=<kernel>).")
@click.option("--llvm", is_flag=True, default=False, help="Also dump the LLVM IR passes (LLVM_IR_ENABLE_DUMP=1).")
@click.option("--quiet", is_flag=True, default=False, help="Do not echo the script's stderr (the dumps) here.")
def compile_capture_command(script: Path, args: tuple[str, ...], data_dir: Path, name: str | None,
                            kernel: str | None, llvm: bool, quiet: bool) -> None:
    """Run SCRIPT with Triton's pass dumps on, keep its stderr, and ingest it as a compiler run."""
    from dashboard.collectors.triton_ir import is_kernel_source
    from dashboard.ingest.pipeline import ingest_paths
    from dashboard.store import RunStore

    script = script.resolve()
    run_name = name or f"compile-{script.stem}"
    folder = Path(data_dir) / "compile-captures" / f"{safe_name(run_name)}-{time.strftime('%Y%m%d-%H%M%S')}"
    log_path = folder / "stderr.log"
    exit_code = run_with_dumps(script, list(args), log_path, kernel, llvm, echo=not quiet)
    inputs = [log_path]
    if is_kernel_source(script.read_bytes()[:1 << 16]):
        inputs.append(script)  # kept with the run: the page shows its lines beside the IR
    try:
        run_id = ingest_paths(RunStore(data_dir), inputs, name=run_name)
    except IngestError as exc:
        hint = "" if log_path.stat().st_size else " (the script wrote nothing on stderr: did it compile a kernel?)"
        click.echo(f"error: {exc}{hint}", err=True)
        sys.exit(1)
    click.echo(run_id)
    if exit_code != 0:
        click.echo(f"error: {script} exited with status {exit_code}; what it compiled was ingested as {run_id}",
                   err=True)
        sys.exit(exit_code)
