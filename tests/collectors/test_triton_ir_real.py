"""Real Triton: compile two kernels under MLIR_ENABLE_DUMP=1 and check ir_steps against the log.

No GPU is needed: `triton.compile` with an explicit GPUTarget runs every pass. Skipped where
Triton is not installed (.ci/run installs it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from tests.support.triton_demo import requires_triton

pytestmark = requires_triton

SCRIPT = '''
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

@triton.jit
def rowmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    tl.store(out_ptr + tl.program_id(0), tl.max(x, axis=0))

sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
triton.compile(ASTSource(fn=scale_kernel, signature=sig, constexprs={"BLOCK": 256}), target=GPUTarget("cuda", 90, 32))
sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"}
triton.compile(ASTSource(fn=rowmax_kernel, signature=sig, constexprs={"BLOCK": 512}), target=GPUTarget("cuda", 90, 32))
print("compiled both")
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("real_triton")
    (folder / "kernels.py").write_text(SCRIPT)
    env = {**os.environ, "MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": str(folder / "c")}
    done = subprocess.run([sys.executable, "kernels.py"], cwd=folder, env=env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    log = folder / "stderr.txt"
    log.write_bytes(done.stdout + done.stderr)  # 2>&1: the program's print is in the log too
    return log, log.read_text()


def test_ir_steps_match_the_log(compiled: tuple[Path, str]) -> None:
    log, text = compiled
    run = registry.collect([log])
    steps = run.tables["ir_steps"]
    headers = [line for line in text.split("\n") if re.match(r"// -----// (IR Dump |\w+ internal IR Dump )", line)]
    assert steps.height == len(headers) > 40
    kernels = run.tables["ir_kernels"].sort("compile")
    assert kernels["kernel"].to_list() == ["scale_kernel", "rowmax_kernel"]
    assert kernels["target"].to_list() == ["cuda:90", "cuda:90"]
    assert set(steps["target"]) == {"cuda:90"}
    # each compile starts at the pipeline's first pass, and holds every dump up to the next one
    starts = [i for i, line in enumerate(headers) if line.startswith(headers[0][:40])]
    assert len(starts) == 2
    per_compile = steps.group_by("compile").len().sort("compile")["len"].to_list()
    assert per_compile == [starts[1] - starts[0], len(headers) - starts[1]]
    assert steps.filter(pl.col("compile") == 1)["kernel"].unique().to_list() == ["rowmax_kernel"]
    for compile_index in (0, 1):
        stages = steps.filter(pl.col("compile") == compile_index)["stage"].unique(maintain_order=True).to_list()
        assert stages == ["ttir", "ttgir", "llvm-mlir"]
    assert steps["changed"].sum() < steps.height  # many passes leave the IR as it was
    locs = run.tables["ir_locs"]
    assert locs.filter(pl.col("file").str.ends_with("kernels.py")).height > 0


def test_compile_capture_command(compiled: tuple[Path, str], tmp_path: Path) -> None:
    script = compiled[0].parent / "kernels.py"
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "compile-capture", "--quiet", "--data",
                           str(tmp_path / "data"), "--name", "two-kernels", "--", str(script)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = done.stdout.strip().split("\n")[-1]
    from dashboard.store import RunStore

    run = RunStore(tmp_path / "data").open(run_id)
    assert run.has_evidence("compiler")
    assert run.frame("ir_kernels")["kernel"].to_list() == ["scale_kernel", "rowmax_kernel"]
    assert any(p.name == "kernels.py" for p in (run.info.path / "source").rglob("*.py"))
