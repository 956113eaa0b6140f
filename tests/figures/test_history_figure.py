"""/history's trend: a run without a series leaves a gap in its line, never a segment joining its neighbours."""

from __future__ import annotations

import polars as pl

from dashboard.analysis.compare_history import HISTORY_SCHEMA, KERNEL, STEP
from dashboard.figures.compare_history import history_figure


def test_a_series_missing_from_a_run_breaks_its_line() -> None:
    runs = ["r1", "r2", "r3"]
    rows = [(0, "r1", STEP, STEP, 3e6), (1, "r2", STEP, STEP, 2.5e6), (2, "r3", STEP, STEP, 2e6),
            (0, "r1", KERNEL, "gemm", 1e6), (2, "r3", KERNEL, "gemm", 0.8e6),  # r2 has no gemm
            (1, "r2", KERNEL, "flash", 0.5e6)]
    frame = pl.DataFrame(rows, schema=HISTORY_SCHEMA, orient="row")
    figure = history_figure(frame, runs)
    gemm = next(trace for trace in figure.data if trace.name == "kernel time: gemm")
    assert list(gemm.x) == runs and gemm.y[1] is None and gemm.connectgaps is False
    assert gemm.y[0] is not None and gemm.y[2] is not None
    step = next(trace for trace in figure.data if trace.name == "step time")
    assert None not in list(step.y)
    assert "not in this run" in gemm.hovertext[1]
