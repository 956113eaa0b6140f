"""Launch flows and one event's details: which call launched which kernel, the op around it, its stack."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis.timeline import prepare_timeline
from dashboard.analysis.timeline_details import EventRef, event_details, event_ref, find_event
from dashboard.analysis.timeline_flows import event_links, launch_links, launch_pairs, window_flows

T0 = 1_000_000


def _run() -> dict[str, pl.DataFrame]:
    """One thread: step > aten::linear > aten::addmm launching two kernels, aten::relu launching one;
    a call with correlation 0 (launched nothing) and a memcpy with its own call; Python frames."""
    kernels = schema.conform("kernels", pl.DataFrame({
        "rank": [0, 0, 0], "device": [0, 0, 0], "stream": [7, 7, 7], "correlation": [11, 12, 13],
        "name": ["gemm_a", "gemm_b", "relu_k"], "start_ns": [T0 + 500, T0 + 900, T0 + 1_400],
        "end_ns": [T0 + 800, T0 + 1_300, T0 + 1_500], "grid_x": [64, 64, 8], "block_x": [128, 128, 256],
        "registers": [96, 96, 16], "op": ["aten::addmm", "aten::addmm", "aten::relu"]}))
    memcpy = schema.conform("memcpy", pl.DataFrame({
        "rank": [0], "device": [0], "stream": [7], "correlation": [14], "kind": ["HtoD"], "bytes": [4096],
        "start_ns": [T0 + 1_600], "end_ns": [T0 + 1_700]}))
    ranges = schema.conform("ranges", pl.DataFrame({
        "rank": [0, 0, 0, 0], "thread": [3, 3, 3, 3],
        "name": ["ProfilerStep#1", "aten::linear", "aten::addmm", "aten::relu"],
        "category": ["profiler_step", "cpu_op", "cpu_op", "cpu_op"],
        "start_ns": [T0, T0 + 100, T0 + 150, T0 + 1_000], "end_ns": [T0 + 2_000, T0 + 900, T0 + 400, T0 + 1_200],
        "depth": [0, 1, 2, 1]}))
    api_calls = schema.conform("api_calls", pl.DataFrame({
        "rank": [0] * 5, "thread": [3] * 5, "name": ["cudaLaunchKernel"] * 3 + ["cudaEventRecord", "cudaMemcpyAsync"],
        "category": ["cuda_runtime"] * 5, "correlation": [11, 12, 13, 0, 14],
        "start_ns": [T0 + 200, T0 + 300, T0 + 1_050, T0 + 1_100, T0 + 1_300],
        "end_ns": [T0 + 210, T0 + 310, T0 + 1_060, T0 + 1_110, T0 + 1_350]}))
    stack = schema.conform("stack", pl.DataFrame({
        "rank": [0, 0], "thread": [3, 3], "function": ["train.py(9): main", "model.py(4): forward"],
        "depth": [0, 1], "start_ns": [T0, T0 + 100], "end_ns": [T0 + 2_000, T0 + 900]}))
    return {"kernels": kernels, "memcpy": memcpy, "ranges": ranges, "stack": stack, "api_calls": api_calls}


@pytest.fixture(scope="module")
def data():
    return prepare_timeline(**_run())


def _row(data, kind: str, start: int) -> int:
    rows = data.events.with_row_index("row").filter((pl.col("kind") == kind) & (pl.col("start_ns") == start))
    return int(rows.get_column("row")[0])


def test_launch_pairs_join_on_rank_and_correlation_and_skip_zero_and_null() -> None:
    callers = pl.DataFrame({"rank": [0, 0, 1, 0], "correlation": [5, 0, 5, None], "call": ["a", "b", "c", "d"]})
    targets = pl.DataFrame({"rank": [0, 1, 0], "correlation": [5, 5, 0], "kernel": ["k0", "k1", "zero"]})
    pairs = launch_pairs(callers, targets).sort("call")
    assert pairs.select("call", "kernel").rows() == [("a", "k0"), ("c", "k1")]


def test_every_launch_is_paired_and_counted_per_window(data) -> None:
    links = launch_links(data)
    assert len(links.api_rows) == 4  # three kernels and a copy; the correlation-0 call launched nothing
    every = data.lanes.get_column("lane").to_numpy()
    flows, count = window_flows(data, every, T0, T0 + 1_000)
    assert count == 2 and flows.get_column("to_ns").to_list() == [T0 + 500, T0 + 900]
    assert set(flows.get_column("kind").to_list()) == {"window"}
    _, limited = window_flows(data, every, T0, T0 + 10_000, limit=1)
    assert limited == 4
    # Lanes not shown (the API lane) take their arrows with them.
    gpu_only = data.lanes.filter(pl.col("group") == "gpu").get_column("lane").to_numpy()
    assert window_flows(data, gpu_only, T0, T0 + 10_000)[1] == 0


def test_a_kernel_links_to_its_call_and_the_innermost_op_around_it(data) -> None:
    links = event_links(data, _row(data, "kernel", T0 + 900))  # gemm_b, launched at T0 + 300 inside aten::addmm
    assert links.launch_row == _row(data, "api", T0 + 300)
    assert links.op_row == _row(data, "range", T0 + 150)
    assert links.flows.get_column("kind").to_list() == ["launch", "op"]
    assert links.flows.get_column("from_ns").to_list() == [T0 + 300, T0 + 300]  # the op's arrow leaves at the call


def test_an_op_lists_every_kernel_launched_inside_it_with_their_gpu_time(data) -> None:
    ref = event_ref(data, _row(data, "range", T0 + 100))  # aten::linear: addmm's two launches are inside it
    details = event_details(data, ref)
    assert details is not None and details.name == "aten::linear"
    assert details.launched.rows() == [("gemm_b", "kernel", 1, 400), ("gemm_a", "kernel", 1, 300)]
    assert [op["name"] for op in details.op_chain] == ["ProfilerStep#1", "aten::linear"]
    step = event_details(data, event_ref(data, _row(data, "step", T0)))
    assert step is not None and step.launched.get_column("launches").sum() == 4  # the copy too


def test_a_kernels_details_hold_its_row_launch_op_chain_and_stack(data) -> None:
    ref = event_ref(data, _row(data, "kernel", T0 + 500))
    assert ref == EventRef("kernel", 0, 7, 0, T0 + 500)
    assert EventRef.parse(ref.text()) == ref and find_event(data, ref) == _row(data, "kernel", T0 + 500)
    details = event_details(data, ref)
    assert details is not None
    record = details.record
    assert record["grid_x"] == 64 and record["registers"] == 96 and record["op"] == "aten::addmm"
    assert details.launch is not None and details.launch["start_ns"] == T0 + 200
    assert [op["name"] for op in details.op_chain] == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    assert details.stack == ["train.py(9): main", "model.py(4): forward"]
    copy = event_details(data, event_ref(data, _row(data, "memcpy", T0 + 1_600)))
    assert copy is not None and copy.record["bytes"] == 4096 and copy.launch["name"] == "cudaMemcpyAsync"


def test_refs_that_name_nothing_find_nothing(data) -> None:
    assert [EventRef.parse(text) for text in ("", "kernel.0.7.0", "bogus.0.7.0.1", "kernel.x.7.0.1",
                                              "kernel.-1.7.0.1")] == [None] * 5
    assert event_details(data, EventRef("kernel", 0, 7, 0, T0 + 501)) is None
    assert event_details(data, EventRef("kernel", 3, 7, 0, T0 + 500)) is None
    assert find_event(data, EventRef("range", 0, 3, 2, T0 + 150)) == _row(data, "range", T0 + 150)
    assert find_event(data, EventRef("range", 0, 3, 1, T0 + 150)) is None  # the right start, the wrong depth
