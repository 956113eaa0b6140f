"""Decode one Kineto trace file into column-wise polars frames, fast.

The document is one JSON object, so it cannot be streamed; but the
`traceEvents` array can be cut into chunks and decoded chunk by chunk, which
bounds the memory held in per-event Python objects to one chunk:

1. one msgspec pass over the whole document validates it (a truncated file is
   caught here, before any work) and yields the top-level metadata plus the
   exact byte span of `traceEvents` (a `msgspec.Raw`, no per-event objects);
2. the array is cut at `}` `,` `{` boundaries; a cut that falls inside a
   string or a nested object makes a chunk invalid JSON, in which case the
   file is re-cut exactly by decoding the array as a list of `Raw` values;
3. each chunk is decoded into small `msgspec.Struct`s that hold only the
   fields the canonical tables need (unknown fields are skipped in C),
   bucketed by category, and turned into polars frames column by column.

Chunks decode with strict, fast types first; a chunk whose values have other
types (string tids, string timestamps, odd args) is decoded again with
lenient types (see `columns`), and a chunk that still fails is decoded
event by event, skipping and counting the events that are not objects.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from dashboard.collectors.base import IngestError, read_source_bytes
from dashboard.collectors.failures import msgspec_offset
from dashboard.collectors.gc_pause import gc_paused
from dashboard.collectors.kineto.census import PROFILER_MARKER_CATEGORY, PROFILER_MARKERS
from dashboard.collectors.kineto.columns import (
    API_CATEGORIES,
    FLOW_CATEGORIES,
    GPU_CATEGORIES,
    IGNORED_CATEGORIES,
    MEMORY_CATEGORIES,
    MEMORY_CATEGORY,
    MEMORY_PHASES,
    RawColumns,
    group_events,
)
from dashboard.collectors.kineto.event_types import (
    FAST,
    LENIENT,
    LENIENT_DEFAULT_ARGS,
    ONE_LENIENT,
    RAW_LIST,
    TOP_DECODER,
    Top,
)
from dashboard.collectors.kineto.frames import api_frame, flow_frame, gpu_frame, memory_frame, range_frame

# Events decoded at a time. 4 MB (~14 k events, ~7 MB of small objects) rather than 8: on the benchmark
# trace a 100 MB range decoded in 0.55-0.58 s with 17 k page faults against 0.62-0.75 s with 36-60 k
# at 8 MB (each chunk's objects are freed before the next, and bigger chunks took fresh pages for
# them each time); at 2-3 MB the per-chunk overhead starts to show.
CHUNK_BYTES = 4 * 1024 * 1024
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BOM = b"\xef\xbb\xbf"
_REPLACEMENT = "\ufffd"
NOT_UTF8 = "byte sequences that are not UTF-8 text, replaced by U+FFFD"
TOO_DEEP = "JSON nested too deeply to read (more than ~1,000 levels of brackets)"




@dataclass
class DecodedTrace:
    """One file's events as frames (times still in µs) plus its top-level metadata."""

    path: Path
    top: dict[str, Any]
    frames: dict[str, pl.DataFrame]  # "gpu", "api", "range", "flow", "memory"
    events: int = 0
    lenient: bool = False
    ignored: int = 0  # instants other than `[memory]`, metadata and flows other than fwdbwd
    problems: Counter[str] = field(default_factory=Counter)
    # Events per "category<TAB>ph" (category normalised, "" when absent): what the file holds.
    categories: Counter[str] = field(default_factory=Counter)


def _json_kind(data: bytes | memoryview) -> str:
    first = bytes(data[:64]).lstrip()[:1]
    kinds = {b"[": "an array", b'"': "a string", b"t": "a boolean", b"f": "a boolean", b"n": "null"}
    return kinds.get(first, "a number")


def decode_top(path: Path, data: bytes | memoryview) -> Top:
    if not bytes(data[:4096]).strip() and not bytes(data).strip():
        raise IngestError(path, "the file is empty")
    try:
        return TOP_DECODER.decode(data)
    except msgspec.ValidationError:  # valid JSON of the wrong shape (a subclass of DecodeError)
        raise IngestError(
            path, f"not a Kineto trace: expected a JSON object with `traceEvents`, found {_json_kind(data)}"
        ) from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise IngestError(path, "truncated JSON: the file ends before the trace document does") from None
        offset = msgspec_offset(exc)
        where = "" if offset is None else f" (where: byte offset {offset:,})"
        raise IngestError(path, f"not valid JSON{where}") from None
    except RecursionError:
        raise IngestError(path, TOO_DEEP) from None


def _bracketed(body: memoryview) -> bytearray:
    """`[` body `]` with a single copy of the body."""
    chunk = bytearray(len(body) + 2)
    chunk[0] = ord("[")
    chunk[1:-1] = body
    chunk[-1] = ord("]")
    return chunk


def event_spans(buffer: Any, start: int, stop: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of runs of whole events in `buffer[start:stop]`, cut at `}` `,` `{` near every `size` bytes.

    `buffer[start:stop]` holds comma-separated events (no brackets). A cut
    that falls inside a string or a nested object makes its run invalid JSON,
    which the decoder then reports, so a wrong cut is never silently accepted.
    """
    while start < stop:
        target = start + size
        match = _BOUNDARY.search(buffer, target, stop) if target < stop else None
        if match is None:
            yield start, stop
            return
        yield start, match.start() + 1
        start = match.end() - 1


def _chunks_by_boundary(events: memoryview) -> Iterator[tuple[bytearray, float]]:
    """The `[` ... `]` array cut into bracketed chunks near every CHUNK_BYTES; (chunk, fraction done)."""
    end = len(events) - 1
    for first, last in event_spans(events, 1, end, CHUNK_BYTES):
        yield _bracketed(events[first:last]), last / end


def _chunks_exact(events: memoryview) -> Iterator[tuple[bytes, float]]:
    """Exact cuts from a `Raw` per event: slower, but immune to odd content."""
    raws = RAW_LIST.decode(events)
    step = 20_000
    for first in range(0, len(raws), step):
        yield b"[" + b",".join(raws[first : first + step]) + b"]", min(1.0, (first + step) / len(raws))


def decode_chunk(chunk: bytes | bytearray | memoryview, trace: DecodedTrace) -> list[Any]:
    if not trace.lenient:
        try:
            return FAST.decode(chunk)
        except msgspec.ValidationError:
            trace.lenient = True  # the rest of this file uses lenient types
    try:
        return LENIENT.decode(chunk)
    except msgspec.ValidationError:
        pass
    events: list[Any] = []
    for raw in RAW_LIST.decode(chunk):
        try:
            events.append(ONE_LENIENT.decode(raw))
        except msgspec.ValidationError:
            trace.problems["events that are not JSON objects (skipped)"] += 1
    return events


def _count_profiler_markers(trace: DecodedTrace, category: str | None, ph: str, group: Sequence[Any]) -> None:
    """Move the profiler's bookkeeping instants (census.PROFILER_MARKERS) to their own census key."""
    markers = sum(1 for event in group if getattr(event, "name", None) in PROFILER_MARKERS)
    if markers:
        key = f"{category or ''}\t{ph}"
        trace.categories[key] -= markers
        if trace.categories[key] == 0:
            del trace.categories[key]
        trace.categories[f"{PROFILER_MARKER_CATEGORY}\t{ph}"] += markers


def frames_of_chunk(events: list[Any], trace: DecodedTrace, parts: dict[str, list[pl.DataFrame]]) -> None:
    lenient = trace.lenient
    if lenient:
        events = [event if event.args is not None else _with_default_args(event) for event in events]
    for category, ph, group in group_events(events, lenient):
        trace.categories[f"{category or ''}\t{ph or ''}"] += len(group)  # one count per group, not per event
        if ph in MEMORY_PHASES:
            _count_profiler_markers(trace, category, ph, group)
        if category in FLOW_CATEGORIES:
            if category == "fwdbwd" and ph in ("s", "f"):
                parts["flow"].append(flow_frame(RawColumns(group, lenient, trace.problems)))
            else:
                trace.ignored += len(group)
            continue
        if ph in MEMORY_PHASES and category in MEMORY_CATEGORIES:
            memory = memory_frame(RawColumns(group, lenient, trace.problems))
            if memory.height:
                parts["memory"].append(memory)
                # Counted apart from the other instants, which stay ignored (see census.py).
                key = f"{category or ''}\t{ph or ''}"
                trace.categories[key] -= memory.height
                if trace.categories[key] == 0:
                    del trace.categories[key]
                trace.categories[f"{MEMORY_CATEGORY}\t{ph}"] += memory.height
            trace.ignored += len(group) - memory.height
            continue
        # Other instants, metadata (`M`) and the profiler span carry no
        # interval the tables need.
        if ph != "X" or category in IGNORED_CATEGORIES:
            trace.ignored += len(group)
            continue
        columns = RawColumns(group, lenient, trace.problems)
        if category in GPU_CATEGORIES:
            parts["gpu"].append(gpu_frame(columns, category))
        elif category in API_CATEGORIES:
            parts["api"].append(api_frame(columns, category))
        else:
            parts["range"].append(range_frame(columns, category))


def top_fields(top: Any) -> dict[str, Any]:
    """The top-level fields a run keeps, without the event list."""
    return {
        name: getattr(top, name)
        for name in Top.__struct_fields__
        if name != "traceEvents" and getattr(top, name) is not None
    }


def _with_default_args(event: Any) -> Any:
    return msgspec.structs.replace(event, args=LENIENT_DEFAULT_ARGS)


def decode_file(path: Path, progress: Callable[[float], None] = lambda fraction: None) -> DecodedTrace:
    """Read, validate and decode one trace file (gzip or plain JSON).

    Text that is not UTF-8 (a cut multi-byte character in a kernel name) is
    replaced by U+FFFD and counted rather than refused: the rest of the trace
    is good. The check costs nothing on valid files: only a decode that
    failed on it pays for the repair.
    """
    data: bytes | memoryview = read_source_bytes(path)
    if data[:3] == _BOM:  # a UTF-8 byte order mark, which JSON parsers refuse
        data = memoryview(data)[3:]
    try:
        return _decode_document(path, data, progress)
    except UnicodeDecodeError:
        pass
    raw = bytes(data)
    del data
    try:
        raw.decode("utf-8")
        first_bad = None
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    text = raw.decode("utf-8", errors="replace")
    replaced = text.count(_REPLACEMENT) - raw.count(_REPLACEMENT.encode())
    del raw
    trace = _decode_document(path, text.encode(), progress)
    where = "" if first_bad is None else f" (first at byte offset {first_bad:,})"
    trace.problems[NOT_UTF8 + where] += max(replaced, 1)
    return trace


def _decode_document(path: Path, data: bytes | memoryview, progress: Callable[[float], None]) -> DecodedTrace:
    with gc_paused():
        top = decode_top(path, data)
        events = memoryview(top.traceEvents)
        if len(events) == 0:
            raise IngestError(path, "not a Kineto trace: the JSON object has no `traceEvents` array")
        first = bytes(events[:1])
        if first != b"[":
            raise IngestError(path, "not a Kineto trace: `traceEvents` is not an array")
        trace = DecodedTrace(
            path=path,
            top=top_fields(top),
            frames={},
        )
        try:
            parts = _decode_events(events, trace, progress)
        except RecursionError:
            raise IngestError(path, f"an event's {TOO_DEEP}") from None
        del events, top, data
    trace.frames = {
        kind: pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
        for kind, frames in parts.items()
    }
    return trace


def _decode_events(
    events: memoryview, trace: DecodedTrace, progress: Callable[[float], None]
) -> dict[str, list[pl.DataFrame]]:
    for chunker in (_chunks_by_boundary, _chunks_exact):
        parts: dict[str, list[pl.DataFrame]] = {"gpu": [], "api": [], "range": [], "flow": [], "memory": []}
        trace.events = trace.ignored = 0
        trace.problems.clear()
        trace.categories.clear()
        try:
            for chunk, done in chunker(events):
                decoded = decode_chunk(chunk, trace)
                trace.events += len(decoded)
                frames_of_chunk(decoded, trace, parts)
                progress(done)
        except msgspec.DecodeError:
            continue  # a cut fell inside a string or object: cut exactly instead
        return parts
    raise AssertionError("unreachable: exact chunks of a valid array always decode")
