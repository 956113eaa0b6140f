"""`compile-capture`: the script's stderr is teed to a log and ingested (no Triton needed for these)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dashboard.store import RunStore
from tests.collectors.triton_ir_fixtures import compile_log

REPO = Path(__file__).resolve().parents[1]


def _capture(tmp_path: Path, script: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "kernels.py"
    path.write_text(script)
    return subprocess.run([sys.executable, "-m", "dashboard.app", "compile-capture", "--data", str(tmp_path / "data"),
                           *extra, "--", str(path), "--flag"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_stderr_is_teed_and_ingested_with_the_script(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text(compile_log("add_kernel", 1024))
    script = ("import os, sys\n# @triton.jit kernels would live here\n"
              "assert sys.argv[1:] == ['--flag'] and os.environ['MLIR_ENABLE_DUMP'] == 'add_kernel'\n"
              "assert os.environ['TRITON_ALWAYS_COMPILE'] == '1'\n"
              "sys.stderr.write(open('log.txt').read())\nprint('done')\n")
    done = _capture(tmp_path, script, "--name", "cap", "--kernel", "add_kernel")
    assert done.returncode == 0, done.stderr
    assert "IR Dump Before InlinerPass" in done.stderr  # teed to the terminal
    run = RunStore(tmp_path / "data").open(done.stdout.strip().split("\n")[-1])
    assert run.frame("ir_kernels")["kernel"].to_list() == ["add_kernel"]
    assert (run.info.path / "source").is_dir() and list((run.info.path / "source").rglob("kernels.py"))
    logs = list((tmp_path / "data" / "compile-captures").rglob("stderr.log"))
    assert len(logs) == 1 and logs[0].read_text() == (tmp_path / "log.txt").read_text()


def test_a_script_that_compiles_nothing_says_so(tmp_path: Path) -> None:
    done = _capture(tmp_path, "print('no kernels here')\n", "--quiet")
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: ") and "did it compile a kernel?" in done.stderr
    assert len(done.stderr.strip().split("\n")) == 1


def test_a_failing_script_still_keeps_what_it_compiled(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text(compile_log("k", 64))
    done = _capture(tmp_path, "import sys\nsys.stderr.write(open('log.txt').read())\nsys.exit(3)\n", "--quiet")
    assert done.returncode == 3
    assert "exited with status 3" in done.stderr
    assert RunStore(tmp_path / "data").open(done.stdout.strip().split("\n")[-1]).has_evidence("compiler")
