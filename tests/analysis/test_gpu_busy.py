"""GPU busy share per rank on intervals whose union is worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.analysis.gpu_busy import activity_intervals, busy_from_pieces, gpu_busy, merged_intervals


def intervals(rows: list[tuple[int, int | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64}, orient="row")


def test_overlaps_count_once_gaps_are_idle() -> None:
    # rank 0: [0,10) and [5,20) overlap -> [0,20); [20,25) touches it -> [0,25); [40,50) after a 15 ns gap;
    # [42,44) inside it. Span 0..50 = 50, busy 25 + 10 = 35, idle 15.
    # rank 1: a single [100,160) kernel and a copy [200,220): span 120, busy 80, idle 40.
    kernels = intervals([(0, 0, 10), (0, 5, 20), (0, 40, 50), (0, 42, 44), (1, 100, 160)])
    copies = intervals([(0, 20, 25), (1, 200, 220)])
    result = gpu_busy(activity_intervals(kernels, copies))
    assert result.to_dicts() == [
        {"rank": 0, "span_ns": 50, "busy_ns": 35, "idle_ns": 15, "busy_share": 35 / 50},
        {"rank": 1, "span_ns": 120, "busy_ns": 80, "idle_ns": 40, "busy_share": 80 / 120},
    ]


def test_merged_intervals_are_disjoint_and_sorted() -> None:
    pieces = merged_intervals(intervals([(0, 30, 35), (0, 0, 10), (0, 2, 4), (0, 9, 12), (0, 12, 13)]))
    assert pieces.rows() == [(0, 0, 13), (0, 30, 35)]


def test_window_clips_and_rows_without_times_are_left_out() -> None:
    kernels = intervals([(0, 0, 100), (0, 150, 400), (0, None, 10), (0, 500, 600)])
    result = gpu_busy(activity_intervals(kernels, window=(50, 200)))
    # Clipped: [50,100) and [150,200): span 150, busy 100.
    assert result.select("span_ns", "busy_ns", "idle_ns").row(0) == (150, 100, 50)


def test_no_intervals_no_rows_and_zero_span_has_no_share() -> None:
    assert gpu_busy(intervals([])).height == 0
    single = gpu_busy(intervals([(3, 7, 7)]))
    assert single.row(0) == (3, 0, 0, 0, None)


def _union_by_points(rows: list[tuple[int, int]]) -> int:
    covered: set[int] = set()
    for start, end in rows:
        covered.update(range(start, end))
    return len(covered)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 40)), min_size=1, max_size=30))
def test_busy_equals_the_covered_nanoseconds(pairs: list[tuple[int, int]]) -> None:
    rows = [(start, start + length) for start, length in pairs]
    result = gpu_busy(intervals([(0, s, e) for s, e in rows])).row(0, named=True)
    assert result["busy_ns"] == _union_by_points(rows)
    assert result["span_ns"] == max(e for _, e in rows) - min(s for s, _ in rows)
    assert result["idle_ns"] == result["span_ns"] - result["busy_ns"]


@pytest.mark.parametrize("rank_dtype", [pl.Int32, pl.Int64])
def test_rank_dtype_is_normalised(rank_dtype: pl.DataType) -> None:
    frame = intervals([(0, 0, 5)]).with_columns(pl.col("rank").cast(rank_dtype))
    assert gpu_busy(activity_intervals(frame)).schema["rank"] == pl.Int32


def test_ranks_never_merge_with_each_other() -> None:
    # Rank 1's interval lies inside rank 0's in time: each rank keeps its own union.
    rows = [(0, 0, 100), (1, 40, 60), (1, 70, 80), (0, 150, 160)]
    assert merged_intervals(intervals(rows)).rows() == [(0, 0, 100), (0, 150, 160), (1, 40, 60), (1, 70, 80)]
    assert gpu_busy(intervals(rows)).select("rank", "span_ns", "busy_ns").rows() == [(0, 160, 110), (1, 40, 30)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 200), st.integers(0, 40)), min_size=1, max_size=30),
       st.integers(0, 250), st.integers(1, 120))
def test_clipping_the_union_equals_the_union_of_clipped_intervals(rows: list[tuple[int, int, int]], start: int,
                                                                  width: int) -> None:
    frame = intervals([(rank, s, s + length) for rank, s, length in rows])
    window = (start, start + width)
    direct = gpu_busy(activity_intervals(frame, window=window))
    assert busy_from_pieces(merged_intervals(frame), window).equals(direct)


def test_run_view_counts_kernels_and_copies_per_rank_and_window(tmp_path) -> None:
    from dashboard import schema
    from dashboard.store import RunStore
    from dashboard.views import run_views

    kernels = schema.conform("kernels", pl.DataFrame({
        "rank": [0, 0, 1], "name": ["a", "b", "a"], "start_ns": [0, 50, 10], "end_ns": [30, 100, 20]}))
    memcpy = schema.conform("memcpy", pl.DataFrame({"rank": [0], "kind": ["HtoD"], "start_ns": [20],
                                                     "end_ns": [40], "bytes": [None]}))
    store = RunStore(tmp_path)
    run = store.open(store.write("busy", {"kernels": kernels, "memcpy": memcpy}))
    run_views.clear_caches()
    # rank 0: [0,30) + copy [20,40) + [50,100) -> busy 90 of span 100; rank 1: busy 10 of 10.
    assert run_views.gpu_busy_view(run, None, None).select("rank", "span_ns", "busy_ns").rows() == [
        (0, 100, 90), (1, 10, 10)]
    assert run_views.gpu_busy_view(run, 0, (25, 60)).select("rank", "span_ns", "busy_ns").rows() == [(0, 35, 25)]
