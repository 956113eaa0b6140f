"""Kineto collector on small hand-built traces whose every number is known."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard import schema
from dashboard.collectors.base import Collected
from dashboard.collectors.kineto import decode as kineto_decode
from dashboard.collectors.kineto.collector import COLLECTOR

PID, MAIN, AUTOGRAD = 50, 50, 51


def x(cat: str | None, name: str, ts: float, dur: float, pid: Any = PID, tid: Any = MAIN, **args: Any) -> dict:
    event: dict[str, Any] = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}
    if cat is not None:
        event["cat"] = cat
    return event


def launch(ts: float, correlation: int, kernel_ts: float, kernel_dur: float, tid: Any = MAIN, ext: int | None = None,
           name: str = "sgemm_kernel", stream: int = 7) -> list[dict]:
    """A cudaLaunchKernel and its kernel; `ext` is the GPU-side External id."""
    ext = correlation if ext is None else ext
    return [
        x("cuda_runtime", "cudaLaunchKernel", ts, 2.0, tid=tid, **{"External id": ext, "correlation": correlation}),
        x("kernel", name, kernel_ts, kernel_dur, pid=0, tid=stream,
          **{"External id": ext, "correlation": correlation, "device": 0, "stream": stream,
             "grid": [4, 2, 1], "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024}),
    ]


def write(path: Path, events: list[dict], gz: bool = False, **top: Any) -> Path:
    document = {"schemaVersion": 1, **top, "traceEvents": events}
    data = json.dumps(document).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def collect(*paths: Path) -> Collected:
    result = COLLECTOR.collect(list(paths), lambda fraction, message: None)
    for table, frame in result.tables.items():
        schema.conform(table, frame)  # only schema columns, castable types
    return result


def row(frame: pl.DataFrame, **where: Any) -> dict[str, Any]:
    matches = frame.filter(*[pl.col(k) == v for k, v in where.items()])
    assert matches.height == 1, matches
    return matches.row(0, named=True)


def test_modern_events_become_canonical_rows_with_ns_times(tmp_path: Path) -> None:
    t0 = 1712195495519689.0
    events = [
        x("user_annotation", "ProfilerStep#7", t0, 500.0, **{"External id": 1}),
        x("cpu_op", "aten::mm", t0 + 10, 100.25, **{"External id": 2, "Input Dims": [[64, 32], [32, 16]]}),
        *launch(t0 + 20, 900, t0 + 30.5, 63.813, ext=2),
        x("cuda_runtime", "cudaMemcpyAsync", t0 + 200, 3.0, **{"External id": 1, "correlation": 901}),
        x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", t0 + 210, 4.0, pid=0, tid=7,
          **{"correlation": 901, "device": 0, "stream": 7, "bytes": 4096}),
        x("gpu_memset", "Memset (Device)", t0 + 220, 1.0, pid=0, tid=7,
          **{"correlation": 902, "device": 0, "stream": 7, "bytes": 128}),
        x("cuda_driver", "cuLaunchKernel", t0 + 21, 1.0, **{"correlation": 903}),
    ]
    result = collect(write(tmp_path / "trace.json", events))
    kernel = result.tables["kernels"].row(0, named=True)
    assert kernel["start_ns"] == 1712195495519719500  # (t0 + 30.5) µs, exactly
    assert kernel["end_ns"] - kernel["start_ns"] == 63813
    assert (kernel["grid_x"], kernel["grid_y"], kernel["block_x"], kernel["registers"]) == (4, 2, 128, 32)
    assert kernel["op"] == "aten::mm" and kernel["rank"] == 0 and kernel["stream"] == 7
    assert kernel["flops"] == 2 * 64 * 16 * 32
    copies = result.tables["memcpy"].sort("start_ns")
    assert copies.select("kind", "src_kind", "dst_kind", "bytes").rows() == [
        ("HtoD", "Pinned", "Device", 4096),
        ("Memset", None, "Device", 128),
    ]
    assert copies["op"].to_list() == ["ProfilerStep#7", None]  # the memset has no runtime call
    api = result.tables["api_calls"].sort("start_ns")
    assert api.select("name", "category").rows() == [
        ("cudaLaunchKernel", "cuda_runtime"), ("cuLaunchKernel", "cuda_driver"), ("cudaMemcpyAsync", "cuda_runtime")
    ]
    ranges = result.tables["ranges"]
    categories = dict(ranges.select("name", "category").iter_rows())
    assert categories == {"ProfilerStep#7": "profiler_step", "aten::mm": "cpu_op"}
    mm = row(ranges, name="aten::mm")
    assert mm["end_ns"] - mm["start_ns"] == 100250 and mm["depth"] == 1
    assert mm["parent"] == row(ranges, name="ProfilerStep#7")["id"]
    assert result.warnings == []


def test_base_time_nanoseconds_offsets_relative_timestamps(tmp_path: Path) -> None:
    events = [x("cpu_op", "aten::add", 1.0, 2.0, **{"External id": 1}), *launch(1.5, 7, 12.3456, 1.0, ext=1)]
    base = 1_700_000_000_123_456_789
    result = collect(write(tmp_path / "t.json", events, baseTimeNanoseconds=base))
    assert result.tables["kernels"]["start_ns"].item() == base + 12346  # 12.3456 µs rounds to 12346 ns
    assert result.tables["ranges"]["start_ns"].item() == base + 1000


def test_legacy_categories_string_tids_and_lowercase_external_id(tmp_path: Path) -> None:
    events = [
        x("Operator", "ProfilerStep#5", 1000, 100, tid="25738", **{"External id": 1}),
        x("Operator", "aten::conv2d", 1010, 50, tid="25738", **{"External id": 2}),
        x("Runtime", "cudaLaunchKernel", 1020, 5, tid="25738", **{"correlation": 34417, "external id": 2}),
        x("Kernel", "volta_scudnn_128x64", 1040, 30, pid=0, tid="stream 7",
          **{"correlation": 34417, "external id": 2, "device": 0, "stream": 7}),
        x("Memcpy", "Memcpy DtoD (Device -> Device)", 1080, 2, pid=0, tid="stream 7",
          **{"correlation": 34418, "external id": 2, "bytes": 64}),
        {"ph": "s", "id": 34417, "pid": 25738, "tid": 25738, "ts": 1020, "cat": "async", "name": "launch"},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 25738, "tid": 25738, "ts": 1011,
         "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512}},
    ]
    result = collect(write(tmp_path / "legacy.pt.trace.json.gz", events, gz=True))
    kernel = result.tables["kernels"].row(0, named=True)
    assert (kernel["stream"], kernel["device"], kernel["op"]) == (7, 0, "aten::conv2d")
    copy = result.tables["memcpy"].row(0, named=True)
    assert (copy["kind"], copy["stream"], copy["op"]) == ("DtoD", 7, "aten::conv2d")
    ranges = result.tables["ranges"]
    assert sorted(ranges["category"].to_list()) == ["cpu_op", "profiler_step"]
    assert ranges["thread"].to_list() == [25738, 25738]
    assert result.tables["api_calls"]["category"].to_list() == ["cuda_runtime"]


def test_nesting_depth_parent_and_ties(tmp_path: Path) -> None:
    events = [
        x("user_annotation", "ProfilerStep#1", 0, 100, **{"External id": 1}),
        # identical intervals: the op that started first (smaller External id) is the parent
        x("cpu_op", "aten::linear", 10, 40, **{"External id": 2}),
        x("cpu_op", "aten::addmm", 10, 40, **{"External id": 3}),
        x("cpu_op", "aten::empty", 50, 0, **{"External id": 4}),  # zero length, touching linear's end
        x("python_function", "nn.Module: Linear_0", 10, 40, **{"Python id": 9}),
        x("cpu_op", "aten::relu", 5, 1, tid=MAIN + 1, **{"External id": 5}),  # another thread: a root
    ]
    ranges = collect(write(tmp_path / "t.json", events)).tables["ranges"]
    ids = {r["name"]: r for r in ranges.iter_rows(named=True)}
    assert ranges["id"].n_unique() == ranges.height
    chain = [("ProfilerStep#1", None, 0), ("nn.Module: Linear_0", "ProfilerStep#1", 1),
             ("aten::linear", "nn.Module: Linear_0", 2), ("aten::addmm", "aten::linear", 3),
             ("aten::empty", "ProfilerStep#1", 1), ("aten::relu", None, 0)]
    for name, parent, depth in chain:
        assert ids[name]["depth"] == depth, name
        assert ids[name]["parent"] == (ids[parent]["id"] if parent else None), name
    assert ids["aten::addmm"]["layer"] == "Linear_0" and ids["ProfilerStep#1"]["layer"] is None


def test_kernel_op_by_containment_when_external_id_is_the_correlation(tmp_path: Path) -> None:
    # HTA-style: GPU External id == correlation id; an op that happens to have
    # that External id elsewhere must not be taken, the enclosing op must.
    events = [
        x("cpu_op", "aten::mul", 100, 50, **{"External id": 10}),
        x("cpu_op", "aten::mul_inner", 110, 20, **{"External id": 11}),
        *launch(115, 777, 130, 5),
        x("cpu_op", "aten::unrelated", 300, 10, **{"External id": 777}),
        *launch(160, 778, 170, 5),  # outside every op
    ]
    kernels = collect(write(tmp_path / "t.json", events)).tables["kernels"].sort("start_ns")
    assert kernels["op"].to_list() == ["aten::mul_inner", None]
    # Both launches link them to the CPU: neither is unattributed; no backward or optimizer op encloses them.
    assert kernels["pass"].to_list() == ["forward", "forward"]


def test_pass_layer_and_flops_follow_sequence_numbers(tmp_path: Path) -> None:
    dims = {"Input Dims": [[8, 16], [32, 16], [32]]}
    events = [
        x("user_annotation", "ProfilerStep#3", 0, 1000, **{"External id": 1}),
        x("python_function", "nn.Module: Linear_0", 10, 60),
        x("cpu_op", "aten::linear", 12, 50, **{"External id": 2, "Sequence number": 42, "Fwd thread id": 0, **dims}),
        x("cpu_op", "aten::addmm", 14, 40,
          **{"External id": 3, "Sequence number": 42, "Fwd thread id": 0, "Input Dims": [[32], [8, 16], [16, 32]]}),
        *launch(20, 1, 30, 30, ext=3, name="gemm"),
        *launch(25, 2, 60, 10, ext=3, name="splitK_reduce"),
        x("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 200, 80, tid=AUTOGRAD,
          **{"External id": 4, "Sequence number": 42, "Fwd thread id": 1}),
        x("cpu_op", "AddmmBackward0", 202, 70, tid=AUTOGRAD,
          **{"External id": 5, "Sequence number": 42, "Fwd thread id": 1}),
        x("cpu_op", "aten::mm", 205, 20, tid=AUTOGRAD, **{"External id": 6, "Input Dims": [[8, 32], [32, 16]]}),
        *launch(206, 3, 230, 10, tid=AUTOGRAD, ext=6, name="gemm_bwd"),
        x("user_annotation", "Optimizer.step#SGD.step", 500, 50, **{"External id": 7}),
        *launch(510, 4, 520, 5, ext=7, name="sgd_kernel"),
    ]
    result = collect(write(tmp_path / "t.json", events))
    kernels = {r["name"]: r for r in result.tables["kernels"].iter_rows(named=True)}
    assert {n: (k["pass"], k["layer"], k["op"]) for n, k in kernels.items()} == {
        "gemm": ("forward", "Linear_0", "aten::addmm"),
        "splitK_reduce": ("forward", "Linear_0", "aten::addmm"),
        "gemm_bwd": ("backward", "Linear_0", "aten::mm"),
        "sgd_kernel": ("optimizer", None, "Optimizer.step#SGD.step"),
    }
    forward_flops = 2 * 8 * 16 * 32
    # shared by the two kernels of aten::linear in proportion to their durations (30 µs : 10 µs)
    assert kernels["gemm"]["flops"] == pytest.approx(forward_flops * 0.75)
    assert kernels["splitK_reduce"]["flops"] == pytest.approx(forward_flops * 0.25)
    assert kernels["gemm_bwd"]["flops"] == 2 * 8 * 16 * 32
    assert kernels["sgd_kernel"]["flops"] is None
    ranges = {r["name"]: r for r in result.tables["ranges"].iter_rows(named=True)}
    assert ranges["nn.Module: Linear_0"]["flops"] == forward_flops  # inclusive, counted once
    assert ranges["ProfilerStep#3"]["flops"] == forward_flops
    assert ranges["AddmmBackward0"]["pass"] == "backward" and ranges["AddmmBackward0"]["sequence"] == 42
    assert ranges["aten::mm"]["layer"] == "Linear_0"
    assert ranges["ProfilerStep#3"]["pass"] == "unattributed"  # a step holds every pass
    assert result.tables["kernels"]["step"].to_list() == [3, 3, 3, 3]


def test_fwdbwd_flow_links_a_backward_node_without_sequence_number(tmp_path: Path) -> None:
    events = [
        x("python_function", "nn.Module: Conv2d_3", 10, 60),
        x("cpu_op", "aten::conv2d", 12, 50, **{"External id": 2}),
        x("cpu_op", "CudnnConvolutionBackward", 200, 80, tid=AUTOGRAD, **{"External id": 4}),
        *launch(210, 9, 230, 10, tid=AUTOGRAD, ext=4, name="dgrad"),
        {"ph": "s", "id": 5, "pid": PID, "tid": MAIN, "ts": 12, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "id": 5, "pid": PID, "tid": AUTOGRAD, "ts": 200, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    ]
    kernel = collect(write(tmp_path / "t.json", events)).tables["kernels"].row(0, named=True)
    assert (kernel["pass"], kernel["layer"]) == ("backward", "Conv2d_3")


def test_module_hierarchy_names_the_layer(tmp_path: Path) -> None:
    hierarchy = "TOP(Net)::forward.encoder(Encoder)::forward.SELF(Encoder)::helper.fc1(Linear)::forward."
    events = [x("cpu_op", "aten::relu", 10, 20, **{"External id": 2, "Module Hierarchy": hierarchy}),
              *launch(12, 1, 20, 5, ext=2)]
    kernel = collect(write(tmp_path / "t.json", events)).tables["kernels"].row(0, named=True)
    assert (kernel["layer"], kernel["pass"]) == ("encoder.fc1", "forward")


@pytest.mark.parametrize(
    ("names", "declared", "expected"),
    [
        (["job_rank-3.json", "job_rank-1.json"], [None, None], [3, 1]),
        (["a_rank_2.pt.trace.json", "b.json"], [None, None], [2, 0]),
        (["w_rank3of8.json", "x.json", "y.json"], [None, None, None], [3, 0, 1]),
        (["rank-5.json"], [0], [0]),  # distributedInfo wins over the name
    ],
)
def test_rank_from_distributed_info_file_name_or_index(tmp_path: Path, names, declared, expected) -> None:
    paths = []
    for index, (name, rank) in enumerate(zip(names, declared, strict=True)):
        top = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 8}} if rank is not None else {}
        events = [x("cpu_op", "aten::add", 10 + index, 5, **{"External id": 1}), *launch(11 + index, 1, 20, 3, ext=1)]
        paths.append(write(tmp_path / name, events, **top))
    result = collect(*paths)
    kernels = result.tables["kernels"].sort("start_ns")
    assert kernels["rank"].to_list() == expected
    assert result.tables["ranges"].sort("start_ns")["rank"].to_list() == expected
    assert result.metadata["ranks"] == sorted(expected)


def test_two_files_of_one_rank_keep_unique_ids_and_separate_joins(tmp_path: Path) -> None:
    events = [x("cpu_op", "aten::add", 10, 5, **{"External id": 1}), *launch(11, 1, 20, 3, ext=1)]
    first = write(tmp_path / "a_rank0.json", events)
    second = write(tmp_path / "b_rank0.json", [{**e, "name": e["name"] + "_b"} for e in events])
    result = collect(first, second)
    assert result.tables["ranges"]["id"].sort().to_list() == [0, 1]
    assert sorted(result.tables["kernels"]["op"].to_list()) == ["aten::add", "aten::add_b"]
    assert any("rank 0 is also claimed" in w for w in result.warnings)


def test_unknown_categories_and_uncategorised_events_stay_ranges(tmp_path: Path) -> None:
    events = [
        x("cuda_sync", "Stream Sync", 10, 5),
        x("my_new_category", "something", 20, 5),
        x(None, "no category", 30, 5),
        x("Trace", "PyTorch Profiler (0)", 0, 100, pid="Spans", tid="PyTorch Profiler"),
    ]
    ranges = collect(write(tmp_path / "t.json", events)).tables["ranges"].sort("start_ns")
    assert ranges.select("name", "category").rows() == [
        ("Stream Sync", "cuda_sync"), ("something", "my_new_category"), ("no category", "uncategorised")
    ]


def test_device_properties_and_distributed_info_in_metadata(tmp_path: Path) -> None:
    props = [{"id": 0, "name": "Tesla V100-DGXS-32GB", "numSms": 80}]
    info = {"backend": "nccl", "rank": 1, "world_size": 2}
    path = write(tmp_path / "t.json", [x("cpu_op", "a", 1, 1)], deviceProperties=props, distributedInfo=info)
    metadata = collect(path).metadata
    assert metadata["deviceProperties"] == {"1": props}
    assert metadata["distributedInfo"] == {"1": info}
    assert metadata["files"][0]["rank"] == 1


def test_chunked_decoding_matches_whole_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = []
    for index in range(300):
        # names with "}, {" inside strings force the exact (Raw) re-cut
        name = "weird}, {name" if index % 97 == 0 else f"aten::op{index % 7}"
        events += [x("cpu_op", name, index * 100, 50, **{"External id": index + 1}),
                   *launch(index * 100 + 5, 1000 + index, index * 100 + 20, 7.5, ext=index + 1)]
    path = write(tmp_path / "t.json", events)
    whole = collect(path)
    monkeypatch.setattr(kineto_decode, "CHUNK_BYTES", 2048)
    chunked = collect(path)
    for table in ("kernels", "ranges", "api_calls"):
        assert chunked.tables[table].equals(whole.tables[table]), table
    assert whole.tables["kernels"].height == 300


def test_odd_arg_types_fall_back_to_lenient_decoding(tmp_path: Path) -> None:
    events = [
        x("cpu_op", "aten::add", 10, 5, **{"External id": "1"}),
        {**x("kernel", "k", 20, 3, pid=0, tid=7, correlation=1, grid=[8, 2], block=[64, 1, 1, 9]), "args": None},
        x("kernel", "k2", 30, 3, pid=0, tid=7, correlation=2, grid=[8, 2], block="oops"),
    ]
    result = collect(write(tmp_path / "t.json", events))
    kernels = result.tables["kernels"].sort("start_ns")
    assert kernels["name"].to_list() == ["k", "k2"]
    assert kernels.select("grid_x", "grid_y", "grid_z", "block_x").row(1) == (8, 2, None, None)
    assert result.tables["ranges"]["correlation"].to_list() == [1]


def test_byte_order_mark_and_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [x("cpu_op", f"aten::op{i}", i * 10, 5, **{"External id": i + 1}) for i in range(200)]
    path = write(tmp_path / "bom.json", events)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    monkeypatch.setattr(kineto_decode, "CHUNK_BYTES", 1024)
    seen: list[float] = []
    result = COLLECTOR.collect([path], lambda fraction, message: seen.append(fraction))
    assert result.tables["ranges"].height == 200
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 10


def test_copy_direction_and_memory_kinds_come_from_the_name(tmp_path: Path) -> None:
    names = [
        "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoD (Device -> Device)",
        "Memcpy PtoP (Device -> Device)", "Memcpy HtoH (Pinned -> Pinned)", "Memcpy something else",
    ]
    events = [x("gpu_memcpy", name, 10 * i, 1, pid=0, tid=7, correlation=i, bytes=8) for i, name in enumerate(names)]
    copies = collect(write(tmp_path / "t.json", events)).tables["memcpy"].sort("start_ns")
    assert copies.select("kind", "src_kind", "dst_kind").rows() == [
        ("HtoD", "Pageable", "Device"), ("DtoH", "Device", "Pinned"), ("DtoD", "Device", "Device"),
        ("PtoP", "Device", "Device"), ("HtoH", "Pinned", "Pinned"), (None, None, None),
    ]


def test_gpu_events_of_several_streams_come_out_in_time_order_with_their_own_attributes(tmp_path: Path) -> None:
    # Two streams written stream by stream (as Kineto does), copies among the kernels: each table is sorted by
    # start, and every row keeps its own correlation, op and sizes through the reordering.
    ops, events = [], []
    for index, (stream, kernel_ts) in enumerate([(7, 1100), (7, 1300), (7, 1500), (9, 1000), (9, 1200), (9, 1400)]):
        ts = 100 + 100 * index
        ops.append(x("cpu_op", f"aten::op{index}", ts, 50, **{"External id": index + 1}))
        events += launch(ts + 5, 500 + index, kernel_ts, 20, ext=index + 1, name=f"kernel{index}", stream=stream)
    copies = [
        x("cuda_runtime", "cudaMemcpyAsync", 705, 2, **{"External id": 7, "correlation": 600}),
        x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 1350, 10, pid=0, tid=9,
          **{"External id": 7, "correlation": 600, "bytes": 4096}),
        x("cuda_runtime", "cudaMemsetAsync", 805, 2, **{"External id": 8, "correlation": 601}),
        x("gpu_memset", "Memset (Device)", 1050, 5, pid=0, tid=7,
          **{"External id": 8, "correlation": 601, "bytes": 512}),
    ]
    ops += [x("cpu_op", "aten::copy_", 700, 50, **{"External id": 7}), x("cpu_op", "aten::zero_", 800, 50,
                                                                             **{"External id": 8})]
    tables = collect(write(tmp_path / "t.json", ops + events + copies)).tables
    kernels, copies_table = tables["kernels"], tables["memcpy"]
    assert kernels["start_ns"].is_sorted() and copies_table["start_ns"].is_sorted()
    assert kernels["name"].to_list() == ["kernel3", "kernel0", "kernel4", "kernel1", "kernel5", "kernel2"]
    for kernel in kernels.iter_rows(named=True):
        index = int(kernel["name"].removeprefix("kernel"))
        assert (kernel["correlation"], kernel["op"], kernel["stream"]) == (500 + index, f"aten::op{index}",
                                                                          7 if index < 3 else 9)
    assert copies_table.select("kind", "bytes", "correlation", "op", "stream").rows() == [
        ("Memset", 512, 601, "aten::zero_", 7), ("HtoD", 4096, 600, "aten::copy_", 9)]
