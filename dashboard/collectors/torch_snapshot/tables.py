"""Snapshot objects -> `device_memory` (trace actions) and `memory_segments` (blocks at the end).

Trace entries are turned into polars columns a batch at a time (one list
comprehension per field, as in `kineto.columns`), so the Python objects of
a batch are dropped as soon as its columns exist.

Curves: `alloc` adds its size to `allocated`, `free_completed` takes it off
(between `free_requested` and `free_completed` the block still waits for
another stream and cannot be reused); `segment_alloc` / `segment_map` add to
`reserved`, `segment_free` / `segment_unmap` take off. The trace is a ring
buffer that starts after the program did, so the level at its start is not
zero: it is recovered from the segments at the snapshot's end (allocated =
blocks not inactive, reserved = segment sizes) minus the trace's net change,
as PyTorch's memory_viz does. A device without segments in the snapshot
keeps the running sum from 0 (`relative`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import polars as pl

from dashboard.schema import conform, empty

_MISSING = object()
_GROWS_ALLOCATED = {"alloc": 1, "free_completed": -1}
_GROWS_RESERVED = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
_STATES = {"active_allocated": "allocated", "inactive": "free", "active_pending_free": "awaiting_free",
           "active_awaiting_free": "awaiting_free"}


def _frame_text(frame: Any) -> str | None:
    """`dir/file.py:12 name` for a Python frame; None for C++ frames (they say nothing to the user)."""
    if type(frame) is str:
        return frame
    if type(frame) is not dict:
        return None
    filename = frame.get("filename")
    if not isinstance(filename, str) or not filename.endswith(".py"):
        return None
    short = "/".join(PurePosixPath(filename).parts[-2:])
    return f"{short}:{frame.get('line')} {frame.get('name')}"


class FrameNamer:
    """Top Python frame of a traceback; frame dicts are shared by every traceback, so each is read once."""

    def __init__(self) -> None:
        self._by_frame: dict[int, str | None] = {}

    def top(self, frames: Any) -> str | None:
        if type(frames) is str:  # already summarised (a traceback the streaming loader handed over)
            return frames
        if type(frames) is not list:
            return None
        by_frame = self._by_frame
        for frame in frames:
            text = by_frame.get(id(frame), _MISSING)
            if text is _MISSING:
                text = by_frame[id(frame)] = _frame_text(frame)
            if text is not None:
                return text  # type: ignore[return-value]
        return None


def _ints(name: str, values: list[Any]) -> pl.Series:
    return pl.Series(name, values, dtype=pl.Int64, strict=False)


def _time_ns(values: list[Any]) -> pl.Series:
    """`time_us` in ns: integers (as PyTorch writes them) exactly, since a float64 would round epoch ns."""
    try:
        return pl.Series("time_ns", values, dtype=pl.Int64) * 1000
    except (TypeError, OverflowError):
        return (pl.Series("time_ns", values, dtype=pl.Float64, strict=False) * 1000).round(0).cast(pl.Int64)


def entries_frame(number: int, first: int, entries: Sequence[dict[str, Any]], namer: FrameNamer) -> pl.DataFrame:
    """One batch of a trace list as columns; `first` is the batch's position in its list."""
    tops: dict[int, str | None] = {}  # per traceback list, valid while the batch holds its entries
    frames = []
    for entry in entries:
        stack = entry.get("frames")
        key = id(stack)
        top = tops.get(key, _MISSING)
        if top is _MISSING:
            top = tops[key] = namer.top(stack)
        frames.append(top)
    raw = {field: [e.get(field) for e in entries] for field in ("addr", "size", "stream")}
    numbers = [_ints(field, values) for field, values in raw.items()]
    # A value the entry has but that is no integer (text, a list...) must not pass as "absent".
    unreadable = pl.Series("_unreadable", [False] * len(entries))
    for field, column in zip(raw, numbers, strict=True):
        unreadable = unreadable | (column.is_null() & pl.Series([value is not None for value in raw[field]]))
    return pl.DataFrame([
        pl.Series("list", [number], dtype=pl.Int32).new_from_index(0, len(entries)),
        pl.int_range(first, first + len(entries), dtype=pl.Int64, eager=True).alias("seq"),
        # Categorical: a few distinct texts over millions of rows cost a code each until the table is written.
        pl.Series("action", [e.get("action") for e in entries], dtype=pl.String, strict=False).cast(pl.Categorical),
        *numbers,
        _time_ns([e.get("time_us") for e in entries]),
        pl.Series("frame", frames, dtype=pl.String).cast(pl.Categorical),
        unreadable,
    ])


def _int(value: Any) -> int | None:
    return value if type(value) is int and -(2**63) <= value < 2**63 else None


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def segments_frame(segments: Any, namer: FrameNamer, rank: int) -> pl.DataFrame:
    """One row per block of every segment, with its segment and top frame.

    A field of the wrong type (a damaged snapshot: a dict where a size belongs) is read as absent; such
    blocks then fail the table's checks (no size) rather than the whole file."""
    rows: list[dict[str, Any]] = []
    for segment in segments if isinstance(segments, list) else []:
        if not isinstance(segment, dict):
            continue
        offset = _int(segment.get("address"))
        blocks = segment.get("blocks")
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            frames = block.get("frames")
            history = block.get("history")
            if frames is None and isinstance(history, list) and history and isinstance(history[0], dict):
                frames = history[0].get("frames")  # snapshots before PyTorch 2.1
            size = _int(block.get("size"))
            state = _text(block.get("state"))
            rows.append({
                "device": f"cuda:{_int(segment.get('device')) or 0}",
                "segment_addr": _int(segment.get("address")),
                "segment_size": _int(segment.get("total_size")),
                "addr": _int(block.get("address")) if "address" in block else offset,
                "size": size,
                "requested_size": _int(block.get("requested_size")) if "requested_size" in block
                else (size if state != "inactive" else None),
                "state": _STATES.get(state, state) if state is not None else None,
                "stream": _int(segment.get("stream")),
                "frame": namer.top(frames) if state != "inactive" else None,
            })
            if offset is not None and size is not None:
                offset += size
    schema = {"device": pl.String, "segment_addr": pl.Int64, "segment_size": pl.Int64, "addr": pl.Int64,
              "size": pl.Int64, "requested_size": pl.Int64, "state": pl.String, "stream": pl.Int64,
              "frame": pl.String}
    frame = pl.DataFrame(rows, schema=schema)
    return conform("memory_segments", frame.with_columns(pl.lit(rank, pl.Int32).alias("rank")))


NO_HISTORY = "no allocation history recorded (enable `_record_memory_history`)"


def state_at_snapshot(segments: pl.DataFrame, rank: int, time_ns: int = 0) -> pl.DataFrame:
    """One `snapshot` row per device of a snapshot without history: allocated (blocks in use or awaiting
    their free, as the curves count them) and reserved (segment sizes) at the snapshot, at `time_ns` on the
    snapshot's own clock (a snapshot without any trace names no time: 0)."""
    if segments.height == 0:
        return empty("device_memory")
    per_device = segments.group_by("device").agg(
        pl.col("size").filter(pl.col("state") != "free").sum().alias("allocated"),
        pl.col("segment_size").filter(pl.col("segment_addr").is_first_distinct()).sum().alias("reserved"),
    ).sort("device")
    return conform("device_memory", per_device.select(
        pl.lit(rank, pl.Int32).alias("rank"), "device", pl.lit(time_ns, pl.Int64).alias("time_ns"),
        pl.lit(0, pl.Int64).alias("bytes_delta"), "allocated", "reserved", pl.lit(False).alias("relative"),
        pl.lit("snapshot").alias("action")))


def device_memory(parts: list[pl.DataFrame], devices: dict[int, int], segments: pl.DataFrame,
                  rank: int) -> tuple[pl.DataFrame, list[str]]:
    """`device_memory` rows of all trace batches; `devices` maps a trace list's number to its device index."""
    warnings: list[str] = []
    if not parts:
        return empty("device_memory"), warnings
    trace = pl.concat(parts).with_columns(
        pl.concat_str([pl.lit("cuda:"), pl.col("list").replace_strict(devices, default=None).cast(pl.String)])
        .alias("device"),
    )
    unreadable = int(trace.get_column("_unreadable").sum())
    if unreadable:
        warnings.append(f"{unreadable:,} trace entr{'y' if unreadable == 1 else 'ies'} with an address, size or "
                        "stream that is not an integer: dropped")
        trace = trace.filter(~pl.col("_unreadable"))
    trace = trace.drop("_unreadable")
    untimed = int(trace.get_column("time_ns").null_count())
    if untimed:
        warnings.append(f"{untimed:,} trace entries without `time_us` (a PyTorch before 2.1): "
                        "placed in recorded order, 1 µs apart")
    size = pl.col("size").fill_null(0)
    trace = trace.with_columns(
        pl.coalesce(pl.col("time_ns"), pl.col("seq") * 1000).alias("time_ns"),
        (size * pl.col("action").cast(pl.String).replace_strict(_GROWS_ALLOCATED, default=0, return_dtype=pl.Int64))
        .alias("bytes_delta"),
        (size * pl.col("action").cast(pl.String).replace_strict(_GROWS_RESERVED, default=0, return_dtype=pl.Int64))
        .alias("_dres"),
    ).sort("device", "time_ns", "seq")
    end = segments.group_by("device").agg(
        pl.col("size").filter(pl.col("state") != "free").sum().alias("_end_allocated"),
        pl.col("segment_size").filter(pl.col("segment_addr").is_first_distinct()).sum().alias("_end_reserved"),
    ) if segments.height else pl.DataFrame(schema={"device": pl.String, "_end_allocated": pl.Int64,
                                                   "_end_reserved": pl.Int64})
    trace = trace.join(end, on="device", how="left", maintain_order="left").with_columns(
        pl.col("_end_allocated").is_null().alias("relative"),
        pl.col("bytes_delta").cum_sum().over("device").alias("_sum_allocated"),
        pl.col("_dres").cum_sum().over("device").alias("_sum_reserved"),
    ).with_columns(
        (pl.col("_end_allocated").fill_null(pl.col("_sum_allocated").last().over("device"))
         - pl.col("_sum_allocated").last().over("device") + pl.col("_sum_allocated")).alias("allocated"),
        pl.when(pl.col("relative")).then(None).otherwise(
            pl.col("_end_reserved") - pl.col("_sum_reserved").last().over("device") + pl.col("_sum_reserved")
        ).alias("reserved"),
    )
    table = trace.select(pl.lit(rank, pl.Int32).alias("rank"), "device", "time_ns", "addr", "bytes_delta",
                         "allocated", "reserved", pl.lit(None, pl.String).alias("op"), "relative", "action",
                         "stream", "frame")
    return conform("device_memory", table), warnings
