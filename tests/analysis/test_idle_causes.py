"""Idle gaps by cause and launch statistics on a hand-built trace with one gap of each cause."""

from __future__ import annotations

import polars as pl

from dashboard.analysis import launch_stats
from dashboard.analysis.gpu_busy import activity_intervals, merged_intervals
from dashboard.analysis.idle_causes import idle_by_cause, idle_gaps
from tests.support.findings_trace import TraceBuilder


def cause_trace() -> TraceBuilder:
    """Step 1 = [0, 1000), step 2 = [1100, 2000); gaps of 100 (launch), 100 (sync), 100 (other), 400 (outside
    steps) and 50 (after a device-to-host copy)."""
    return (TraceBuilder().step(0, 1, 0, 1000).step(0, 2, 1100, 2000)
            .kernel(0, 100, 200, launch_end=50)
            .kernel(0, 300, 400, launch_end=290)  # launched after the GPU went idle at 200
            .call(0, "cudaStreamSynchronize", 410, 480)  # ends inside the gap [400, 500)
            .kernel(0, 500, 600, launch_end=250)
            .kernel(0, 700, 800, launch_end=550)  # launched before the gap [600, 700): something else held it
            .kernel(0, 1200, 1300, launch_end=1150)  # gap [800, 1200) leaves step 1
            .copy(0, 1300, 1350, kind="DtoH", src_kind="Device", dst_kind="Pageable", launch_end=1290)
            .kernel(0, 1400, 1500, launch_end=1390))


def _gaps(builder: TraceBuilder) -> pl.DataFrame:
    tables = builder.tables()
    pieces = merged_intervals(activity_intervals(tables["kernels"], tables["memcpy"]))
    return idle_gaps(pieces, tables["kernels"], tables["memcpy"], tables["api_calls"], tables["ranges"])


def test_each_gap_gets_its_cause() -> None:
    gaps = _gaps(cause_trace())
    assert gaps.select("start_ns", "end_ns", "cause").rows() == [
        (200, 300, "launch-bound"), (400, 500, "synchronisation"), (600, 700, "other"),
        (800, 1200, "outside steps"), (1350, 1400, "synchronisation")]


def test_idle_by_cause_adds_up_to_the_idle_time() -> None:
    causes = idle_by_cause(_gaps(cause_trace()))
    assert causes.select("cause", "gaps", "idle_ns").rows() == [
        ("outside steps", 1, 400), ("synchronisation", 2, 150), ("launch-bound", 1, 100), ("other", 1, 100)]
    assert causes.get_column("idle_ns").sum() == 1400 - 650  # span - busy


def test_without_profiler_steps_no_gap_is_outside_steps() -> None:
    builder = cause_trace()
    builder.ranges.clear()
    assert "outside steps" not in _gaps(builder).get_column("cause").to_list()


def test_launch_delays_and_short_kernel_shares() -> None:
    tables = (TraceBuilder().kernel(0, 1_000, 6_000, launch_end=500).kernel(0, 10_000, 40_000, launch_end=9_000)
              .kernel(0, 50_000, 52_000).tables())
    delays = launch_stats.launch_delays(tables["kernels"], tables["api_calls"])
    assert delays.get_column("delay_ns").to_list() == [500, 1_000, None]
    row = launch_stats.launch_summary(delays).row(0, named=True)
    assert (row["kernels"], row["short_kernels"], row["kernel_ns"], row["short_kernel_ns"]) == (3, 2, 37_000, 7_000)
    assert row["short_count_share"] == 2 / 3 and row["short_time_share"] == 7_000 / 37_000
    assert row["median_delay_ns"] == 750
