"""The ranks view's tables: from stored summaries and computed from kernels alike."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dashboard.analysis import rank_steps
from dashboard.figures.ranks import clicked_cell, step_heatmap
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views import timeline as timeline_view_module
from tests.support.rank_runs import partitioned_run, rank_traces


def test_summaries_and_computed_tables_agree(tmp_path: Path) -> None:
    inputs = rank_traces(tmp_path / "ranks", 3, kernels=4500)
    store = RunStore(tmp_path / "data")
    stored = store.open(partitioned_run(store, inputs, "stored"))
    computed = store.open(ingest_paths(store, [inputs], name="computed"))
    assert stored.summary("steps") is not None and computed.summary("steps") is None
    assert rank_steps.step_matrix(stored).equals(rank_steps.step_matrix(computed))
    key = ["rank", "name"]
    assert rank_steps.kernel_totals(stored).sort(key).equals(rank_steps.kernel_totals(computed).sort(key))
    steps = rank_steps.step_matrix(computed)
    assert steps.height == 9  # 3 ranks × 3 steps of 2,000 launch units
    ranges = computed.frame("ranges").filter(pl.col("name") == "ProfilerStep#1", pl.col("rank") == 2)
    assert rank_steps.step_window(steps, 2, 1) == (ranges.item(0, "start_ns"), ranges.item(0, "end_ns"))
    assert rank_steps.step_window(steps, 7, 1) is None
    # The one step time every page reads: the slowest rank's median ProfilerStep range, and its source.
    per_rank = steps.group_by("rank").agg(pl.col("step_ns").median())
    assert rank_steps.step_time(computed) == (per_rank["step_ns"].max(), "ProfilerStep ranges")
    assert rank_steps.step_time(stored, 2) == (steps.filter(pl.col("rank") == 2)["step_ns"].median(),
                                               "ProfilerStep ranges")
    from dashboard.views.ranks import source_note

    assert source_note(computed).startswith("Step times from ProfilerStep ranges. Computed from")


def test_kernel_steps_when_no_step_ranges() -> None:
    kernels = pl.DataFrame({"rank": [0, 0, 0, 1], "name": ["a", "b", "a", "a"], "step": [0, 0, 1, 0],
                            "start_ns": [0, 50, 200, 10], "end_ns": [40, 120, 260, 30]})
    from dashboard.analysis.rank_summaries import step_times

    steps = step_times(None, kernels)
    assert steps.select("rank", "step", "step_ns").rows() == [(0, 0, 120), (0, 1, 60), (1, 0, 20)]
    assert (steps.get_column("source") == "kernels").all()


def test_slowest_ranks_and_kernels_differing_from_the_typical_rank() -> None:
    steps = pl.DataFrame({"rank": [0, 0, 1, 1, 2, 2], "step": [0, 1] * 3,
                          "step_ns": [100, 100, 100, 120, 300, 100]})
    slowest = rank_steps.slowest_ranks(steps)
    assert slowest.get_column("rank").to_list() == [2, 1, 0]
    assert slowest.get_column("vs_median_ns").to_list() == [90.0, 0.0, -10.0]  # median of 100, 110, 200
    totals = pl.DataFrame({"rank": [0, 1, 2, 0, 1, 2, 2], "name": ["gemm"] * 3 + ["add"] * 3 + ["nccl"],
                           "count": [1] * 7, "total_ns": [100, 110, 400, 10, 10, 10, 50]})
    differing = rank_steps.kernels_differing(totals, 2)
    assert differing.rows() == [("gemm", 400, 110.0, 290.0), ("nccl", 50, 0.0, 50.0), ("add", 10, 10.0, 0.0)]


def test_heatmap_cells_are_named_by_their_rank_and_step_labels() -> None:
    steps = pl.DataFrame({"rank": [0, 0, 1], "step": [3, 4, 4], "step_ns": [2_000_000, 3_000_000, 2_500_000]},
                         schema={"rank": pl.Int32, "step": pl.Int64, "step_ns": pl.Int64})
    figure = step_heatmap(steps)
    heat = figure.data[0]
    assert heat.y[1] == "1" and heat.x[0] == "3" and heat.z[1][0] is None  # rank 1 has no step 3
    assert heat.z[0][1] == 3.0 and "ms" in heat.colorbar.title.text
    assert clicked_cell({"points": [{"x": "4", "y": "1", "z": 2.5}]}) == (1, 4)
    assert clicked_cell({"points": []}) is None


def test_kernels_page_spread_and_busy_come_from_stored_summaries(tmp_path: Path, monkeypatch) -> None:
    from dashboard.views import run_views

    inputs = rank_traces(tmp_path / "ranks", 3, kernels=1500)
    store = RunStore(tmp_path / "data")
    stored = store.open(partitioned_run(store, inputs, "stored"))
    computed = store.open(ingest_paths(store, [inputs], name="computed"))
    mine = run_views.kernel_view(stored, None, None, "name")
    theirs = run_views.kernel_view(computed, None, None, "name")
    assert mine.spread is not None and theirs.spread is not None
    assert mine.spread.sort("group").equals(theirs.spread.sort("group"))
    assert run_views.gpu_busy_view(stored, None, None).equals(run_views.gpu_busy_view(computed, None, None))
    assert run_views.gpu_busy_view(stored, 1, None).get_column("rank").to_list() == [1]
    # The stored tables are what is read: no interval of the kernels is merged for the busy figure.
    monkeypatch.setattr(run_views, "gpu_activity_pieces", lambda run: (_ for _ in ()).throw(AssertionError))
    run_views.gpu_busy_view.cache_clear()
    assert run_views.gpu_busy_view(stored, None, None).height == 3
    assert run_views.stored_spread(stored, "name", (0, 1)) is None  # a window needs the kernel rows


def test_timeline_opens_on_one_rank_when_a_run_has_many() -> None:
    from dashboard.views.params import ALL_RANKS, MANY_RANKS, initial_rank

    many = tuple(range(3, 3 + MANY_RANKS + 1))
    assert initial_rank(None, many) == 3  # no rank asked for: the first
    assert initial_rank(ALL_RANKS, many) is None  # "all ranks" asked for explicitly is kept
    assert initial_rank("5", many) == 5
    assert initial_rank(None, tuple(range(MANY_RANKS))) is None  # few ranks: all, as before


def test_one_rank_timeline_reads_only_that_rank_on_the_run_clock(tmp_path: Path) -> None:
    from dashboard.analysis.timeline import prepare_timeline
    from dashboard.views.run_views import run_origin_ns

    store = RunStore(tmp_path / "data")
    run = store.open(partitioned_run(store, rank_traces(tmp_path / "ranks", 9, kernels=300)))
    whole = prepare_timeline(*(run.frame(t) for t in timeline_view_module.TIMELINE_TABLES))
    one = timeline_view_module.one_rank_timeline(run, 3)
    assert one.ranks == [3]
    assert one.start_ns == run_origin_ns(run) == whole.start_ns
    lanes_of_3 = whole.lanes.filter(pl.col("rank") == 3).get_column("lane")
    assert one.events.height == whole.events.filter(pl.col("lane").is_in(lanes_of_3.implode())).height > 0
