"""PyTorch allocator snapshots: curves, segments, the streaming loader, and pickles that would run code."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import threading
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors import torch_snapshot as collector_module
from dashboard.collectors.base import IngestError
from dashboard.collectors.torch_snapshot import COLLECTOR, bounded
from dashboard.collectors.torch_snapshot import unpickle as loader
from dashboard.demo import torch_snapshot as demo

MIB = demo.MIB
USER = {"filename": "/home/me/model/net.py", "line": 42, "name": "forward"}
CPP = {"filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 9, "name": "malloc"}


def _write(path: Path, snapshot: Any, gz: bool = False) -> Path:
    data = pickle.dumps(snapshot)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _collect(path: Path) -> dict[str, pl.DataFrame]:
    return COLLECTOR.collect([path], lambda fraction, message: None).tables


def _small_run() -> demo.SnapshotBuilder:
    builder = demo.SnapshotBuilder()
    first = builder.alloc(1000, [CPP, USER])  # rounds to 1,024 in a new 2 MiB segment
    builder.alloc(3 * MIB, [USER])  # a new 20 MiB segment, split
    builder.free(first)
    return builder


def test_curves_follow_the_actions_and_segments_give_the_blocks_at_the_end(tmp_path: Path) -> None:
    tables = _collect(_write(tmp_path / "snap.pickle", demo.snapshot_of([_small_run()])))
    memory = tables["device_memory"]
    assert memory["action"].to_list() == ["segment_alloc", "alloc", "segment_alloc", "alloc", "free_requested",
                                          "free_completed"]
    assert memory["allocated"].to_list() == [0, 1024, 1024, 1024 + 3 * MIB, 1024 + 3 * MIB, 3 * MIB]
    assert memory["reserved"].to_list() == [2 * MIB] * 2 + [22 * MIB] * 4
    assert memory["bytes_delta"].to_list() == [0, 1024, 0, 3 * MIB, 0, -1024]
    assert memory["frame"].to_list()[1] == "model/net.py:42 forward"  # the C++ frame is skipped
    assert not memory["relative"].any() and set(memory["device"]) == {"cuda:0"}
    assert memory["time_ns"].to_list()[0] == 1_700_000_000_000_003_000  # epoch µs kept exact in ns
    assert memory["time_ns"].is_sorted()
    segments = tables["memory_segments"].sort("addr")
    assert segments.select("segment_size", "size", "state").rows() == [
        (2 * MIB, 2 * MIB, "free"), (20 * MIB, 3 * MIB, "allocated"), (20 * MIB, 17 * MIB, "free")]
    assert segments["frame"].to_list() == [None, "model/net.py:42 forward", None]


def test_a_trace_that_starts_late_gets_its_level_from_the_segments(tmp_path: Path) -> None:
    # The ring buffer lost the first allocation: 8 MiB were held before the first entry it kept.
    builder = demo.SnapshotBuilder()
    builder.alloc(8 * MIB, [USER])
    kept = len(builder.trace)
    builder.alloc(2 * MIB, [USER])
    snapshot = demo.snapshot_of([builder])
    snapshot["device_traces"][0] = snapshot["device_traces"][0][kept:]
    memory = _collect(_write(tmp_path / "late.pickle", snapshot))["device_memory"]
    assert memory["action"].to_list() == ["alloc"]  # best fit in the first segment's free 12 MiB
    assert memory["allocated"].to_list() == [10 * MIB]
    assert memory["reserved"].to_list() == [20 * MIB]


def test_entries_without_time_are_placed_in_order_and_counted(tmp_path: Path) -> None:
    snapshot = demo.snapshot_of([_small_run()])
    for entry in snapshot["device_traces"][0]:
        del entry["time_us"]
    path = _write(tmp_path / "old.pickle", snapshot)
    result = COLLECTOR.collect([path], lambda fraction, message: None)
    assert result.tables["device_memory"]["time_ns"].to_list() == [0, 1000, 2000, 3000, 4000, 5000]
    assert result.warnings == [f"{path}: 6 trace entries without `time_us` (a PyTorch before 2.1): "
                               "placed in recorded order, 1 µs apart"]


def test_trace_entries_that_are_not_dicts_are_left_out_and_counted(tmp_path: Path) -> None:
    snapshot = demo.snapshot_of([_small_run()])
    snapshot["device_traces"][0][3:3] = ["garbage", ("a", 1)]
    path = _write(tmp_path / "damaged.pickle", snapshot)
    result = COLLECTOR.collect([path], lambda fraction, message: None)
    assert result.tables["device_memory"]["allocated"].to_list() == [0, 1024, 1024, 1024 + 3 * MIB,
                                                                      1024 + 3 * MIB, 3 * MIB]
    assert result.warnings == [f"{path}: 2 trace entries that are not dicts (damaged) were left out"]


def test_trace_entries_with_a_size_that_is_no_integer_are_dropped_and_counted(tmp_path: Path) -> None:
    snapshot = demo.snapshot_of([_small_run()])
    clean = COLLECTOR.collect([_write(tmp_path / "clean.pickle", snapshot)], lambda fraction, message: None)
    entries = snapshot["device_traces"][0]
    entries.insert(3, {**entries[3], "size": "three MiB"})  # a copy of a real entry, its size text
    entries.insert(1, {**entries[1], "addr": [1, 2]})
    path = _write(tmp_path / "texts.pickle", snapshot)
    result = COLLECTOR.collect([path], lambda fraction, message: None)
    assert result.tables["device_memory"]["allocated"].to_list() == \
        clean.tables["device_memory"]["allocated"].to_list()
    assert result.tables["device_memory"].height == clean.tables["device_memory"].height  # not kept as size 0
    assert f"{path}: 2 trace entries with an address, size or stream that is not an integer: dropped" \
        in result.warnings


def test_without_segments_the_curve_is_relative(tmp_path: Path) -> None:
    snapshot = demo.snapshot_of([_small_run()])
    snapshot["segments"] = []
    memory = _collect(_write(tmp_path / "bare.pickle", snapshot))["device_memory"]
    assert memory["relative"].all() and memory["reserved"].null_count() == memory.height
    assert memory["allocated"].to_list() == [0, 1024, 1024, 1024 + 3 * MIB, 1024 + 3 * MIB, 3 * MIB]


def test_streaming_loader_gives_the_same_tables_in_bounded_batches(tmp_path: Path, monkeypatch) -> None:
    path = demo.write(tmp_path / "train.pickle", steps=14, devices=2)  # > 1,000 entries per device
    whole_loads: list[int] = []
    load_whole = collector_module.load_whole
    monkeypatch.setattr(collector_module, "load_whole", lambda *args: whole_loads.append(1) or load_whole(*args))
    whole = _collect(path)  # the C unpickler, capped (on Linux)
    assert whole_loads == ([1] if bounded.can_bound() else [])
    batches: list[int] = []
    original = loader.load_streaming

    def small_batches(handle: Any, on_entries: Any, batch: int) -> Any:
        def counting(number: int, entries: list) -> None:
            batches.append(len(entries))
            on_entries(number, entries)
        return original(handle, counting, 7)

    monkeypatch.setattr(collector_module, "STREAM_ABOVE_BYTES", 0)
    monkeypatch.setattr(collector_module, "load_streaming", small_batches)
    streamed = _collect(path)
    # The pickler appends 1,000 entries at a time: a batch is handed over at the first append past 7.
    assert len(batches) == 4 and max(batches) == 1000 and sum(batches) == whole["device_memory"].height
    for table in ("device_memory", "memory_segments"):
        assert streamed[table].equals(whole[table])


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_streaming_loader_hands_over_what_the_c_unpickler_reads(protocol: int) -> None:
    # CPython's C unpickler (on our own, trusted pickle) is the reference for every entry and the rest.
    snapshot = demo.snapshot_of(demo.training_builders(steps=3, layers=4, devices=2))
    data = pickle.dumps(snapshot, protocol=protocol)
    reference = pickle.loads(data)
    handed: dict[int, list[dict[str, Any]]] = {}
    rest, numbers = loader.load_streaming(io.BytesIO(data), lambda n, entries: handed.setdefault(n, []).extend(
        entries), batch=50)
    assert [handed[n] for n in sorted(handed)] == reference["device_traces"]
    assert sorted(numbers.values()) == [0, 1] and rest["device_traces"] == [[], []]
    assert rest["segments"] == reference["segments"]


@pytest.mark.parametrize("protocol", [2, 4])
def test_streaming_loader_forgets_entries_it_handed_over(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "train.pickle"
    path.write_bytes(pickle.dumps(demo.snapshot_of(demo.training_builders(steps=14)), protocol=protocol))
    seen: list[int] = []
    with open(path, "rb") as handle:
        unpickler = loader._StreamingUnpickler(handle, lambda n, entries: seen.append(len(entries)), 10)
        snapshot = unpickler.load()
    tail = snapshot["device_traces"][0]
    assert len(seen) == 2 and max(seen) == 1000 and len(tail) < 10  # a shorter tail is handed over by load_streaming
    memo_entries = [value for value in unpickler.memo.values() if loader.is_trace_entry(value)]
    assert len(memo_entries) == len(tail)


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("whole", [True, False])
def test_a_huge_memo_index_costs_one_entry_not_a_hang(tmp_path: Path, monkeypatch, protocol: int,
                                                      whole: bool) -> None:
    # Fuzz cases torch_snapshot/0/609, 2263, 2629: a LONG_BINPUT naming memo index ~10^8-10^9. Uncapped, CPython's
    # C unpickler grows its memo array to twice the index and zeroes it (12 GB, 14-28 s measured on this very
    # input); capped, that allocation fails at once and the streaming loader (a dict memo) reads the file.
    # Inserted right after the top dict is pushed (and memoized), it memoizes that dict again.
    data = pickle.dumps(demo.snapshot_of([_small_run()]), protocol=protocol)
    top = data.index(b"}") + 1
    top += 2 if protocol == 2 else 1  # past BINPUT 0 / MEMOIZE
    damaged = data[:top] + b"r" + (778_987_873).to_bytes(4, "little") + data[top:]
    streamed: list[int] = []
    original = loader.load_streaming
    monkeypatch.setattr(collector_module, "load_streaming", lambda *args: streamed.append(1) or original(*args))
    if not whole:
        monkeypatch.setattr(collector_module, "STREAM_ABOVE_BYTES", 0)
    started = time.perf_counter()
    memory = _collect(_write_bytes(tmp_path / "memo.pickle", damaged))["device_memory"]
    assert time.perf_counter() - started < 5
    assert memory["allocated"].to_list() == [0, 1024, 1024, 1024 + 3 * MIB, 1024 + 3 * MIB, 3 * MIB]
    assert streamed == [1]  # whole: the capped C unpickler gave up and the streaming loader read it


def test_no_cap_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not bounded.can_bound()  # the cap would starve that thread too: stream instead
    finally:
        stop.set()
        other.join()


@pytest.mark.skipif(not bounded.can_bound(), reason="no RLIMIT_AS or /proc/self/statm on this platform")
def test_the_address_space_cap_stops_a_large_allocation_and_is_lifted_after() -> None:
    resource = bounded.resource  # None on Windows, where this test is skipped
    before = resource.getrlimit(resource.RLIMIT_AS)
    with bounded.bounded_address_space(64 * MIB) as cap:
        assert resource.getrlimit(resource.RLIMIT_AS)[0] == cap
        with pytest.raises(MemoryError):
            bytearray(256 * MIB)
        assert len(bytearray(8 * MIB)) == 8 * MIB  # within the room
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert len(bytearray(256 * MIB)) == 256 * MIB


@pytest.mark.parametrize("streaming", [False, True])
def test_a_frame_longer_than_the_pickle_is_refused_by_both_loaders(tmp_path: Path, monkeypatch,
                                                                    streaming: bool) -> None:
    data = pickle.dumps(demo.snapshot_of([_small_run()]), protocol=4)
    assert data[2] == pickle.FRAME[0]  # one frame holds the whole small pickle
    size = int.from_bytes(data[3:11], "little")
    damaged = data[:3] + (size + 100).to_bytes(8, "little") + data[11:]
    if streaming:
        monkeypatch.setattr(collector_module, "STREAM_ABOVE_BYTES", 0)
    with pytest.raises(IngestError, match="pickle"):
        _collect(_write_bytes(tmp_path / "frame.pickle", damaged))
    assert _collect(_write_bytes(tmp_path / "intact.pickle", data))["device_memory"].height == 6


def test_a_bytearray_of_any_length_is_refused_before_it_is_allocated(tmp_path: Path) -> None:
    # BYTEARRAY8 with a length of 2^40: bytearray(n) would zero a terabyte before reading it.
    damaged = b"\x80\x05\x96" + (1 << 40).to_bytes(8, "little") + b"."
    with pytest.raises(IngestError, match="corrupt pickle: its bytes do not decode as an allocator snapshot"):
        _collect(_write_bytes(tmp_path / "bytearray.pickle", damaged))


class _RunsCode:
    def __reduce__(self) -> tuple:
        return (os.system, ("touch /tmp/cudamem-should-not-exist",))


@pytest.mark.parametrize("streaming", [False, True])
def test_a_pickle_that_would_run_code_is_refused_in_one_line(tmp_path: Path, monkeypatch, streaming: bool) -> None:
    marker = Path("/tmp/cudamem-should-not-exist")
    marker.unlink(missing_ok=True)
    path = _write(tmp_path / "evil.pickle", {"segments": [], "device_traces": [[_RunsCode()]]})
    if streaming:
        monkeypatch.setattr(collector_module, "STREAM_ABOVE_BYTES", 0)
    with pytest.raises(IngestError) as caught:
        _collect(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: the pickle asks to import `posix.system`")
    assert not marker.exists()


def test_truncated_and_foreign_pickles_are_one_line_errors(tmp_path: Path) -> None:
    data = pickle.dumps(demo.snapshot_of([_small_run()]))
    truncated = tmp_path / "cut.pickle"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="truncated pickle"):
        _collect(truncated)
    with pytest.raises(IngestError, match="not an allocator snapshot: a pickled list"):
        _collect(_write(tmp_path / "list.pickle", [{"segments": 1}]))


def test_registry_recognises_a_gzipped_snapshot(tmp_path: Path) -> None:
    path = _write(tmp_path / "snap.pickle.gz", demo.snapshot_of([_small_run()]), gz=True)
    run = registry.collect([path])
    assert run.collectors == ["torch_snapshot"]
    assert run.tables["device_memory"].height == 6
