"""`dashboard ingest` ends its process without the interpreter's teardown: nothing it prints may be lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dashboard.store import RunStore

REPO = Path(__file__).resolve().parents[1]


def _trace_with_a_warning(path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 40,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "no duration", "pid": 0, "tid": 7, "ts": 80},  # skipped, warned
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_ingest_prints_its_run_id_and_warnings_through_a_pipe_and_exits_zero(tmp_path: Path) -> None:
    trace = _trace_with_a_warning(tmp_path / "rank-0.pt.trace.json")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(trace), "--data", str(tmp_path / "d")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    assert run_id and "\n" not in run_id
    assert "warning:" in done.stderr and "skipped 1 GPU events without" in done.stderr
    run = RunStore(tmp_path / "d").open(run_id)
    assert run.frame("kernels").height == 1
