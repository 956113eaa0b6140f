"""Pick a collector for each input by sniffing its content, then run them.

Files are recognised by what they contain, not by their name: the first
collector whose `sniff` accepts a file's (decompressed) head owns it. A folder
is walked, its recognised files are grouped per collector, and files nothing
recognises are kept as sources but not parsed.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema
from dashboard.collectors.archive_kind import archive_kind
from dashboard.collectors.base import (
    TRUNCATED_GZIP,
    Collected,
    Collector,
    IngestError,
    ProgressFn,
    StreamingCollector,
    gzip_is_truncated,
    no_progress,
    probe_file,
)
from dashboard.collectors.failures import describe_failure
from dashboard.collectors.validation import base_of_starts, drop_impossible_rows

_log = logging.getLogger(__name__)

# Order matters: the first collector that recognises a file owns it, so the
# most specific formats come first.
COLLECTOR_MODULES: tuple[str, ...] = (
    "dashboard.collectors.nsys.collector",
    "dashboard.collectors.tt.collector",
    # Before triton_ir: a trace's compile records hold Triton metadata JSON that the cache reader would take.
    "dashboard.collectors.tritonparse",
    "dashboard.collectors.triton_ir",
    "dashboard.collectors.triton_ws.collector",
    "dashboard.collectors.kineto.collector",
    "dashboard.collectors.tinygrad",
    "dashboard.collectors.torch_snapshot",
)

_extra: list[Collector] = []


def register(collector: Collector) -> None:
    """Add a collector (tests and plugins); it is consulted before the built-ins."""
    _extra.insert(0, collector)


def unregister(collector: Collector) -> None:
    if collector in _extra:
        _extra.remove(collector)


def collectors() -> list[Collector]:
    """Every collector, in the order they are consulted."""
    found: list[Collector] = list(_extra)
    for module_name in COLLECTOR_MODULES:
        found.append(importlib.import_module(module_name).COLLECTOR)
    return found


def _describe_expected() -> str:
    return "; ".join(c.description for c in collectors())


@dataclass
class Detection:
    """Which collector owns which files, and what was given but not recognised."""

    groups: dict[str, list[Path]] = field(default_factory=dict)
    by_name: dict[str, Collector] = field(default_factory=dict)
    ignored: list[Path] = field(default_factory=list)
    # Archives found in folders (by their bytes): ingest opens them like folders (`ingest.archives`).
    archives: list[Path] = field(default_factory=list)


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    sample = head[:4096]
    if not sample:
        return False
    text_like = sum(1 for byte in sample if byte >= 32 or byte in b"\n\r\t\f\b\x1b")
    return text_like / len(sample) < 0.85


def identify(path: Path, candidates: Sequence[Collector]) -> Collector | None:
    """The collector that recognises one file, or None."""
    probe = probe_file(path)
    for collector in candidates:
        if collector.sniff(probe):
            return collector
    return None


def _unrecognised_problem(path: Path) -> str:
    probe = probe_file(path)
    if probe.truncated or (probe.compressed and gzip_is_truncated(path)):
        return f"{TRUNCATED_GZIP}; what could be read is not a format any collector recognises"
    kind = "binary data" if _looks_binary(probe.head) else "text"
    gz = "gzip-compressed " if probe.compressed else ""
    return f"unknown format: {gz}{kind} that no collector recognises (expected {_describe_expected()})"


def _files_under(folder: Path) -> list[Path]:
    # Symlinks are never followed (rglob does not descend into linked folders; a linked
    # file is skipped here): a link could bring in any file the server can read.
    return sorted(
        p
        for p in folder.rglob("*")
        if not p.is_symlink() and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def detect(paths: Iterable[Path]) -> Detection:
    """Group the given files and folders by the collector that recognises them."""
    candidates = collectors()
    detection = Detection()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise IngestError(path, "no such file or folder")
        if path.is_dir():
            files = _files_under(path)
            if not files:
                raise IngestError(path, "the folder is empty")
            recognised = archives = 0
            for file in files:
                if file.stat().st_size == 0:
                    detection.ignored.append(file)
                    continue
                if archive_kind(file) is not None:
                    detection.archives.append(file)
                    archives += 1
                    continue
                collector = _identify_or_none(file, candidates)
                if collector is None:
                    detection.ignored.append(file)
                    continue
                recognised += 1
                detection.groups.setdefault(collector.name, []).append(file)
                detection.by_name[collector.name] = collector
            if not recognised and not archives:
                raise IngestError(
                    path,
                    f"nothing recognisable in this folder ({len(files)} files looked at; "
                    f"expected {_describe_expected()})",
                )
            continue
        if path.stat().st_size == 0:
            raise IngestError(path, "the file is empty")
        kind = archive_kind(path)
        if kind is not None:  # ingest (`ingest.archives`) opens archives before detection: a caller that did not
            raise IngestError(path, f"a {kind} archive: ingest it with `dashboard ingest` or the upload page, "
                                    "which open archives like folders")
        collector = identify(path, candidates)
        if collector is None:
            raise IngestError(path, _unrecognised_problem(path))
        detection.groups.setdefault(collector.name, []).append(path)
        detection.by_name[collector.name] = collector
    _kernel_sources_with_traces(detection)
    return detection


def _kernel_sources_with_traces(detection: Detection) -> None:
    """Python files defining kernels go with the tritonparse traces they sit beside, when the compiler-output
    reader has nothing else: a trace holds its kernels' IR and source, so the files are kept, not an error."""
    ir_files = detection.groups.get("triton_ir", [])
    if "tritonparse" not in detection.groups or not ir_files:
        return
    from dashboard.collectors.triton_ir import is_kernel_source  # the collector is loaded: its group exists

    if all(path.suffix == ".py" and is_kernel_source(probe_file(path).head) for path in ir_files):
        detection.groups["tritonparse"].extend(detection.groups.pop("triton_ir"))
        detection.by_name.pop("triton_ir", None)


def _identify_or_none(path: Path, candidates: Sequence[Collector]) -> Collector | None:
    # Inside a folder an unreadable stray file (a broken .gz beside good traces)
    # must not sink the whole folder; it is kept as a source and reported.
    try:
        return identify(path, candidates)
    except IngestError:
        return None


@dataclass
class CollectedRun:
    """Everything the store needs to write one run."""

    tables: dict[str, pl.DataFrame]
    metadata: dict[str, Any]
    collectors: list[str]
    warnings: list[str]
    parse_seconds: float
    ignored: list[Path]


def source_label(files: Sequence[Path]) -> str:
    """How warnings and errors name a group of files: the files, or how many and where when many."""
    if len(files) <= 3:
        return ", ".join(str(f) for f in files)
    parents = {Path(f).parent for f in files}
    folder = parents.pop() if len(parents) == 1 else Path(*_common_parts(files))
    return f"{len(files)} files in {folder}"


def _common_parts(files: Sequence[Path]) -> list[str]:
    parts = [Path(f).parent.parts for f in files]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return common or ["."]


class _CheckedStream:
    """A collector's streamed tables, each conformed, checked and handed to the sink as it arrives."""

    def __init__(self, label: str, sink: Callable[[str, pl.DataFrame], None]) -> None:
        self.label, self.sink = label, sink
        self.base: int | None = None
        self.warnings: list[str] = []

    def time_base(self, starts: Sequence[pl.Series]) -> None:
        self.base = base_of_starts(starts)

    def emit(self, table: str, frame: pl.DataFrame) -> None:
        checked, dropped = drop_impossible_rows({table: schema.conform(table, frame)}, self.label, self.base)
        self.warnings.extend(dropped)
        if checked[table].height:  # as `collect` leaves out empty tables
            self.sink(table, checked[table])


def _parse_group(collector: Collector, files: list[Path], progress: ProgressFn,
                 sink: Callable[[str, pl.DataFrame], None] | None = None) -> Collected:
    """One collector's files as canonical tables without impossible rows.

    With a `sink`, a collector that can stream (`collect_streaming`) hands its tables to it one by one
    as they are ready; the tables returned are then only those it did not stream.

    The safety net of the error contract: an IngestError passes as it is; any
    other exception (a parser bug, a library refusing a value) becomes an
    IngestError naming the files in plain words, its traceback logged for
    `--debug` and the server log.
    """
    label = source_label(files)
    stream_warnings: list[str] = []
    try:
        if sink is not None and isinstance(collector, StreamingCollector):
            stream = _CheckedStream(label, sink)
            result = collector.collect_streaming(files, progress, stream)
            stream_warnings = stream.warnings
        else:
            result = collector.collect(files, progress)
        tables = {table: schema.conform(table, frame) for table, frame in result.tables.items()}
        tables, dropped = drop_impossible_rows(tables, label)
    except IngestError:
        raise
    except Exception as exc:
        _log.error("%s: %s collector failed", label, collector.name, exc_info=True)
        reader = f"the {collector.description} reader"
        raise IngestError(label, describe_failure(exc, reader)) from exc
    return Collected(tables=tables, metadata=result.metadata, warnings=[*result.warnings, *stream_warnings, *dropped])


def collect(paths: Sequence[Path], progress: ProgressFn = no_progress,
            sink: Callable[[str, pl.DataFrame], None] | None = None) -> CollectedRun:
    """Detect and parse every input into one set of canonical tables.

    `sink` (table, frame) takes tables as soon as they are final, checked as the returned ones are, so
    that writing them overlaps the parse (`store.files.TableWriter.write`). Only a single group of inputs
    streams (tables of several collectors are joined at the end); the returned `tables` are the rest.
    """
    started = time.perf_counter()
    progress(0.0, "detecting formats")
    try:
        detection = detect(paths)
    except OSError as exc:  # unreadable file or folder (permissions, a vanished file)
        _log.error("detecting formats failed", exc_info=True)
        where = exc.filename or ", ".join(str(p) for p in paths)
        raise IngestError(where, describe_failure(exc)) from exc
    frames: dict[str, list[pl.DataFrame]] = {}
    metadata: dict[str, Any] = {}
    warnings = [f"{p}: not recognised, kept as a source but not parsed" for p in detection.ignored]
    groups = list(detection.groups.items())
    for position, (name, files) in enumerate(groups):
        collector = detection.by_name[name]
        low, high = position / len(groups), (position + 1) / len(groups)

        def scaled(fraction: float | None, message: str, low: float = low, high: float = high,
                   label: str = name) -> None:
            done = None if fraction is None else low + (high - low) * min(max(fraction, 0.0), 1.0)
            progress(done, f"{label}: {message}")

        result = _parse_group(collector, files, scaled, sink if len(groups) == 1 else None)
        for table, frame in result.tables.items():
            frames.setdefault(table, []).append(frame)
        if result.metadata:
            metadata[name] = result.metadata
        warnings.extend(result.warnings)
    tables = {t: f for t, parts in frames.items() if (f := pl.concat(parts, how="vertical")).height > 0}
    progress(1.0, "parsed")
    return CollectedRun(
        tables=tables,
        metadata=metadata,
        collectors=[name for name, _ in groups],
        warnings=warnings,
        parse_seconds=time.perf_counter() - started,
        ignored=detection.ignored,
    )
