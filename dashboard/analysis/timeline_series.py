"""The timeline's numeric panels: copy bandwidth, bytes in flight, stack depth.

Each is a per-bucket series over the visible window, so a panel sends the
same number of points however many copies or frames the run holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from dashboard.analysis.timeline_index import IntervalIndex, max_depth_per_bucket, weighted_coverage
from dashboard.analysis.timeline_lanes import STACK_CATEGORY, copy_name

NS_PER_S = 1e9
MAX_STACK_TRACKS = 4


def copy_series(copies: pl.DataFrame, edges: np.ndarray) -> pl.DataFrame:
    """Per copy kind and bucket: average bandwidth (bytes/s), average bytes in flight, and where
    copies without a byte count ran.

    `copies` has kind, start_ns, end_ns, bytes. A copy's bytes are spread
    evenly over its duration (a zero-length copy counts as 1 ns), so a
    bucket's bandwidth is the bytes moved inside it divided by its width, and
    bytes in flight is the time-average of the bytes of copies in progress.
    A copy whose bytes are null or 0 (AMD traces record none) moves no known
    bytes: `unknown_ns` is the time such copies spend in the bucket and
    `unknown_copies` how many of them overlap the window (per kind), so a
    chart can say "bytes unknown" instead of drawing 0 B/s.
    """
    width = np.diff(edges).astype(np.float64)
    parts = []
    for (name,), group in copies.with_columns(copy_name(pl.col("kind")).alias("series")).partition_by(
            "series", as_dict=True, maintain_order=True).items():
        starts = group.get_column("start_ns").to_numpy()
        ends = np.maximum(group.get_column("end_ns").to_numpy(), starts + 1)
        raw = group.get_column("bytes").fill_null(0).to_numpy().astype(np.float64)
        known = raw > 0
        size = np.where(known, raw, 0.0)
        duration = (ends - starts).astype(np.float64)
        moved = weighted_coverage(starts, ends, size / duration, edges)
        in_flight = weighted_coverage(starts, ends, size, edges)
        unknown = weighted_coverage(starts, ends, (~known).astype(np.float64), edges)
        in_window = (starts < edges[-1]) & (ends > edges[0])
        parts.append(pl.DataFrame({
            "series": name,
            "bucket": np.arange(len(width), dtype=np.int32),
            "start_ns": edges[:-1],
            "end_ns": edges[1:],
            "bandwidth": moved / width * NS_PER_S,
            "in_flight": in_flight / width,
            "unknown_ns": unknown,
            "unknown_copies": int((~known & in_window).sum()),
        }, schema_overrides={"series": pl.String, "unknown_copies": pl.Int64}))
    if not parts:
        return pl.DataFrame(schema={"series": pl.String, "bucket": pl.Int32, "start_ns": pl.Int64,
                                    "end_ns": pl.Int64, "bandwidth": pl.Float64, "in_flight": pl.Float64,
                                    "unknown_ns": pl.Float64, "unknown_copies": pl.Int64})
    return pl.concat(parts)


def stack_frames(stack: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Python frames: the stack table, else the profiler's python_function ranges.

    Columns rank, thread, function, depth (0 = outermost on its thread),
    start_ns, end_ns.
    """
    columns = ["rank", "thread", "function", "depth", "start_ns", "end_ns"]
    frames = stack.select(columns)
    if frames.is_empty():
        frames = ranges.filter(pl.col("category") == STACK_CATEGORY).select(
            "rank", "thread", pl.col("name").alias("function"), "depth", "start_ns", "end_ns")
    frames = frames.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()).with_columns(
        pl.col("rank").fill_null(0), pl.col("thread").fill_null(0), pl.col("depth").fill_null(0),
        pl.col("function").fill_null("(unknown)"))
    return frames.with_columns((pl.col("depth") - pl.col("depth").min().over("rank", "thread")).alias("depth"))


@dataclass(frozen=True)
class StackTrack:
    """One thread's Python frames, indexed for window queries."""

    stack: int  # track id, 0..
    rank: int
    thread: int
    label: str
    index: IntervalIndex  # codes index `functions`; rows index the track's frame
    depths: np.ndarray  # depth per frame, in start order
    frames: pl.DataFrame  # function, depth, start_ns, end_ns (rows as in index.rows)


def stack_tracks(frames: pl.DataFrame) -> tuple[list[StackTrack], list[str]]:
    """The busiest MAX_STACK_TRACKS threads' frames, and the function names their codes index."""
    if frames.is_empty():
        return [], []
    functions = frames.get_column("function").unique().sort().to_list()
    coded = frames.with_columns(pl.col("function").cast(pl.Enum(functions)).to_physical().cast(pl.Int64)
                                .alias("code"))
    busiest = (coded.group_by("rank", "thread").len().sort(["len", "rank", "thread"], descending=[True, False, False])
               .head(MAX_STACK_TRACKS).sort("rank", "thread"))
    multi_rank = busiest.get_column("rank").n_unique() > 1
    tracks = []
    for number, (rank, thread) in enumerate(busiest.select("rank", "thread").iter_rows()):
        own = coded.filter((pl.col("rank") == rank) & (pl.col("thread") == thread))
        index = IntervalIndex.build(own.get_column("start_ns").to_numpy(), own.get_column("end_ns").to_numpy(),
                                    own.get_column("code").to_numpy(), np.arange(own.height))
        depths = own.get_column("depth").to_numpy()[index.rows]
        label = f"r{rank} · thread {thread}" if multi_rank else f"thread {thread}"
        tracks.append(StackTrack(number, int(rank), int(thread), label, index, depths,
                                 own.select("function", "depth", "start_ns", "end_ns")))
    return tracks, functions


def stack_depth_series(track: StackTrack, edges: np.ndarray) -> pl.DataFrame:
    """Deepest stack level (frames on the stack) per bucket of one thread."""
    return pl.DataFrame({
        "stack": np.full(len(edges) - 1, track.stack, dtype=np.int32),
        "bucket": np.arange(len(edges) - 1, dtype=np.int32),
        "start_ns": edges[:-1],
        "end_ns": edges[1:],
        "depth": max_depth_per_bucket(track.index, track.depths, edges),
    })


def stack_frames_in(track: StackTrack, start_ns: int, end_ns: int) -> pl.DataFrame:
    """The frames of one thread overlapping a window, for drawing one by one."""
    positions = track.index.overlapping(start_ns, end_ns)
    return track.frames[pl.Series(track.index.rows[positions], dtype=pl.Int64)].with_columns(
        pl.lit(track.stack, dtype=pl.Int32).alias("stack"))
