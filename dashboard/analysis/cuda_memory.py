"""CUDA allocator memory over time (`device_memory`, `memory_segments`): curves, peak, live blocks, per op.

Definitions (the page shows them next to the numbers):

* allocated: bytes in live tensors on the device after each event; reserved:
  bytes the caching allocator holds in segments (cudaMalloc'd).
* slack = reserved − allocated: memory held but not in use, what
  fragmentation costs over time. Fragmentation at a snapshot's end (segments
  known) = 1 − largest free block / free bytes in the segments: 0 when all
  free memory is one block, near 1 when it is scattered in small pieces.
* live at t: allocations made at or before t and not freed by t (a free at
  exactly t has happened). Frees are paired with allocations by address, so
  traces without `Addr` (2021) have no live list.
* peak: the first event at which allocated is highest (in the window);
  culprit: the op (snapshots: Python frame) whose live allocations hold the
  most bytes at the peak.

Curves are bounded per chart: above `2 x buckets` events in the window each
pixel bucket keeps its lowest and highest point (in time order), so spikes
survive; below it every event is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

FREES = ("free", "free_completed")
NO_OP = "(no op)"


@dataclass(frozen=True)
class Peak:
    device: str
    time_ns: int
    allocated: int
    culprit: str | None  # op or frame holding the most live bytes at the peak
    culprit_bytes: int | None


def device_events(events: pl.DataFrame, device: str, window: tuple[int, int] | None = None) -> pl.DataFrame:
    """One device's events in time order, optionally within [start, end]."""
    found = events.filter(pl.col("device") == device)
    if window is not None:
        found = found.filter(pl.col("time_ns").is_between(*window))
    return found


def curve(events: pl.DataFrame, window: tuple[int, int] | None, buckets: int = 1000) -> pl.DataFrame:
    """(time_ns, allocated, reserved) to draw: every event, or min / max per bucket when there are too many."""
    columns = ["time_ns", "allocated", "reserved"]
    if events.height <= 2 * buckets:
        return events.select(columns)
    start, end = window if window is not None else (events["time_ns"].min(), events["time_ns"].max())
    span = max(int(end) - int(start), 1)  # type: ignore[arg-type]
    bucketed = events.select(columns).with_row_index("_i").with_columns(
        ((pl.col("time_ns") - start) * buckets // span).clip(0, buckets - 1).alias("_bucket")
    )
    low = bucketed.sort("allocated", "_i").group_by("_bucket").first()
    high = bucketed.sort("allocated", "_i", descending=[True, False]).group_by("_bucket").first()
    return pl.concat([low, high]).unique("_i").sort("_i").select(columns)


def lifetimes(events: pl.DataFrame) -> pl.DataFrame:
    """One row per allocation with an address: start, end (null: never freed in the trace), size, op, frame."""
    paired = events.filter(pl.col("addr").is_not_null() & pl.col("action").is_in(["alloc", *FREES]))
    paired = paired.with_row_index("_i").sort("addr", "time_ns", "_i").with_columns(
        pl.col("action").shift(-1).over("addr").alias("_next_action"),
        pl.col("time_ns").shift(-1).over("addr").alias("_next_time"),
    )
    allocs = paired.filter(pl.col("action") == "alloc")
    return allocs.select(
        "device", "addr", pl.col("bytes_delta").alias("size"), pl.col("time_ns").alias("start_ns"),
        pl.when(pl.col("_next_action").is_in(FREES)).then(pl.col("_next_time")).alias("end_ns"),
        "op", "frame",
    ).sort("start_ns")


def live_at(lives: pl.DataFrame, time_ns: int, top: int | None = None) -> pl.DataFrame:
    """Allocations alive at `time_ns`, largest first."""
    alive = lives.filter((pl.col("start_ns") <= time_ns) & (pl.col("end_ns").is_null() | (pl.col("end_ns") > time_ns)))
    alive = alive.sort("size", "start_ns", descending=[True, False])
    return alive.head(top) if top is not None else alive


def _owner() -> pl.Expr:
    return pl.coalesce("op", "frame", pl.lit(NO_OP)).alias("owner")


def peak(events: pl.DataFrame, lives: pl.DataFrame, device: str) -> Peak | None:
    """The highest allocated point of `events` (one device) and who holds the most live bytes there."""
    if events.height == 0:
        return None
    row = events.row(int(events["allocated"].arg_max()), named=True)  # type: ignore[arg-type]
    holders = live_at(lives, row["time_ns"]).group_by(_owner()).agg(pl.col("size").sum()).sort(
        "size", "owner", descending=[True, False])
    culprit, held = holders.row(0) if holders.height else (None, None)
    return Peak(device, row["time_ns"], row["allocated"], culprit, held)


def per_op(events: pl.DataFrame, lives: pl.DataFrame, at_ns: int | None) -> pl.DataFrame:
    """Per op (or frame): allocations, bytes allocated, bytes live at `at_ns` (the peak: its contribution)."""
    allocs = events.filter(pl.col("action") == "alloc").group_by(_owner()).agg(
        pl.len().alias("allocations"), pl.col("bytes_delta").sum().alias("bytes"))
    if at_ns is None:
        return allocs.with_columns(pl.lit(None, pl.Int64).alias("live_bytes")).sort("bytes", descending=True)
    live = live_at(lives, at_ns).group_by(_owner()).agg(pl.col("size").sum().alias("live_bytes"))
    return allocs.join(live, on="owner", how="full", coalesce=True).with_columns(
        pl.col("allocations").fill_null(0), pl.col("bytes").fill_null(0)
    ).sort("live_bytes", "bytes", descending=True, nulls_last=True)


def fragmentation(segments: pl.DataFrame) -> pl.DataFrame:
    """Per device at the snapshot's end: free bytes, largest free block, fragmentation (see the module doc)."""
    free = segments.filter(pl.col("state") == "free")
    return segments.select("device").unique().join(
        free.group_by("device").agg(pl.col("size").sum().alias("free"), pl.col("size").max().alias("largest_free")),
        on="device", how="left",
    ).with_columns(
        pl.col("free").fill_null(0), pl.col("largest_free").fill_null(0)
    ).with_columns(
        pl.when(pl.col("free") > 0).then(1 - pl.col("largest_free") / pl.col("free")).otherwise(0.0)
        .alias("fragmentation")
    ).sort("device")
