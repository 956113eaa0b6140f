"""The timeline's level-of-detail maths on small frames with answers worked out by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.timeline import (
    MARK_BUDGET,
    MIN_WINDOW_NS,
    OVERLAY_GROUP,
    choose_exact,
    clamp_window,
    crowded,
    exact_limit,
    lane_cell_arrays,
    prepare_timeline,
    timeline_view,
)
from dashboard.analysis.timeline_index import (
    IntervalIndex,
    bucket_edges,
    dominant_per_bucket,
    max_depth_per_bucket,
    weighted_coverage,
)
from dashboard.analysis.timeline_lanes import display_name, lane_events, lane_table, pass_bands
from dashboard.analysis.timeline_series import copy_series


def index_of(intervals: list[tuple[int, int]], codes: list[int] | None = None) -> IntervalIndex:
    starts = np.array([s for s, _ in intervals], dtype=np.int64)
    ends = np.array([e for _, e in intervals], dtype=np.int64)
    codes_array = np.array(codes if codes is not None else [0] * len(intervals), dtype=np.int64)
    return IntervalIndex.build(starts, ends, codes_array, np.arange(len(intervals)))


def canonical(table: str, **columns: list) -> pl.DataFrame:
    return schema.conform(table, pl.DataFrame(columns, strict=False))


# ---- bucket edges and busy time ---------------------------------------------------------------------------------

def test_bucket_edges_split_the_window_evenly_in_integers() -> None:
    assert bucket_edges(100, 160, 3).tolist() == [100, 120, 140, 160]
    assert bucket_edges(0, 10, 3).tolist() == [0, 3, 6, 10]
    with pytest.raises(ValueError):
        bucket_edges(5, 5, 3)


def test_busy_time_per_bucket_counts_each_interval_where_it_lies() -> None:
    # [0,10) and [15,25) and [30,60): the last spans two buckets, the second crosses an edge.
    index = index_of([(30, 60), (0, 10), (15, 25)])  # unsorted input is sorted by start
    edges = np.array([0, 20, 40, 60])
    assert index.busy_ns(edges).tolist() == [10 + 5, 5 + 10, 20]
    # A window that starts inside intervals only counts their part inside it.
    assert index.busy_ns(np.array([5, 20, 45])).tolist() == [5 + 5, 5 + 15]


def test_busy_time_of_overlapping_intervals_adds_up() -> None:
    index = index_of([(0, 10), (5, 15)])
    assert index.busy_ns(np.array([0, 10, 20])).tolist() == [10 + 5, 5]


def test_busy_time_is_exact_on_epoch_timestamps() -> None:
    epoch = 1_761_000_000_123_456_789  # real traces use epoch nanoseconds
    index = index_of([(epoch + 1, epoch + 4), (epoch + 6, epoch + 9)])
    assert index.busy_ns(np.array([epoch, epoch + 5, epoch + 10])).tolist() == [3, 3]


def test_window_count_and_clipping() -> None:
    index = index_of([(0, 10), (15, 25), (30, 60), (70, 70)])
    assert index.count_overlapping(20, 35) == 2  # [15,25) reaches in, [30,60) starts inside
    assert index.count_overlapping(10, 15) == 0  # touching ends do not overlap
    assert index.count_overlapping(0, 100) == 4
    assert sorted(index.overlapping(20, 35).tolist()) == [1, 2]
    assert index.overlapping(70, 71).tolist() == [3]  # a zero-length event at the window start is inside


def test_starts_per_bucket() -> None:
    index = index_of([(1, 2), (3, 4), (12, 13), (25, 40)])
    assert index.starts_per_bucket(np.array([0, 10, 20, 30])).tolist() == [2, 1, 1]


# ---- dominant name ----------------------------------------------------------------------------------------------

def test_dominant_name_is_the_one_holding_most_time_including_carry_over() -> None:
    # Bucket [0,10): code 1 holds 2 ns, code 2 holds 4; bucket [10,20): code 2 runs on from bucket 0 for 6 ns,
    # code 3 holds 3 ns; bucket [20,30): only code 3's long interval carried over from bucket 1.
    index = index_of([(0, 2), (4, 16), (16, 30)], codes=[1, 2, 3])
    edges = np.array([0, 10, 20, 30])
    pieces = index.bucket_contributions(edges)
    best, weight = dominant_per_bucket(*pieces, 3, len(index.code_table))
    assert index.code_table[best].tolist() == [2, 2, 3]
    assert weight.tolist() == [6, 6, 10]


def test_dense_and_sparse_paths_of_the_dominant_table_agree() -> None:
    rng = np.random.default_rng(1)
    buckets = rng.integers(0, 50, 2_000)
    codes = rng.integers(0, 30, 2_000)
    weights = rng.random(2_000)
    dense = dominant_per_bucket(buckets, codes, weights, 50, 30)
    import dashboard.analysis.timeline_index as module
    limit, module._DENSE_TABLE_LIMIT = module._DENSE_TABLE_LIMIT, 0
    try:
        sparse = dominant_per_bucket(buckets, codes, weights, 50, 30)
    finally:
        module._DENSE_TABLE_LIMIT = limit
    assert dense[0].tolist() == sparse[0].tolist()
    assert np.allclose(dense[1], sparse[1])


def test_sampled_dominant_name_matches_exact_one_on_a_dense_stream() -> None:
    # 400 back-to-back kernels in 4 buckets: per bucket, kernel A takes 3/4 of the time, B 1/4.
    starts, codes = [], []
    time = 0
    for i in range(400):
        duration = 30 if i % 2 == 0 else 10
        starts.append((time, time + duration))
        codes.append(0 if i % 2 == 0 else 1)
        time += duration
    index = index_of(starts, codes)
    edges = bucket_edges(0, time, 4)
    exact = dominant_per_bucket(*index.bucket_contributions(edges), 4, 2)[0]
    sampled = dominant_per_bucket(*index.sampled_contributions(edges, 16), 4, 2)[0]
    assert exact.tolist() == sampled.tolist() == [0, 0, 0, 0]


def test_lane_cell_arrays_report_busy_fraction_events_and_selection() -> None:
    index = index_of([(0, 5), (10, 20), (25, 30)], codes=[7, 8, 7])
    cells = pl.DataFrame(lane_cell_arrays(index, np.array([0, 10, 20, 40]), lane=3,
                                          selected=[index.subset(np.array([0, 2]))]))
    assert cells.get_column("bucket").to_list() == [0, 1, 2]
    assert cells.get_column("busy").to_list() == [0.5, 1.0, 0.25]
    assert cells.get_column("events").to_list() == [1, 1, 1]
    assert cells.get_column("code").to_list() == [7, 8, 7]
    assert cells.get_column("selected_busy").to_list() == [0.5, 0.0, 0.25]
    assert cells.get_column("selected_code").to_list() == [7, -1, 7]


# ---- copies and stacks ------------------------------------------------------------------------------------------

def test_weighted_coverage_spreads_a_copy_over_its_duration() -> None:
    starts, ends = np.array([25]), np.array([75])
    edges = np.array([0, 50, 100])
    moved = weighted_coverage(starts, ends, np.array([100 / 50]), edges)  # 100 bytes over 50 ns
    assert moved.tolist() == [50.0, 50.0]
    in_flight = weighted_coverage(starts, ends, np.array([100.0]), edges) / np.diff(edges)
    assert in_flight.tolist() == [50.0, 50.0]  # 100 bytes in flight half of each bucket


def test_copy_series_bandwidth_and_bytes_in_flight() -> None:
    copies = pl.DataFrame({"kind": ["HtoD", "HtoD", "DtoH"], "start_ns": [0, 100, 0], "end_ns": [100, 150, 200],
                           "bytes": [1000, 500, 400]})
    series = copy_series(copies, np.array([0, 100, 200]))
    htod = series.filter(pl.col("series") == "memcpy HtoD")
    # 1000 B in the first 100 ns = 10 B/ns = 1e10 B/s; 500 B in the second 100 ns = 5e9 B/s.
    assert htod.get_column("bandwidth").to_list() == pytest.approx([1e10, 5e9])
    # In flight: 1000 B the whole first bucket; 500 B half of the second.
    assert htod.get_column("in_flight").to_list() == pytest.approx([1000.0, 250.0])
    dtoh = series.filter(pl.col("series") == "memcpy DtoH")
    assert dtoh.get_column("bandwidth").to_list() == pytest.approx([2e9, 2e9])


def test_stack_depth_is_the_deepest_level_reached_in_each_bucket() -> None:
    frames = [(0, 100), (10, 20), (12, 15), (60, 70)]
    depths = [0, 1, 2, 1]
    index = index_of(frames)
    depth = max_depth_per_bucket(index, np.array(depths)[index.rows], np.array([0, 50, 100]))
    assert depth.tolist() == [3, 2]
    # A bucket that opens while three frames are running, with nothing starting inside it.
    depth = max_depth_per_bucket(index, np.array(depths)[index.rows], np.array([0, 13, 50, 100, 150]))
    assert depth.tolist() == [3, 3, 2, 0]


# ---- lanes ------------------------------------------------------------------------------------------------------

def _small_run() -> dict[str, pl.DataFrame]:
    kernels = canonical(
        "kernels", rank=[0, 0, 0, 0, 1], device=[0, 0, 0, 0, 1], stream=[7, 7, 7, 9, 7],
        name=["gemm", "add", "gemm", "nccl", "gemm"], start_ns=[100, 200, 300, 150, 120],
        end_ns=[180, 250, 390, 400, 200], flops=[2e6, None, 2e6, None, 2e6],
        **{"pass": ["forward", "forward", "backward", "none", "forward"]})
    memcpy = canonical("memcpy", rank=[0], device=[0], stream=[7], kind=["HtoD"], bytes=[4096],
                       start_ns=[40], end_ns=[90])
    ranges = canonical(
        "ranges", rank=[0, 0, 0, 0], device=[None, None, None, 0], thread=[11, 11, 11, 7],
        name=["ProfilerStep#1", "aten::mm", "forward", "block.0"],
        category=["profiler_step", "cpu_op", "python_function", "module"],
        start_ns=[0, 10, 5, 100], end_ns=[500, 60, 400, 250], depth=[0, 1, 0, 0])
    stack = canonical("stack", rank=[0, 0, 0], thread=[11, 11, 11], function=["main", "step", "mm"],
                      depth=[0, 1, 2], start_ns=[0, 10, 20], end_ns=[500, 300, 40])
    return {"kernels": kernels, "memcpy": memcpy, "ranges": ranges, "stack": stack}


def test_lanes_per_stream_thread_depth_and_pass() -> None:
    run = _small_run()
    lanes = lane_table(lane_events(run["kernels"], run["memcpy"], run["ranges"]))
    assert lanes.get_column("label").to_list() == [
        "r0 · passes", "r0 · GPU0 s7", "r0 · GPU0 s7 ranges", "r0 · GPU0 s9", "r0 · CPU 11", "  depth 1",
        "r1 · passes", "r1 · GPU1 s7",
    ]
    assert lanes.get_column("lane").to_list() == list(range(8))


def test_python_function_ranges_are_not_lanes() -> None:
    run = _small_run()
    events = lane_events(run["kernels"], run["memcpy"], run["ranges"])
    assert "forward" not in events.filter(pl.col("kind") == "range").get_column("name").to_list()
    copies = events.filter(pl.col("kind") == "memcpy")
    assert copies.get_column("name").to_list() == ["memcpy HtoD"]
    assert copies.get_column("bytes").to_list() == [4096]


def test_pass_bands_are_the_union_of_each_passs_kernels_outside_steps() -> None:
    kernels = canonical("kernels", rank=[0, 0, 0, 0, 1], start_ns=[0, 10, 20, 30, 5], end_ns=[5, 15, 25, 35, 8],
                        **{"pass": ["forward", "forward", "backward", "forward", "backward"]})
    bands = pass_bands(schema.empty("ranges"), kernels)
    assert bands.select("rank", "step", "pass", "start_ns", "end_ns", "kernels").rows() == [
        (0, None, "forward", 0, 5, 1), (0, None, "forward", 10, 15, 1), (0, None, "backward", 20, 25, 1),
        (0, None, "forward", 30, 35, 1), (1, None, "backward", 5, 8, 1)]


def test_pass_bands_are_the_union_of_a_passs_kernels_per_step_never_one_envelope() -> None:
    # Step 5: forward, zero_grad (optimizer), backward with a forward kernel on a side stream, step;
    # step 6 likewise on rank 0; rank 1 has step 5 only. Unattributed kernels make no band.
    kernels = canonical(
        "kernels", rank=[0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0],
        step=[5, 5, 5, 5, 5, 6, 6, 6, 5, 5, None],
        start_ns=[0, 10, 20, 25, 40, 100, 110, 120, 3, 30, 200],
        end_ns=[8, 12, 30, 27, 50, 105, 115, 130, 9, 35, 210],
        **{"pass": ["forward", "optimizer", "backward", "forward", "optimizer", "forward", "backward", "optimizer",
                    "forward", "backward", "unattributed"]})
    bands = pass_bands(schema.empty("ranges"), kernels)
    # The optimizer of step 5 is two bars (zero_grad, then the step), not one painted over the backward.
    assert bands.select("rank", "step", "pass", "start_ns", "end_ns").rows() == [
        (0, 5, "forward", 0, 8), (0, 5, "optimizer", 10, 12), (0, 5, "backward", 20, 30), (0, 5, "forward", 25, 27),
        (0, 5, "optimizer", 40, 50),
        (0, 6, "forward", 100, 105), (0, 6, "backward", 110, 115), (0, 6, "optimizer", 120, 130),
        (1, 5, "forward", 3, 9), (1, 5, "backward", 30, 35),
    ]
    events = lane_events(kernels, schema.empty("memcpy"), schema.empty("ranges")).filter(pl.col("kind") == "pass")
    assert events.get_column("category").to_list()[:2] == ["step 5", "step 5"]


def test_overlapping_kernels_of_a_pass_make_one_bar_and_other_keeps_its_annotation() -> None:
    kernels = canonical("kernels", rank=[0, 0, 0, 0], step=[1, 1, 1, 1], start_ns=[0, 5, 30, 40],
                        end_ns=[10, 20, 35, 45], **{"pass": ["forward", "forward", "other", "other"],
                                                    "pass_annotation": [None, None, "sparse_data_dist", "load_batch"]})
    bands = pass_bands(schema.empty("ranges"), kernels)
    assert bands.select("pass", "pass_annotation", "start_ns", "end_ns", "kernels").rows() == [
        ("forward", None, 0, 20, 2), ("other", "sparse_data_dist", 30, 35, 1), ("other", "load_batch", 40, 45, 1)]


def test_pass_bands_of_runs_stored_without_a_step_column() -> None:
    kernels = canonical("kernels", rank=[0, 0], start_ns=[0, 10], end_ns=[5, 15],
                        **{"pass": ["forward", "backward"]}).drop("step")
    assert pass_bands(schema.empty("ranges"), kernels).get_column("pass").to_list() == ["forward", "backward"]


def test_pass_bands_fall_back_to_ranges() -> None:
    ranges = canonical("ranges", rank=[0, 0], start_ns=[0, 50], end_ns=[40, 90],
                       **{"pass": ["forward", "backward"]})
    assert pass_bands(ranges, schema.empty("kernels")).get_column("pass").to_list() == ["forward", "backward"]


def test_display_names_are_short_and_keep_what_tells_kernels_apart() -> None:
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")
    assert display_name(name) == "vectorized_elementwise_kernel‹CUDAFunctor_add›"
    assert display_name("void flash::flash_fwd_kernel<Traits<128>, true>(flash::Params)") == "flash_fwd_kernel"
    assert display_name("aten::addmm", "range") == "aten::addmm"
    assert "…" in display_name("x" * 100) and len(display_name("x" * 100)) == 72


# ---- views ------------------------------------------------------------------------------------------------------

def test_exact_threshold_is_shared_by_rows_and_bounded_by_budget() -> None:
    # The emptiest rows go exact first, while their events together fit the budget.
    assert exact_limit([500, 501, 0, 3], buckets=1000, budget=1500) == 501
    assert exact_limit([500, 501, 0, 3], buckets=1000, budget=1003) == 500
    assert exact_limit([500, 501, 0, 3], buckets=1000, budget=502) == 3
    # Rows with the same count are alike: both or neither.
    assert exact_limit([400, 400], buckets=1000, budget=799) == 0
    # Never more events on a row than buckets: beyond that a bucket summary shows as much.
    assert exact_limit([1200], buckets=1000, budget=2000) == 0
    counts = {"a": 500, "b": 501, "c": 0, "d": 3}
    assert choose_exact(counts, buckets=1000, budget=1003) == {"a", "d"}
    assert choose_exact(counts, buckets=1000, budget=1004) == {"a", "b", "d"}


def test_clamp_window() -> None:
    data = prepare_timeline(**_small_run())
    assert clamp_window(data, None) == (0, 500)
    assert clamp_window(data, (-100, 150)) == (0, 150)
    assert clamp_window(data, (900, 1000)) == (0, 500)  # outside the run: the whole run
    start, end = clamp_window(data, (200, 201))
    assert end - start == MIN_WINDOW_NS and start <= 200 <= end


def test_small_window_lists_exact_events_with_rates() -> None:
    data = prepare_timeline(**_small_run())
    view = timeline_view(data, (150, 260))
    assert view.cells.is_empty()
    overlay = view.lanes.filter(pl.col("group") == OVERLAY_GROUP).get_column("lane").to_list()
    kernels = view.events.filter((pl.col("kind") == "kernel") & ~pl.col("lane").is_in(overlay)).sort("start_ns")
    assert kernels.select("name", "start_ns").rows() == [("gemm", 100), ("gemm", 120), ("nccl", 150), ("add", 200)]
    # Under rank 0's stack panel: rank 0's kernels again, on one lane.
    under = view.events.filter(pl.col("lane").is_in(overlay)).sort("start_ns")
    assert under.get_column("start_ns").to_list() == [100, 150, 200]
    gemm = kernels.filter(pl.col("name") == "gemm").row(0, named=True)
    assert gemm["flops"] == 2e6 and gemm["key"] == kernel_key("gemm")
    # The python_function range feeds nothing but the stack panel; the stack table wins over it.
    assert view.stack_frames.get_column("function").sort().to_list() == ["main", "step"]


def test_a_lane_whose_few_events_crowd_into_a_few_buckets_is_summarised() -> None:
    # More than three starts per occupied bucket: bars narrower than a bucket, drawn over one another.
    assert crowded(np.array([0, 4, 0, 0])) and not crowded(np.array([0, 3, 0, 3]))
    assert not crowded(np.array([1, 1, 1, 1])) and not crowded(np.zeros(4, dtype=np.int64))
    # Two CPU threads of 60 ops each, far under the exact budget: one's ops packed into the first
    # hundredth of the run (a step's slivers at whole-run zoom), the other's spread over all of it.
    n = 60
    packed = np.arange(n, dtype=np.int64) * 1_000
    spread = np.arange(n, dtype=np.int64) * 1_000_000
    ranges = canonical(
        "ranges", rank=[0] * 2 * n, device=[None] * 2 * n, thread=[1] * n + [2] * n,
        name=["aten::add"] * 2 * n, category=["cpu_op"] * 2 * n,
        start_ns=[*packed.tolist(), *spread.tolist()], end_ns=[*(packed + 500).tolist(), *(spread + 500_000).tolist()],
        depth=[0] * 2 * n)
    data = prepare_timeline(schema.empty("kernels"), schema.empty("memcpy"), ranges, schema.empty("stack"))
    lanes = dict(data.lanes.select("label", "lane").iter_rows())
    view = timeline_view(data)
    exact = set(view.events.get_column("lane").to_list())
    summarised = set(view.cells.get_column("lane").to_list())
    assert lanes["CPU 2"] in exact and lanes["CPU 2"] not in summarised
    assert lanes["CPU 1"] in summarised and lanes["CPU 1"] not in exact
    # Zoomed onto the packed ops they spread over the buckets and are drawn one by one.
    zoomed = timeline_view(data, (0, int(packed[-1]) + 500))
    assert lanes["CPU 1"] in set(zoomed.events.get_column("lane").to_list())


def test_full_view_of_a_dense_run_is_aggregated_within_the_mark_budget() -> None:
    n = 60_000
    starts = np.arange(n, dtype=np.int64) * 100
    names = np.where(np.arange(n) % 3 == 0, "long_gemm", "small_add")
    durations = np.where(names == "long_gemm", 80, 10)
    kernels = canonical("kernels", rank=[0] * n, device=[0] * n, stream=[7] * n, name=names.tolist(),
                        start_ns=starts.tolist(), end_ns=(starts + durations).tolist())
    data = prepare_timeline(kernels, schema.empty("memcpy"), schema.empty("ranges"), schema.empty("stack"))
    view = timeline_view(data)
    assert view.events.is_empty() and view.cells.height == view.buckets
    assert view.marks <= MARK_BUDGET
    # Every bucket holds 1/3 long kernels (80 ns) and 2/3 small ones (10 ns): busy 100 / 300 per 300 ns.
    assert view.cells.get_column("busy").mean() == pytest.approx(100 / 300, rel=0.01)
    # 60 events per bucket: the dominant name is estimated by sampling (32 instants per bucket); the kernel
    # holding 80 % of the busy time wins nearly everywhere even with this strictly periodic pattern.
    assert (view.cells.get_column("name") == "long_gemm").mean() >= 0.98
    # Zoomed in to 40 kernels: exact.
    deep = timeline_view(data, (1_000_000, 1_004_000))
    assert deep.cells.is_empty() and deep.events.height == 40


def test_selection_marks_selected_kernels_in_cells_and_events() -> None:
    n = 30_000
    starts = np.arange(n, dtype=np.int64) * 100
    names = np.where(np.arange(n) % 10 == 0, "rare", "common")
    kernels = canonical("kernels", rank=[0] * n, device=[0] * n, stream=[1] * n, name=names.tolist(),
                        start_ns=starts.tolist(), end_ns=(starts + 50).tolist())
    data = prepare_timeline(kernels, schema.empty("memcpy"), schema.empty("ranges"), schema.empty("stack"))
    view = timeline_view(data, selected_keys=[kernel_key("rare")])
    assert (view.cells.get_column("selected_name") == "rare").all()
    assert view.cells.get_column("selected_busy").mean() == pytest.approx(5 / 100, rel=0.02)
    assert (view.cells.get_column("name") == "common").all()
    exact = timeline_view(data, (0, 2_000), selected_keys=[kernel_key("rare")])
    assert exact.events.filter(pl.col("selected")).get_column("name").unique().to_list() == ["rare"]


def test_rank_filter_keeps_only_that_ranks_lanes_and_copies() -> None:
    data = prepare_timeline(**_small_run())
    view = timeline_view(data, rank=1)
    assert set(view.lanes.get_column("rank").to_list()) == {1}
    assert view.copies.is_empty() and view.stacks.is_empty()


def test_every_page_measures_windows_from_the_timelines_first_instant(tmp_path) -> None:
    from dashboard.store import RunStore
    from dashboard.views.run_views import run_origin_ns

    tables = _small_run()
    first_kernel = int(tables["kernels"].get_column("start_ns").min())
    # A stack frame opening before anything else moves the run's first instant.
    tables["stack"] = canonical("stack", rank=[0], thread=[11], function=["main"], depth=[0],
                                start_ns=[first_kernel - 5_000], end_ns=[first_kernel + 10])
    store = RunStore(tmp_path)
    run = store.open(store.write("origin", tables))
    timeline = prepare_timeline(run.frame("kernels"), run.frame("memcpy"), run.frame("ranges"), run.frame("stack"))
    assert run_origin_ns(run) == timeline.start_ns == first_kernel - 5_000 < first_kernel
    # So does an API call (drawn on its thread's CUDA API lane), on every page alike.
    tables["api_calls"] = canonical("api_calls", rank=[0], thread=[11], name=["cudaMalloc"], correlation=[0],
                                    start_ns=[first_kernel - 9_000], end_ns=[first_kernel - 8_000])
    run = store.open(store.write("origin-api", tables))
    timeline = prepare_timeline(*(run.frame(t) for t in ("kernels", "memcpy", "ranges", "stack", "api_calls")))
    assert run_origin_ns(run) == timeline.start_ns == first_kernel - 9_000
