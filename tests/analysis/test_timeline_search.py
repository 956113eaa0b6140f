"""Find on the timeline, and the lanes it searches: CPU flames, API lanes, steps, pinned and folded tracks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis.timeline import prepare_timeline, shown_lanes, timeline_view
from dashboard.analysis.timeline_index import bucket_edges
from dashboard.analysis.timeline_lanes import MAX_SUBLANES, api_class
from dashboard.analysis.timeline_search import MAX_PATTERN, search
from tests.support.kernel_tables import CPU_THREAD, KERNEL_NAMES, kernel_tables


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    return kernel_tables(kernels_per_stream=200)


@pytest.fixture(scope="module")
def data(tables: dict[str, pl.DataFrame]):
    return prepare_timeline(tables["kernels"], tables["memcpy"], tables["ranges"], schema.empty("stack"),
                            tables["api_calls"])


def test_api_calls_are_classed_by_what_the_cpu_does_in_them() -> None:
    names = ["cudaStreamSynchronize", "cudaDeviceSynchronize", "cuCtxSynchronize", "cudaMemcpy", "cudaMemcpy2D",
             "cuMemcpyDtoH", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaFree", "cudaLaunchKernel", "cuLaunchKernel",
             "cudaMalloc", "cudaEventRecord", "cudaStreamWaitEvent"]
    classes = pl.DataFrame({"name": names}).select(api_class(pl.col("name"))).to_series().to_list()
    assert dict(zip(names, classes, strict=True)) == {
        "cudaStreamSynchronize": "sync", "cudaDeviceSynchronize": "sync", "cuCtxSynchronize": "sync",
        "cudaMemcpy": "sync", "cudaMemcpy2D": "sync", "cuMemcpyDtoH": "sync", "cudaMemcpyAsync": "memory",
        "cudaMemsetAsync": "memory", "cudaFree": "sync", "cudaLaunchKernel": "launch", "cuLaunchKernel": "launch",
        "cudaMalloc": "memory", "cudaEventRecord": "other", "cudaStreamWaitEvent": "other"}


def test_each_thread_has_its_flame_then_its_api_lane_and_steps_are_steps(data) -> None:
    rank0 = data.lanes.filter((pl.col("rank") == 0) & (pl.col("group") != "stack_kernels"))
    assert rank0.get_column("label").to_list() == [
        "r0 · passes", "r0 · GPU0 s7", "r0 · GPU0 s7 ranges", "r0 · GPU0 s13", f"r0 · CPU {CPU_THREAD}",
        "  depth 1", f"r0 · CUDA API {CPU_THREAD}"]
    assert rank0.get_column("track_id").to_list() == [
        "passes-0", "gpu-0-0-7", "gpuranges-0-0-7", "gpu-0-0-13", f"cpu-0-{CPU_THREAD}", f"cpu-0-{CPU_THREAD}",
        f"api-0-{CPU_THREAD}"]
    kinds = dict(data.names.select("name", "kind").iter_rows())
    assert kinds["ProfilerStep#3"] == "step" and kinds["aten::linear"] == "range"
    assert kinds["cudaLaunchKernel"] == "api" and kinds[KERNEL_NAMES[0]] == "kernel"
    klass = dict(data.names.select("name", "klass").iter_rows())
    assert klass["cudaLaunchKernel"] == "launch" and klass[KERNEL_NAMES[1]] == "compute"


def test_deep_nesting_shares_the_last_depth_row() -> None:
    depth = list(range(MAX_SUBLANES + 3))
    ranges = schema.conform("ranges", pl.DataFrame({
        "rank": [0] * len(depth), "thread": [5] * len(depth), "name": [f"op{d}" for d in depth],
        "category": ["cpu_op"] * len(depth), "start_ns": [d for d in depth], "end_ns": [100 - d for d in depth],
        "depth": depth}))
    data = prepare_timeline(schema.empty("kernels"), schema.empty("memcpy"), ranges, schema.empty("stack"))
    labels = data.lanes.get_column("label").to_list()
    assert len(labels) == MAX_SUBLANES and labels[-1] == f"  depth {MAX_SUBLANES - 1}+"
    deepest = data.events.filter(pl.col("depth") >= MAX_SUBLANES - 1).get_column("lane").unique().to_list()
    assert deepest == [MAX_SUBLANES - 1]


def test_pinned_tracks_come_first_and_a_folded_flame_keeps_one_row(data) -> None:
    cpu, api = f"cpu-0-{CPU_THREAD}", f"api-1-{CPU_THREAD + 1}"
    lanes = shown_lanes(data, None, pinned=(api, cpu), folded=(cpu,))
    labels = lanes.get_column("label").to_list()
    assert labels[:2] == [f"r1 · CUDA API {CPU_THREAD + 1}", f"r0 · CPU {CPU_THREAD} (+1 rows folded)"]
    assert "  depth 1" not in labels[:3]
    view = timeline_view(data, pinned=(api, cpu), folded=(cpu,))
    assert view.lanes.get_column("label").to_list()[:2] == labels[:2]


def test_a_substring_finds_every_occurrence_in_any_case(data, tables: dict[str, pl.DataFrame]) -> None:
    kernels = tables["kernels"]
    expected = kernels.filter(pl.col("name") == KERNEL_NAMES[1]).get_column("start_ns").sort().to_list()
    found = search(data, "SGEMM_128")
    assert found.error is None and found.names == 1 and found.count == len(expected) == 200
    assert found.starts.tolist() == expected
    # API calls, ops and steps are searched too.
    assert search(data, "cudalaunch").count == tables["api_calls"].height
    assert search(data, "profilerstep#3").count == 2  # one per rank
    assert search(data, "aten::linear").count == 1
    assert search(data, "no such thing").count == 0


def test_a_regex_matches_names_and_a_rank_narrows_the_occurrences(data, tables: dict[str, pl.DataFrame]) -> None:
    found = search(data, r"^(ampere|flash)_.*$", regex=True)
    kernels = tables["kernels"]
    assert found.names == 2
    assert found.count == kernels.filter(pl.col("name").is_in([KERNEL_NAMES[1], KERNEL_NAMES[3]])).height
    on_rank1 = search(data, r"^(ampere|flash)_.*$", regex=True, rank=1)
    assert on_rank1.count == kernels.filter(pl.col("name").is_in([KERNEL_NAMES[1], KERNEL_NAMES[3]])
                                            & (pl.col("rank") == 1)).height
    # A substring is taken literally: `.` and `(` are characters, not operators.
    assert search(data, "cutlass::Kernel<").count == kernels.filter(pl.col("name") == KERNEL_NAMES[2]).height


def test_bad_and_hostile_patterns_are_refused_or_answered_in_linear_time(data) -> None:
    assert search(data, "(", regex=True).error == "not a valid regular expression: unclosed group"
    assert "size limit" in (search(data, "(a{1000}){1000}", regex=True).error or "")
    assert search(data, "x" * (MAX_PATTERN + 1)).error == (
        f"the search is {MAX_PATTERN + 1} characters long; at most {MAX_PATTERN} are searched")
    # A pattern that backtracking engines take exponential time over: an automaton does not care.
    names = pl.DataFrame({"name": ["a" * 5_000 + "!"]})
    assert not names.select(pl.col("name").str.contains(r"(a+)+$")).item()
    assert search(data, r"(a+)+$", regex=True).error is None


def test_matches_per_bucket_and_the_first_match_from_an_instant(data) -> None:
    found = search(data, "flash")
    edges = bucket_edges(data.start_ns, data.end_ns, 50)
    per_bucket = found.per_bucket(edges)
    assert per_bucket.sum() == found.count and len(per_bucket) == 50
    middle = int(found.starts[found.count // 2])
    assert found.first_from(middle) == int(np.searchsorted(found.starts, middle))
    assert found.first_from(data.end_ns + 1) == 0  # past the last: wraps to the first
    view = timeline_view(data, (middle - 20_000, middle + 20_000), matched_codes=found.codes.tolist())
    matched = view.events.filter(pl.col("matched"))
    assert matched.height and set(matched.get_column("name").to_list()) == {KERNEL_NAMES[3]}
