"""CUDA allocator memory analysis on hand-computed events: peak and culprit, live blocks, per op, bucketing."""

from __future__ import annotations

import numpy as np
import polars as pl

from dashboard.analysis import cuda_memory as analysis
from dashboard.schema import conform

MIB = 1024 * 1024


def _events() -> pl.DataFrame:
    rows = [  # time, addr, delta, op, action
        (10, 1, 100, "aten::empty", "alloc"),
        (20, 2, 300, "aten::mm", "alloc"),
        (30, 1, -100, None, "free"),
        (40, 1, 50, "aten::add", "alloc"),
        (50, 2, -300, None, "free"),
    ]
    frame = pl.DataFrame(rows, schema=["time_ns", "addr", "bytes_delta", "op", "action"], orient="row")
    frame = frame.with_columns(pl.lit("cuda:0").alias("device"), pl.lit(0).alias("rank"),
                               pl.col("bytes_delta").cum_sum().alias("allocated"), pl.lit(1000).alias("reserved"))
    return conform("device_memory", frame)


def test_peak_and_its_culprit() -> None:
    events = _events()
    assert events["allocated"].to_list() == [100, 400, 300, 350, 50]
    peak = analysis.peak(events, analysis.lifetimes(events), "cuda:0")
    assert peak == analysis.Peak("cuda:0", 20, 400, "aten::mm", 300)


def test_live_allocations_pair_frees_by_address() -> None:
    lives = analysis.lifetimes(_events())
    assert lives.select("addr", "size", "start_ns", "end_ns").rows() == [
        (1, 100, 10, 30), (2, 300, 20, 50), (1, 50, 40, None)]
    assert analysis.live_at(lives, 30)["addr"].to_list() == [2]  # a free at exactly t has happened
    assert analysis.live_at(lives, 45)["size"].to_list() == [300, 50]  # largest first
    assert analysis.live_at(lives, 5).height == 0


def test_per_op_counts_bytes_and_peak_contribution() -> None:
    events = _events()
    table = analysis.per_op(events, analysis.lifetimes(events), 20)
    assert table.rows() == [("aten::mm", 1, 300, 300), ("aten::empty", 1, 100, 100), ("aten::add", 1, 50, None)]


def test_curve_keeps_every_event_when_few_and_the_extremes_per_bucket_when_many() -> None:
    events = _events()
    assert analysis.curve(events, None, buckets=10).height == 5
    count = 50_000
    sawtooth = np.tile([0, 7, 3, 1], count // 4).cumsum() % 1000
    many = conform("device_memory", pl.DataFrame({
        "device": ["cuda:0"] * count, "time_ns": np.arange(count) * 10, "allocated": sawtooth,
    }))
    drawn = analysis.curve(many, None, buckets=100)
    assert drawn.height <= 200
    assert drawn["allocated"].max() == many["allocated"].max() and drawn["allocated"].min() == 0
    assert drawn["time_ns"].is_sorted()
    # Zoomed to a window of few events: every event in it.
    window = (1000, 2000)
    inside = analysis.device_events(many, "cuda:0", window)
    assert analysis.curve(inside, window, buckets=100).equals(inside.select("time_ns", "allocated", "reserved"))


def test_fragmentation_from_free_blocks() -> None:
    segments = conform("memory_segments", pl.DataFrame({
        "device": ["cuda:0"] * 3 + ["cuda:1"],
        "size": [6 * MIB, 4 * MIB, 2 * MIB, 20 * MIB],
        "state": ["free", "allocated", "free", "allocated"],
    }))
    frag = analysis.fragmentation(segments)
    assert frag.select("device", "free", "largest_free", "fragmentation").rows() == [
        ("cuda:0", 8 * MIB, 6 * MIB, 0.25), ("cuda:1", 0, 0, 0.0)]
