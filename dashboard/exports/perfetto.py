"""A run's kernels, copies, ranges and API calls as Chrome-trace JSON for Perfetto / chrome://tracing.

Pure: canonical polars tables in, JSON bytes out; nothing here knows Flask or Dash.

The output is the legacy JSON trace format that Perfetto's importer reads:
`{"traceEvents": [...]}` with complete events (`ph: "X"`, `ts` and `dur` in
microseconds), flow events from each CUDA API call to the kernel or copy it
launched (`ph: "s"` / `"f"`), and metadata events (`ph: "M"`) that name the
tracks so they read "rank 0 · GPU 0" / "stream 7".

Tracks: one process per (rank, GPU) with pid = (rank + 1) * 1000 + device,
and one per rank's CPU side with pid = (rank + 1) * 1000 + 999 (pid 0 is the
idle task to Perfetto, so rank 0 starts at 1000). Threads are numbered 1, 2, …
within a process (Perfetto reads tids as 32-bit, CPU thread ids often are
not); the real stream or thread id is in the thread name. GPU-side ranges
(annotations) get their own lane next to their stream, because Perfetto
draws slices of one thread only when they nest, and an annotation need not
nest with the kernels of its stream.

Times: `ts` counts from the earliest event of the run (`otherData.origin_ns`),
so a float64 keeps nanosecond precision (epoch nanoseconds would not fit).
Events are written frame slice by frame slice with polars, so a run of
millions of kernels never becomes millions of Python dicts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

import msgspec
import polars as pl

from dashboard.analysis.timeline_flows import launch_pairs

TRACE_TABLES = ("kernels", "memcpy", "ranges", "api_calls")
PID_STRIDE = 1000  # pid = (rank + 1) * PID_STRIDE + device
CPU_SLOT = 999  # pid slot of a rank's CPU threads
UNKNOWN_GPU_SLOT = 998  # pid slot of GPU events whose device is unknown
CHUNK_ROWS = 50_000
_EVENT_COLUMNS = ("name", "cat", "ph", "ts", "dur", "pid", "tid", "args")
# Kinds of lane, as small integers per row (cheap to group a million of);
# LANE_NAMES turns them into thread names ('{}' is the stream or thread id).
STREAM, ANNOTATIONS, THREAD = 0, 1, 2
LANE_NAMES = {STREAM: "stream {}", ANNOTATIONS: "stream {} · annotations", THREAD: "thread {}"}


@dataclass
class TraceParts:
    """The trace as polars frames, ready to encode; counts are X events per source table."""

    origin_ns: int
    events: list[pl.DataFrame] = field(default_factory=list)
    metadata: list[pl.DataFrame] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    flows: int = 0

    @property
    def empty(self) -> bool:
        return not any(self.counts.values())


def _has_rows(tables: Mapping[str, pl.DataFrame], table: str) -> bool:
    frame = tables.get(table)
    return frame is not None and frame.height > 0


def _origin_ns(tables: Mapping[str, pl.DataFrame]) -> int:
    starts = [tables[t].get_column("start_ns").min() for t in TRACE_TABLES if _has_rows(tables, t)]
    present = [int(s) for s in starts if s is not None]  # type: ignore[arg-type]
    return min(present) if present else 0


def _gpu_pid(rank: pl.Expr, device: pl.Expr) -> pl.Expr:
    slot = device.cast(pl.Int64).fill_null(UNKNOWN_GPU_SLOT)
    return ((rank.cast(pl.Int64).fill_null(0) + 1) * PID_STRIDE + slot).alias("pid")


def _cpu_pid(rank: pl.Expr) -> pl.Expr:
    return ((rank.cast(pl.Int64).fill_null(0) + 1) * PID_STRIDE + CPU_SLOT).alias("pid")


def _lane(lane: pl.Expr, kind: int) -> list[pl.Expr]:
    """The thread a row is drawn on: its stream or OS thread (-1: unknown), numbered later per process.

    Only integers and a literal per row: the labels are made once per track.
    """
    return [lane.cast(pl.Int64).fill_null(-1).alias("lane"), pl.lit(kind, dtype=pl.Int8).alias("lane_kind")]


def _timing(origin_ns: int) -> list[pl.Expr]:
    # Microseconds as float64 from the run's first event: exact to the nanosecond.
    ts = (pl.col("start_ns") - origin_ns) / 1000.0
    dur = (pl.col("end_ns") - pl.col("start_ns")).clip(lower_bound=0).fill_null(0) / 1000.0
    return [ts.alias("ts"), dur.alias("dur")]


def _name(column: str = "name", fallback: str = "(unnamed)") -> pl.Expr:
    return pl.col(column).fill_null(fallback).alias("name")


def _kernel_rows(frame: pl.DataFrame, origin_ns: int) -> pl.DataFrame:
    args = pl.struct(
        pl.col("correlation"),
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        "registers", "shared_memory", "op", "layer", "pass", "flops", "stream", "device",
    )
    return frame.select(
        _name(), pl.lit("kernel").alias("cat"), *_timing(origin_ns),
        _gpu_pid(pl.col("rank"), pl.col("device")), *_lane(pl.col("stream"), STREAM),
        args.alias("args"), "rank", "correlation",
    )


def _memcpy_rows(frame: pl.DataFrame, origin_ns: int) -> pl.DataFrame:
    kind = pl.col("kind").fill_null("copy")
    name = pl.when(kind == "Memset").then(pl.lit("Memset")).otherwise(pl.format("Memcpy {}", kind))
    args = pl.struct("kind", "bytes", "src_kind", "dst_kind", "correlation", "op", "layer", "pass",
                     "stream", "device")
    return frame.select(
        name.alias("name"), pl.lit("memcpy").alias("cat"), *_timing(origin_ns),
        _gpu_pid(pl.col("rank"), pl.col("device")), *_lane(pl.col("stream"), STREAM),
        args.alias("args"), "rank", "correlation",
    )


def _range_rows(frame: pl.DataFrame, origin_ns: int) -> pl.DataFrame:
    on_gpu = pl.col("device").is_not_null()
    args = pl.struct("category", "depth", "layer", "pass", "sequence", "flops", "correlation", "id", "parent",
                     "thread")
    return frame.select(
        _name(), pl.col("category").fill_null("range").alias("cat"), *_timing(origin_ns),
        pl.when(on_gpu).then(_gpu_pid(pl.col("rank"), pl.col("device"))).otherwise(_cpu_pid(pl.col("rank")))
        .alias("pid"),
        pl.col("thread").cast(pl.Int64).fill_null(-1).alias("lane"),
        pl.when(on_gpu).then(pl.lit(ANNOTATIONS, dtype=pl.Int8)).otherwise(pl.lit(THREAD, dtype=pl.Int8))
        .alias("lane_kind"),
        args.alias("args"), "rank", "correlation",
    )


def _api_rows(frame: pl.DataFrame, origin_ns: int) -> pl.DataFrame:
    return frame.select(
        _name(), pl.col("category").fill_null("cuda_api").alias("cat"), *_timing(origin_ns),
        _cpu_pid(pl.col("rank")), *_lane(pl.col("thread"), THREAD),
        pl.struct("category", "correlation", "thread").alias("args"), "rank", "correlation",
    )


_ROW_BUILDERS = {"kernels": _kernel_rows, "memcpy": _memcpy_rows, "ranges": _range_rows, "api_calls": _api_rows}


def _number_threads(rows: list[pl.DataFrame]) -> pl.DataFrame:
    """Every (process, lane) once, named, with tid 1, 2, … in stream / thread order within its process."""
    tracks = (
        pl.concat([r.select("pid", "lane_kind", "lane") for r in rows])
        .unique()
        .sort("pid", "lane", "lane_kind")
    )
    rank = pl.col("pid") // PID_STRIDE - 1
    slot = pl.col("pid") % PID_STRIDE
    side = (pl.when(slot == CPU_SLOT).then(pl.lit("CPU"))
            .when(slot == UNKNOWN_GPU_SLOT).then(pl.lit("GPU ?"))
            .otherwise(pl.format("GPU {}", slot)))
    lane = pl.when(pl.col("lane") < 0).then(pl.lit("?")).otherwise(pl.col("lane").cast(pl.String))
    template = pl.col("lane_kind").replace_strict(LANE_NAMES, return_dtype=pl.String)
    thread = template.str.replace("{}", lane, literal=True)
    return tracks.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("pid").alias("tid"),
        pl.format("rank {} · {}", rank, side).alias("process_label"),
        thread.alias("thread_label"),
    )


def _metadata_events(tracks: pl.DataFrame) -> list[pl.DataFrame]:
    # One frame per kind: their args structs differ (name vs sort_index).
    processes = tracks.unique("pid").sort("pid")
    return [
        processes.select(pl.lit("process_name").alias("name"), pl.lit("M").alias("ph"), "pid",
                         pl.lit(0, dtype=pl.Int64).alias("tid"), pl.struct(name="process_label").alias("args")),
        processes.select(pl.lit("process_sort_index").alias("name"), pl.lit("M").alias("ph"), "pid",
                         pl.lit(0, dtype=pl.Int64).alias("tid"), pl.struct(sort_index="pid").alias("args")),
        tracks.select(pl.lit("thread_name").alias("name"), pl.lit("M").alias("ph"), "pid", "tid",
                      pl.struct(name="thread_label").alias("args")),
        tracks.select(pl.lit("thread_sort_index").alias("name"), pl.lit("M").alias("ph"), "pid", "tid",
                      pl.struct(sort_index="tid").alias("args")),
    ]


def _flow_events(launched: list[pl.DataFrame], api: pl.DataFrame) -> list[pl.DataFrame]:
    """An arrow from each CUDA API call to the kernel or copy it launched (`launch_pairs`, as /timeline)."""
    callers = api.select("rank", "correlation", pl.col("ts").alias("s_ts"), pl.col("pid").alias("s_pid"),
                         pl.col("tid").alias("s_tid"))
    targets = pl.concat([frame.select("rank", "correlation", "ts", "pid", "tid") for frame in launched])
    pairs = launch_pairs(callers, targets).with_row_index("id")
    if pairs.height == 0:
        return []
    common = [pl.lit("launch").alias("name"), pl.lit("launch").alias("cat"), pl.col("id").cast(pl.Int64)]
    starts = pairs.select(*common, pl.lit("s").alias("ph"), pl.col("s_ts").alias("ts"),
                          pl.col("s_pid").alias("pid"), pl.col("s_tid").alias("tid"))
    finishes = pairs.select(*common, pl.lit("f").alias("ph"), pl.lit("e").alias("bp"), "ts", "pid", "tid")
    return [starts, finishes]


def trace_parts(tables: Mapping[str, pl.DataFrame], flows: bool = True) -> TraceParts:
    """The trace of the kernel-side tables present in `tables`, as frames of events."""
    origin = _origin_ns(tables)
    built: dict[str, pl.DataFrame] = {
        table: builder(tables[table].filter(pl.col("start_ns").is_not_null()), origin)
        for table, builder in _ROW_BUILDERS.items() if _has_rows(tables, table)
    }
    parts = TraceParts(origin_ns=origin, counts={table: rows.height for table, rows in built.items()})
    if not built:
        return parts
    tracks = _number_threads(list(built.values()))
    numbered = {
        table: rows.join(tracks.select("pid", "lane_kind", "lane", "tid"), on=["pid", "lane_kind", "lane"],
                         how="left", maintain_order="left")
        for table, rows in built.items()
    }
    for rows in numbered.values():
        parts.events.append(rows.with_columns(pl.lit("X").alias("ph")).select(_EVENT_COLUMNS))
    if flows and "api_calls" in numbered:
        launched = [numbered[t] for t in ("kernels", "memcpy") if t in numbered]
        if launched:
            flow_frames = _flow_events(launched, numbered["api_calls"])
            parts.flows = flow_frames[0].height if flow_frames else 0
            parts.events.extend(flow_frames)
    parts.metadata = _metadata_events(tracks)
    return parts


def _json_array_body(frame: pl.DataFrame, chunk_rows: int) -> Iterator[bytes]:
    """The rows of `frame` as JSON objects joined by commas, without the enclosing brackets."""
    for offset in range(0, frame.height, chunk_rows):
        text = frame.slice(offset, chunk_rows).write_json()
        yield text[1:-1].encode("utf-8")


def encode_trace(tables: Mapping[str, pl.DataFrame], run_id: str | None = None, flows: bool = True,
                 chunk_rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The trace as JSON, in chunks (stream them to a response or a file).

    The events are built before this returns, so a failure surfaces here and
    not halfway through a streamed response.
    """
    parts = trace_parts(tables, flows=flows)
    return _encode_parts(parts, run_id, chunk_rows)


def _encode_parts(parts: TraceParts, run_id: str | None, chunk_rows: int) -> Iterator[bytes]:
    other = {"exporter": "dashboard", "run": run_id or "", "origin_ns": str(parts.origin_ns),
             "time_base": "ts and dur are microseconds since origin_ns"}
    yield b'{"displayTimeUnit":"ns","otherData":' + msgspec.json.encode(other) + b',"traceEvents":['
    first = True
    for frame in parts.metadata + parts.events:
        for body in _json_array_body(frame, chunk_rows):
            if not body:
                continue
            yield body if first else b"," + body
            first = False
    yield b"]}\n"


def write_trace(tables: Mapping[str, pl.DataFrame], out: BinaryIO, run_id: str | None = None,
                flows: bool = True) -> int:
    """Write the trace to a binary file object; returns the bytes written."""
    written = 0
    for chunk in encode_trace(tables, run_id=run_id, flows=flows):
        out.write(chunk)
        written += len(chunk)
    return written
