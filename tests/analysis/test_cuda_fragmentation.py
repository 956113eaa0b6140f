"""Fragmentation over time, replayed from a hand-built allocator snapshot with hand-computed free blocks."""

from __future__ import annotations

import pickle
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dashboard.analysis import cuda_fragmentation as frag
from dashboard.collectors.torch_snapshot import COLLECTOR
from dashboard.demo import torch_snapshot as demo

MIB = demo.MIB
USER = [{"filename": "/home/me/net.py", "line": 7, "name": "forward"}]


def _builder() -> demo.SnapshotBuilder:
    """Segment S1 (20 MiB) holds a, b, c (4 MiB each, in address order); b is freed; d (12 MiB) gets its own
    segment S2; a is freed (merging with b's hole); d is freed and S2 released. Entries are 3 µs apart."""
    builder = demo.SnapshotBuilder()
    a = builder.alloc(4 * MIB, USER)  # 0 segment_alloc S1, 1 alloc a
    builder.alloc(4 * MIB, USER)  # 2 alloc b
    b = builder.trace[-1]["addr"]
    builder.alloc(4 * MIB, USER)  # 3 alloc c
    builder.free(b)  # 4 free_requested b, 5 free_completed b
    d = builder.alloc(12 * MIB, USER)  # 6 segment_alloc S2 (12 MiB), 7 alloc d
    builder.free(a)  # 8, 9
    builder.free(d)  # 10, 11
    builder.empty_cache()  # 12 segment_free S2
    return builder


def _tables(tmp_path: Path, builder: demo.SnapshotBuilder, drop_first: int = 0) -> tuple[pl.DataFrame, ...]:
    snapshot = demo.snapshot_of([builder])
    snapshot["device_traces"][0] = snapshot["device_traces"][0][drop_first:]  # the ring buffer lost these
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot))
    tables = COLLECTOR.collect([path], lambda fraction, message: None).tables
    return tables["device_memory"], tables["memory_segments"]


# After entry i: (free MiB, largest free MiB), worked out from the layout in `_builder`'s docstring.
EXPECTED = {
    1: (16, 16),  # a in S1: one free block
    3: (8, 8),  # a b c: the tail of S1
    4: (8, 8),  # free_requested: b is still held
    5: (12, 8),  # b's hole (4) and the tail (8): 1 − 8/12
    7: (12, 8),  # d fills S2 exactly
    9: (16, 8),  # a's free merges with b's hole: 8 + 8
    11: (28, 12),  # S2 empty: 8 + 8 + 12
    12: (16, 8),  # S2 released
}


@pytest.mark.parametrize("drop_first", [0, 2])
def test_fragmentation_after_each_action_matches_the_layout(tmp_path: Path, drop_first: int) -> None:
    # drop_first=2: the trace starts after S1 and a were allocated; both come back from the end state and a's
    # free_completed without its alloc.
    events, segments = _tables(tmp_path, _builder(), drop_first)
    state = frag.layout(events, segments)
    assert state is not None
    origin = demo.SnapshotBuilder().time_us * 1000
    times = {entry: origin + 3000 * (entry + 1) for entry in EXPECTED if entry >= drop_first}
    result = frag.over_time(state, list(times.values()))
    for (entry, time_ns), row in zip(times.items(), result.iter_rows(named=True), strict=True):
        free, largest = EXPECTED[entry]
        assert (row["time_ns"], row["free"], row["largest_free"]) == (time_ns, free * MIB, largest * MIB), entry
        assert row["fragmentation"] == pytest.approx(float(1 - Fraction(largest, free)))
    # free = reserved − allocated, as the collector's curves say, at every one of those times
    curve = events.join(result, on="time_ns")
    assert (curve["reserved"] - curve["allocated"]).to_list() == curve["free"].to_list()


def test_before_the_first_entry_only_what_was_there_before_the_trace_counts(tmp_path: Path) -> None:
    events, segments = _tables(tmp_path, _builder(), drop_first=2)
    state = frag.layout(events, segments)
    assert state is not None
    before = demo.SnapshotBuilder().time_us * 1000  # earlier than every kept entry: S1 with a, 16 MiB free
    assert frag.over_time(state, [before]).row(0)[1:3] == (16 * MIB, 16 * MIB)


def test_no_segments_no_fragmentation(tmp_path: Path) -> None:
    events, segments = _tables(tmp_path, _builder())
    assert frag.layout(events, segments.clear()) is None


def test_sample_times_are_bounded_and_keep_both_ends() -> None:
    times = pl.Series(range(0, 10_000, 10))
    picked = frag.sample_times(times, limit=50)
    assert len(picked) == 50 and picked[0] == 0 and picked[-1] == 9_990 and picked == sorted(picked)
    assert frag.sample_times(times.head(20), limit=50) == list(range(0, 200, 10))


def test_blocks_alive_at_a_time_match_a_scan_of_every_block() -> None:
    # Short-lived blocks are searched near the time only; long-lived and edge ones always: same answer as a scan.
    rng = np.random.default_rng(3)
    count = 5_000
    start = rng.integers(0, 1_000_000, count)
    end = start + rng.pareto(1.2, count).astype(np.int64) * 1000 + 1
    start[:50], end[50:100] = frag.BEFORE, frag.AFTER
    lives = pl.DataFrame({"addr": rng.permutation(count) * 4096, "size": np.full(count, 512), "start_ns": start,
                          "end_ns": end})
    blocks = frag._blocks(lives)
    assert 0 < blocks.long_addr.size < count // 10 and blocks.span > 0
    for time_ns in (0, 1, 500_000, 999_999, 5_000_000):
        alive = lives.filter((pl.col("start_ns") <= time_ns) & (pl.col("end_ns") > time_ns)).sort("addr")
        addr, size = blocks.live_at(time_ns)
        assert addr.tolist() == alive["addr"].to_list() and size.sum() == 512 * alive.height
