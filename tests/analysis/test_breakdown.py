"""GPU time breakdown per rank and per step (HTA's definitions) on hand-built traces."""

from __future__ import annotations

import polars as pl

from dashboard.analysis.breakdown import breakdown_by_rank, breakdown_by_step, classified_intervals
from tests.support.findings_trace import TraceBuilder

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _two_step_trace() -> dict[str, pl.DataFrame]:
    # compute [0,100) [150,250) in step 1; all-reduce [200,400) and a copy [450,500) in step 2.
    return (TraceBuilder().kernel(0, 0, 100, step=1).kernel(0, 150, 250, step=1)
            .kernel(0, 200, 400, name=NCCL, step=2, stream=20).copy(0, 450, 500, step=2).tables())


def test_rank_breakdown_splits_the_span_into_compute_communication_memory_and_idle() -> None:
    tables = _two_step_trace()
    row = breakdown_by_rank(classified_intervals(tables["kernels"], tables["memcpy"])).row(0, named=True)
    # union = [0,100) + [150,400) + [450,500) = 400; compute = 200; compute ∪ comm = 350.
    assert (row["span_ns"], row["busy_ns"], row["idle_ns"]) == (500, 400, 100)
    assert (row["compute_ns"], row["communication_ns"], row["memory_ns"]) == (200, 150, 50)
    assert (row["communication_total_ns"], row["overlap_ns"]) == (200, 50)
    assert (row["idle_share"], row["compute_share"]) == (0.2, 0.4)
    assert abs(row["non_compute_share"] - 0.4) < 1e-12


def test_step_breakdown_counts_what_each_step_launched() -> None:
    tables = _two_step_trace()
    steps = breakdown_by_step(classified_intervals(tables["kernels"], tables["memcpy"]))
    assert steps.select("rank", "step", "span_ns", "idle_ns", "compute_ns", "communication_ns", "memory_ns",
                        "overlap_ns").rows() == [(0, 1, 250, 50, 200, 0, 0, 0), (0, 2, 300, 50, 0, 200, 50, 0)]


def test_kernels_named_memcpy_count_as_memory_and_ranks_stay_apart() -> None:
    tables = (TraceBuilder().kernel(0, 0, 10, name="Memcpy DtoD (Device -> Device)").kernel(1, 0, 40)
              .kernel(1, 60, 100, name="rcclKernel_Broadcast").tables())
    rows = breakdown_by_rank(classified_intervals(tables["kernels"], tables["memcpy"])).select(
        "rank", "span_ns", "idle_ns", "compute_ns", "communication_ns", "memory_ns").rows()
    assert rows == [(0, 10, 0, 0, 0, 10), (1, 100, 20, 40, 40, 0)]


def test_steps_outside_every_profiler_step_form_their_own_null_bucket() -> None:
    tables = TraceBuilder().kernel(0, 0, 10, step=3).kernel(0, 20, 30).tables()
    steps = breakdown_by_step(classified_intervals(tables["kernels"], tables["memcpy"]))
    assert steps.select("step", "span_ns").sort("step", nulls_last=True).rows() == [(3, 10), (None, 10)]


def test_no_activity_gives_empty_frames_with_the_columns() -> None:
    tables = TraceBuilder().tables()
    intervals = classified_intervals(tables["kernels"], tables["memcpy"])
    assert breakdown_by_rank(intervals).height == 0
    assert "idle_share" in breakdown_by_step(intervals).columns


def test_hta_scope_leaves_out_the_last_step_and_unlaunched_work() -> None:
    from dashboard.analysis.breakdown import hta_scope

    tables = (TraceBuilder().step(0, 1, 0, 1000).step(0, 2, 1000, 2000)
              .kernel(0, 100, 200, launch_end=90).kernel(0, 300, 400)  # no launch in the trace: dropped
              .kernel(0, 1700, 1800, launch_end=1600)  # launch call starts at 1100, in the last step: dropped
              .copy(0, 500, 600, launch_end=450).tables())
    kept = hta_scope((tables["kernels"], tables["memcpy"]), tables["api_calls"], tables["ranges"])
    assert kept.select("start_ns", "kind").sort("start_ns").rows() == [(100, "compute"), (500, "memory")]
    tables["ranges"] = tables["ranges"].clear()  # without steps everything counts
    assert hta_scope((tables["kernels"], tables["memcpy"]), tables["api_calls"], tables["ranges"]).height == 4


def test_a_run_stored_before_the_step_column_still_breaks_down(tmp_path) -> None:
    from dashboard.analysis.breakdown import gpu_time_breakdown
    from dashboard.analysis.insights import run_insights
    from dashboard.store import RunStore

    store = RunStore(tmp_path)
    tables = TraceBuilder().kernel(0, 0, 100, launch_end=-10).kernel(0, 150, 250, launch_end=140).tables()
    run = store.open(store.write("old", tables))
    for table in ("kernels", "memcpy"):  # as written before `step` existed
        path = run.info.path / f"{table}.parquet"
        if path.exists():
            pl.read_parquet(path).drop("step").write_parquet(path)
    assert gpu_time_breakdown(run).select("span_ns", "idle_ns", "compute_ns").rows() == [(250, 50, 200)]
    assert run_insights(run).by_step.get_column("step").to_list() == [None]
