"""Idle time by what the host was doing: a generated trace with one gap of each cause, exact ns per cause."""

from __future__ import annotations

import polars as pl

from dashboard.analysis import launch_stats
from dashboard.analysis.gpu_busy import activity_intervals, merged_intervals
from dashboard.analysis.idle_causes import CAUSES, idle_by_cause, idle_parts
from tests.support.findings_trace import TraceBuilder

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def cause_trace() -> TraceBuilder:
    """One profiler step [0, 700 µs); then one gap per cause (times in ns, worked out by hand below)."""
    return (TraceBuilder().step(0, 1, 0, 700_000)
            .op(0, "aten::mm", 4_000, 9_000).kernel(0, 10_000, 20_000, launch_start=5_000, launch_end=8_000)
            # gap A [20, 220 µs): the host is in the DataLoader until 200 µs, then in a conv that launches at 213.
            .op(0, LOADER, 15_000, 200_000)
            .op(0, "aten::conv2d", 200_000, 214_000)
            .kernel(0, 220_000, 230_000, launch_start=210_000, launch_end=213_000)
            # gap B [230, 330 µs): a blocking call ends inside it; K3 launched at 325 µs, under no op.
            .call(0, "cudaStreamSynchronize", 225_000, 231_000)
            .op(0, "aten::to", 240_000, 300_000)
            .kernel(0, 330_000, 340_000, launch_start=320_000, launch_end=325_000)
            # gap C [340, 400 µs): a linear op spends 52 µs before its launch.
            .op(0, "aten::linear", 338_000, 396_000)
            .kernel(0, 400_000, 401_000, launch_start=390_000, launch_end=395_000)
            # gap D [401, 601 µs): a CPU op with no launch, then a launch at 585-590 µs.
            .op(0, "aten::nonzero", 410_000, 580_000)
            .kernel(0, 601_000, 611_000, launch_start=585_000, launch_end=590_000)
            # gap E [611, 900 µs): the step ends at 700 µs.
            .kernel(0, 900_000, 910_000, launch_start=850_000, launch_end=855_000)
            # gap F [910, 1000 µs): its work was launched before it began.
            .kernel(0, 1_000_000, 1_010_000, launch_start=880_000, launch_end=890_000)
            # gap G [1010, 1110 µs): the host waits in a barrier.
            .op(0, "c10d::barrier", 1_005_000, 1_100_000)
            .kernel(0, 1_110_000, 1_120_000, launch_start=1_101_000, launch_end=1_105_000))


EXPECTED = {
    "data loading": 180_000,  # A: [20, 200)
    "synchronisation": 95_000,  # B: [230, 325): a blocking call opened the gap
    # A: [200, 213) in a launching op + [213, 220) launch latency; B: [325, 330) latency; C: [340, 400);
    # D: [585, 590) the launch call + [590, 601) latency; E: [855, 900) latency; G: [1105, 1110) latency.
    "launch-bound": 13_000 + 7_000 + 5_000 + 60_000 + 5_000 + 11_000 + 45_000 + 5_000,
    "CPU-bound": 184_000 + 89_000,  # D: [401, 585) in the step, no launch; E: [611, 700)
    "communication wait": 90_000,  # G: [1010, 1100)
    "outside steps": 155_000 + 5_000,  # E: [700, 855); G: [1100, 1105)
    "unknown": 90_000,  # F: launched at 890 µs, before the gap began, started at 1000 µs
}


def _parts(builder: TraceBuilder) -> tuple[pl.DataFrame, pl.DataFrame]:
    tables = builder.tables()
    pieces = merged_intervals(activity_intervals(tables["kernels"], tables["memcpy"]))
    return idle_parts(tables["kernels"], tables["memcpy"], tables["api_calls"], tables["ranges"], pieces)


def test_each_cause_gets_exactly_its_nanoseconds_and_they_add_up_to_the_idle_time() -> None:
    gaps, parts = _parts(cause_trace())
    causes = idle_by_cause(parts)
    assert dict(causes.select("cause", "idle_ns").rows()) == EXPECTED
    assert causes.get_column("cause").to_list() == list(CAUSES)
    idle = int(gaps.get_column("gap_ns").sum())
    assert idle == 200_000 + 100_000 + 60_000 + 200_000 + 289_000 + 90_000 + 100_000
    assert sum(EXPECTED.values()) == idle
    # One cause per nanosecond: the parts are disjoint and lie inside the gaps.
    ordered = parts.sort("start_ns")
    assert (ordered.get_column("start_ns").shift(-1).drop_nulls() >= ordered.get_column("end_ns").head(-1)).all()


def test_a_gap_after_a_device_to_host_copy_is_synchronisation() -> None:
    builder = (TraceBuilder().step(0, 1, 0, 1_000_000).kernel(0, 0, 10_000, launch_end=1)
               .copy(0, 10_000, 11_000, kind="DtoH", src_kind="Device", dst_kind="Pageable", launch_end=9_000)
               .kernel(0, 111_000, 120_000, launch_start=100_000, launch_end=105_000))
    causes = dict(idle_by_cause(_parts(builder)[1]).select("cause", "idle_ns").rows())
    assert causes["synchronisation"] == 94_000 and causes["launch-bound"] == 6_000  # then the launch's latency


def test_without_profiler_steps_nothing_is_outside_steps_and_bare_time_is_unknown() -> None:
    builder = cause_trace()
    builder.ranges[:] = [r for r in builder.ranges if r["category"] != "profiler_step"]
    causes = dict(idle_by_cause(_parts(builder)[1]).select("cause", "idle_ns").rows())
    assert causes["outside steps"] == 0
    # Time in no range and no step is unknown now: E's [611, 850) (was 89 µs CPU-bound + 150 outside steps),
    # D's [401, 410) and [580, 585) (were CPU-bound), G's [1100, 1101) (was outside steps); the launch calls
    # E's [850, 855) and G's [1101, 1105) are launch-bound now.
    assert causes["unknown"] == EXPECTED["unknown"] + 239_000 + 14_000 + 1_000
    assert causes["CPU-bound"] == EXPECTED["CPU-bound"] - 89_000 - 14_000
    assert causes["launch-bound"] == EXPECTED["launch-bound"] + 5_000 + 4_000
    assert sum(causes.values()) == sum(EXPECTED.values())


def test_launch_delays_and_short_kernel_shares() -> None:
    tables = (TraceBuilder().kernel(0, 1_000, 6_000, launch_end=500).kernel(0, 10_000, 40_000, launch_end=9_000)
              .kernel(0, 50_000, 52_000).tables())
    delays = launch_stats.launch_delays(tables["kernels"], tables["api_calls"])
    assert delays.get_column("delay_ns").to_list() == [500, 1_000, None]
    row = launch_stats.launch_summary(delays).row(0, named=True)
    assert (row["kernels"], row["short_kernels"], row["kernel_ns"], row["short_kernel_ns"]) == (3, 2, 37_000, 7_000)
    assert row["short_count_share"] == 2 / 3 and row["short_time_share"] == 7_000 / 37_000
    assert row["median_delay_ns"] == 750
