"""The command line's ingest path loads no web stack (Dash, plotly and Flask are for serving), nor the
parsers of formats it was not given (lark, for DOT dumps, costs every ingest ~25 ms)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.gen_kineto_trace import write_trace

REPO = Path(__file__).resolve().parents[1]


def test_cli_ingest_imports_no_dash_plotly_or_flask(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.json", 300)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "dashboard.app", "ingest", str(trace),
                           "--data", str(tmp_path / "data")], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert {"polars", "dashboard.store", "dashboard.collectors.registry"} <= imported
    assert not {"dash", "plotly", "flask"} & imported
    assert "lark" not in imported  # a Kineto trace needs no DOT parser
    assert done.stdout.strip().startswith("trace-")
