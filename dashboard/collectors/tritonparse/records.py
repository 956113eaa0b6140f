"""tritonparse trace lines -> typed records (msgspec), one line at a time.

A trace is NDJSON: one JSON object per line with an `event_type`. Raw traces
(`tritonparse.structured_logging`) hold `compilation` (every stage's IR in
`payload.file_content`, the metadata, the kernel's Python source), `launch`
(grid, stream, `compilation_metadata`, `extracted_args`) and `autotune` (the
autotuner's verdict: `best_config`, `configs_timings`). The parsed form
(`tritonparse.parse`, `*_mapped.ndjson.gz`) keeps those and adds
`ir_analysis`, `roofline`, `launch_diff`, `autotune_analysis` (the winner of
each autotuning session) and `autotune_summary`. Format reference: tritonparse's
own writer and parser (`structured_logging.py`, `parse/trace_processor.py`,
`parse/event_diff.py`).

Each line is decoded into a Struct that names only the fields used, so msgspec
skips the rest in C (a launch record's compilation metadata is read for its hash
and nothing else). The IR of a compile stays a `Raw` until the collector takes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from dashboard.collectors.base import TRUNCATED_GZIP, IngestError, open_source

# Records the collector reads, and those it knows and leaves (their content is derived from the others).
READ = frozenset({"compilation", "launch", "autotune", "autotune_analysis"})
KNOWN = READ | {"ir_analysis", "roofline", "launch_diff", "autotune_summary"}
MAX_LINE_BYTES = 1 << 30  # a line longer than this is no record (a compile's IR is megabytes at most)


class _Kind(msgspec.Struct):
    event_type: Any = None


class PythonSource(msgspec.Struct):
    file_path: Any = None
    start_line: Any = None
    code: Any = None


class CompilePayload(msgspec.Struct):
    metadata: dict[str, Any] = {}
    file_content: dict[str, Any] = {}
    file_path: dict[str, Any] = {}
    python_source: PythonSource | None = None


class Compilation(msgspec.Struct):
    payload: CompilePayload


class LaunchMeta(msgspec.Struct):
    hash: Any = None
    name: Any = None


class Launch(msgspec.Struct):
    occurrence_id: Any = None  # the parsed form's record number (autotune sessions name launches by it)
    name: Any = None
    grid: Any = None
    stream: Any = None
    compilation_metadata: LaunchMeta | None = None
    extracted_args: Any = None


class Autotune(msgspec.Struct):
    kernel_name: Any = None
    best_config: Any = None
    configs_timings: Any = None
    duration: Any = None
    cache_hit: Any = None
    autotune_key: Any = None


class AutotuneResult(msgspec.Struct):
    best_config: Any = None
    configs_timings: Any = None
    benchmark_duration: Any = None
    cache_hit: Any = None


class AutotuneAnalysis(msgspec.Struct):
    name: Any = None
    session_id: Any = None
    winner_compilation_hash: Any = None
    autotune_result: AutotuneResult | None = None  # only where Triton has the autotune listener (3.7+)
    compilation_analysis: Any = None  # {"configs": [{"compilation_config_params", "compilation_hash"}]}
    launch_occurrence_ids: Any = None  # {"benchmark": [...], "winner": [...]}
    cache_usage: Any = None


_TYPES: dict[str, type] = {"compilation": Compilation, "launch": Launch, "autotune": Autotune,
                           "autotune_analysis": AutotuneAnalysis}
_KIND = msgspec.json.Decoder(_Kind)
# A line msgspec cannot turn into its record: not JSON, bytes that are not UTF-8, nesting past its depth, or
# a known record whose fields have the wrong types.
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)
_DECODERS = {name: msgspec.json.Decoder(kind) for name, kind in _TYPES.items()}


@dataclass
class Line:
    number: int  # 1-based line of the trace
    kind: str
    record: Any


@dataclass
class Census:
    """What a trace held beside the records read: counted for one warning each."""

    unknown: dict[str, int] = field(default_factory=dict)  # event_type -> lines
    damaged: int = 0  # lines that are not a JSON object with an `event_type`, or a known record of the wrong shape
    first_damaged: int | None = None
    records: int = 0

    def damage(self, number: int) -> None:
        self.damaged += 1
        if self.first_damaged is None:
            self.first_damaged = number


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        handle = open_source(path)
    except OSError as exc:
        raise IngestError(path, f"cannot read ({exc.strerror})") from None
    with handle:
        number = 0
        try:
            while line := handle.readline(MAX_LINE_BYTES):
                number += 1
                if len(line) >= MAX_LINE_BYTES and not line.endswith(b"\n"):
                    raise IngestError(path, f"line {number} is longer than {MAX_LINE_BYTES >> 20} MiB: not a "
                                            "tritonparse record")
                yield number, line
        except EOFError:
            raise IngestError(path, TRUNCATED_GZIP) from None


def read_records(path: Path, census: Census) -> Iterator[Line]:
    """Every record of the kinds in READ, in order; other lines are counted in `census`."""
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            kind = _KIND.decode(line).event_type
        except _UNREADABLE:
            census.damage(number)
            continue
        if not isinstance(kind, str):
            census.damage(number)
            continue
        census.records += 1
        if kind not in KNOWN:
            census.unknown[kind] = census.unknown.get(kind, 0) + 1
            continue
        if kind not in READ:
            continue
        try:
            record = _DECODERS[kind].decode(line)
        except _UNREADABLE:
            census.damage(number)
            continue
        yield Line(number, kind, record)


def looks_like_trace(head: bytes) -> bool:
    """The first line is a JSON object naming a tritonparse event."""
    first = head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf \t\r")
    if not first.startswith(b"{") or b'"event_type"' not in first[:4096]:
        return False
    return any(f'"event_type": "{kind}"'.encode() in first or f'"event_type":"{kind}"'.encode() in first
               for kind in KNOWN)
