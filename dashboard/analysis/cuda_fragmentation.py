"""Fragmentation of the CUDA caching allocator over time, replayed from a snapshot's trace and segments.

fragmentation(t) = 1 − largest free block / free bytes within the reserved
segments, after every event at or before t (as `cuda_memory.live_at`): 0
when all free memory is one block, near 1 when it is scattered in pieces
too small for a large request. A free block is a maximal address range of a
segment that no live block covers (the allocator merges adjacent free
blocks, so the ranges between live blocks are exactly its free blocks).

What is alive at t comes from the trace and the segments at the snapshot's
end (the trace is a ring buffer that starts late):

* segments: `segment_alloc` … `segment_free` by address; a `segment_free`
  without its alloc, and a segment at the end that the trace never
  allocated, were there before the trace started.
* blocks: `alloc` … `free_completed` by address (`cuda_memory.lifetimes`);
  a `free_completed` without its alloc, and a block allocated at the end
  that no unfreed trace alloc explains, were there before it started.

Times without segment knowledge (Kineto traces: no segments) give no
fragmentation; the page shows reserved − allocated there. The replay is
evaluated at chosen times (the points a chart draws), a numpy pass per time
over the blocks alive near it (`Blocks`), never a Python loop over events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from dashboard.analysis.cuda_memory import FREES

BEFORE = np.iinfo(np.int64).min  # alive since before the trace started
AFTER = np.iinfo(np.int64).max  # still alive at the trace's end
_SEGMENT_GROWS = ("segment_alloc", "segment_map")
_SEGMENT_SHRINKS = ("segment_free", "segment_unmap")


@dataclass(frozen=True)
class Blocks:
    """Blocks with [start, end) lives, in order of start; those living longer than `span` (and those alive at
    either edge of the trace) are kept apart, so that a time only scans the short ones that started within
    `span` before it."""

    addr: np.ndarray
    size: np.ndarray
    start: np.ndarray
    end: np.ndarray
    span: int
    long_addr: np.ndarray
    long_size: np.ndarray
    long_start: np.ndarray
    long_end: np.ndarray

    def live_at(self, time_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """(addresses, sizes) of the blocks alive at `time_ns`, in address order."""
        first = int(np.searchsorted(self.start, time_ns - self.span, side="left"))
        last = int(np.searchsorted(self.start, time_ns, side="right"))
        short = slice(first, last)
        live = self.end[short] > time_ns
        long_live = (self.long_start <= time_ns) & (self.long_end > time_ns)
        addr = np.concatenate([self.addr[short][live], self.long_addr[long_live]])
        size = np.concatenate([self.size[short][live], self.long_size[long_live]])
        order = np.argsort(addr, kind="stable")
        return addr[order], size[order]


def _blocks(lives: pl.DataFrame) -> Blocks:
    lifetime = pl.col("end_ns") - pl.col("start_ns")
    edges = (pl.col("start_ns") == BEFORE) | (pl.col("end_ns") == AFTER)
    finite = lives.filter(~edges)
    # The 99th percentile of lifetimes: ~1 % of blocks are scanned at every time, the rest only near it.
    span = int(finite.select(lifetime.quantile(0.99, "higher")).item() or 0) if finite.height else 0
    long = lives.filter(edges | (lifetime > span))
    short = lives.filter(~edges & (lifetime <= span)).sort("start_ns")

    def arrays(frame: pl.DataFrame) -> list[np.ndarray]:
        return [frame[name].to_numpy().astype(np.int64) for name in ("addr", "size", "start_ns", "end_ns")]

    return Blocks(*arrays(short), span, *arrays(long))


@dataclass(frozen=True)
class Layout:
    """One device's segments (in address order) and blocks, with [start, end) lives in ns (BEFORE / AFTER at the
    trace's edges)."""

    segment_addr: np.ndarray
    segment_size: np.ndarray
    segment_start: np.ndarray
    segment_end: np.ndarray
    blocks: Blocks


def _paired(events: pl.DataFrame, opens: tuple[str, ...], closes: tuple[str, ...], size: pl.Expr) -> pl.DataFrame:
    """(addr, size, start_ns, end_ns) per open/close pair by address; a close without its open starts BEFORE."""
    acts = events.with_columns(size.alias("_size")).filter(  # the size first: it may read the previous event
        pl.col("addr").is_not_null() & pl.col("action").is_in([*opens, *closes]))
    acts = acts.with_row_index("_i").sort("addr", "time_ns", "_i").with_columns(
        pl.col("action").is_in(opens).alias("_open"))
    acts = acts.with_columns(
        pl.col("_open").shift(1).over("addr").alias("_prev_open"),
        pl.col("time_ns").shift(-1).over("addr").alias("_next_time"),
    )
    opened = acts.filter(pl.col("_open")).select(
        "addr", pl.col("_size").alias("size"), pl.col("time_ns").alias("start_ns"),
        pl.col("_next_time").fill_null(AFTER).alias("end_ns"))
    orphans = acts.filter(pl.col("_open").not_() & pl.col("_prev_open").is_null()).select(
        "addr", pl.col("_size").alias("size"), pl.lit(BEFORE, pl.Int64).alias("start_ns"),
        pl.col("time_ns").alias("end_ns"))
    return pl.concat([opened, orphans])


def layout(events: pl.DataFrame, segments: pl.DataFrame) -> Layout | None:
    """One device's replayable layout, or None when its segments are unknown (no snapshot segments)."""
    if segments.height == 0:
        return None
    at_end = segments.select(pl.col("segment_addr").alias("addr"), pl.col("segment_size").alias("size")).unique()
    # device_memory keeps a segment action's size as the step of `reserved` (its first row: the end's segment).
    events = events.join(at_end.rename({"size": "_end_size"}), on="addr", how="left", maintain_order="left")
    segment_size = pl.coalesce(pl.col("reserved").diff().abs(), pl.col("_end_size"))
    segment_lives = _paired(events, _SEGMENT_GROWS, _SEGMENT_SHRINKS, segment_size)
    open_at_end = segment_lives.filter(pl.col("end_ns") == AFTER).select("addr")
    older_segments = at_end.join(open_at_end, on="addr", how="anti").select(
        "addr", "size", pl.lit(BEFORE, pl.Int64).alias("start_ns"), pl.lit(AFTER, pl.Int64).alias("end_ns"))
    segment_lives = pl.concat([segment_lives, older_segments]).drop_nulls(["addr", "size"])
    block_lives = _paired(events, ("alloc",), FREES, pl.col("bytes_delta").abs())
    held_at_end = segments.filter(pl.col("state") != "free").select("addr", "size")
    open_blocks = block_lives.filter(pl.col("end_ns") == AFTER).select("addr")
    older_blocks = held_at_end.join(open_blocks, on="addr", how="anti").select(
        "addr", "size", pl.lit(BEFORE, pl.Int64).alias("start_ns"), pl.lit(AFTER, pl.Int64).alias("end_ns"))
    block_lives = pl.concat([block_lives, older_blocks]).drop_nulls(["addr", "size"])
    segment_lives = segment_lives.sort("addr")
    return Layout(*[segment_lives[name].to_numpy().astype(np.int64) for name in ("addr", "size", "start_ns", "end_ns")],
                  _blocks(block_lives))


def at_time(state: Layout, time_ns: int) -> tuple[int, int]:
    """(free bytes, largest free block) within the segments alive at `time_ns`."""
    live_segments = (state.segment_start <= time_ns) & (state.segment_end > time_ns)
    seg_addr, seg_size = state.segment_addr[live_segments], state.segment_size[live_segments]
    if seg_addr.size == 0:
        return 0, 0
    seg_end = seg_addr + seg_size
    addr, size = state.blocks.live_at(time_ns)
    owner = np.searchsorted(seg_addr, addr, side="right") - 1
    inside = (owner >= 0) & (addr + size <= seg_end[np.maximum(owner, 0)])
    addr, end, owner = addr[inside], (addr + size)[inside], owner[inside]
    gaps = np.zeros(0, dtype=np.int64)
    if addr.size:
        # Blocks are in address order, so within a segment each gap is the space since the previous block's end.
        first_in_segment = np.r_[True, owner[1:] != owner[:-1]]
        gaps = addr - np.where(first_in_segment, seg_addr[owner], np.r_[0, end[:-1]])
    last_end = seg_addr.copy()  # a segment without blocks is one free block
    np.maximum.at(last_end, owner, end)
    tails = seg_end - last_end
    free = int(gaps.sum() + tails.sum())
    largest = int(max(gaps.max(initial=0), tails.max(initial=0)))
    return free, largest


def over_time(state: Layout, times: list[int]) -> pl.DataFrame:
    """time_ns, free, largest_free, fragmentation at each of `times`."""
    rows = [(time, *at_time(state, time)) for time in times]
    frame = pl.DataFrame(rows, schema={"time_ns": pl.Int64, "free": pl.Int64, "largest_free": pl.Int64},
                         orient="row")
    return frame.with_columns(
        pl.when(pl.col("free") > 0).then(1 - pl.col("largest_free") / pl.col("free")).otherwise(0.0)
        .alias("fragmentation"))


def sample_times(curve_times: pl.Series, limit: int = 400) -> list[int]:
    """At most `limit` of a drawn curve's times, evenly spread (every one when fewer)."""
    times = curve_times.unique(maintain_order=True)
    if times.len() > limit:
        times = times.gather(np.linspace(0, times.len() - 1, limit).round().astype(np.int64))
    return [int(t) for t in times.to_list()]
