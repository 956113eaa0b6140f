"""/memory (CUDA): memory held before the profiler started is stated and drawn as a base, and the chart has no
empty row (issue 34 item 3)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dashboard.store import RunStore
from dashboard.views import memory_cuda
from tests.analysis.test_cuda_memory import _events

HELD = 3_800_000_000  # bytes allocated before the profiler's first event


def _run(tmp_path: Path, events: pl.DataFrame) -> tuple[object, memory_cuda.State]:
    store = RunStore(tmp_path / "data")
    run = store.open(store.write("held", {"device_memory": events}))
    return run, memory_cuda.State.from_query({}, run)


def test_memory_held_before_the_profiler_is_the_charts_base(tmp_path: Path) -> None:
    events = _events().with_columns(pl.col("allocated") + HELD)  # allocator totals include what was held
    run, state = _run(tmp_path, events)
    shown = memory_cuda.cuda_view(run, state)
    assert shown.held_before == {"cuda:0": HELD}
    # At t=20 the trace's own live allocations are 400 B; the allocator says 400 B more than it held before.
    assert shown.allocated_at(20) == HELD + 400
    figure = memory_cuda.figures(run, state)["cuda-memory"]
    (base,) = [trace for trace in figure.data if trace.name == "cuda:0 held before the profiler started"]
    assert base.fill == "tozeroy" and list(base.y) == [HELD / 1024**3] * 2
    assert figure.layout.legend.yanchor == "bottom" and figure.layout.legend.y >= 1.0  # above the curves
    assert figure.layout.yaxis.title.text == "memory (GiB)"  # short: the note says what it counts


def test_a_trace_without_totals_or_reserved_has_one_row_and_no_base(tmp_path: Path) -> None:
    events = _events().with_columns(pl.lit(True).alias("relative"), pl.lit(None, pl.Int64).alias("reserved"))
    run, state = _run(tmp_path, events)
    shown = memory_cuda.cuda_view(run, state)
    assert shown.held_before == {} and shown.allocated_at(20) is None
    figure = memory_cuda.figures(run, state)["cuda-memory"]
    assert "yaxis2" not in figure.layout.to_plotly_json()  # no empty slack row taking the x labels away
    assert figure.layout.xaxis.title.text == "time since the first memory event (ms)"
    assert figure.layout.yaxis.title.text == "allocated (from 0) (B)"
