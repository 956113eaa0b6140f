"""The contract between collectors and the store.

A collector recognises its sources by content (`sniff`) and turns a list of
them into canonical tables (`collect`). It never plots and never imports Dash.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

import polars as pl

SNIFF_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"

TRUNCATED_GZIP = "truncated gzip stream (the file ends before the compressed data does)"
CORRUPT_GZIP = "corrupt gzip data (the compressed stream is damaged)"

# progress(fraction_done in [0, 1] or None when unknown, message)
ProgressFn = Callable[[float | None, str], None]


def no_progress(fraction: float | None, message: str) -> None:
    """A progress sink that discards updates."""


class IngestError(Exception):
    """A source could not be read. The message names the file and the problem."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


@dataclass(frozen=True)
class Probe:
    """What a collector may look at to decide whether a file is its own."""

    path: Path
    head: bytes  # the first SNIFF_BYTES, decompressed when the file is gzip
    compressed: bool
    truncated: bool = False  # a gzip stream that ends before its end-of-stream marker

    @property
    def text(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    @property
    def name(self) -> str:
        """The file name without a trailing `.gz`."""
        name = self.path.name
        return name[:-3] if name.endswith(".gz") else name


@dataclass
class Collected:
    """Canonical tables from one collector, plus run-level metadata."""

    tables: dict[str, pl.DataFrame]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class Collector(Protocol):
    name: str  # short id, e.g. "kineto"
    description: str  # one line for error messages and docs

    def sniff(self, probe: Probe) -> bool:
        """True when the file looks like this collector's format."""
        ...

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        """Parse every source (all sniffed as this collector's) into canonical tables.

        Raise IngestError naming the file and the problem for bad input.
        """
        ...


class TableStream(Protocol):
    """Where a streaming collector hands each canonical table over as soon as it is final.

    The registry gives one when the run is written as it is parsed (`registry.collect`'s `sink`):
    each table is then checked and written while the collector builds the next, and its memory freed.
    """

    def time_base(self, starts: Sequence[pl.Series]) -> None:
        """The start times (ns) of every row the tables will hold, before the first `emit`: the time the
        trace is near, against which each table's rows are checked (`validation.drop_impossible_rows`)."""
        ...

    def emit(self, table: str, frame: pl.DataFrame) -> None:
        """One final table (each name once); the collector keeps no reference to it."""
        ...


@runtime_checkable
class StreamingCollector(Collector, Protocol):
    def collect_streaming(self, sources: Sequence[Path], progress: ProgressFn, stream: TableStream) -> Collected:
        """`collect`, handing tables to `stream` as they are ready; the returned tables are those not emitted."""
        ...


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_source(path: Path) -> BinaryIO:
    """Open a source for reading, decompressing gzip transparently (by magic, not name)."""
    if is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def read_source_bytes(path: Path) -> bytes:
    """The whole (decompressed) content of a source, with clear errors for broken gzip."""
    try:
        with open_source(path) as handle:
            return handle.read()
    except EOFError:
        raise IngestError(path, TRUNCATED_GZIP) from None
    except (gzip.BadGzipFile, zlib.error):
        raise IngestError(path, CORRUPT_GZIP) from None


def probe_file(path: Path) -> Probe:
    """Read the head of a file for sniffing; a gzip file is decompressed as far as it goes."""
    compressed = is_gzip(path)
    if not compressed:
        with open(path, "rb") as handle:
            return Probe(path, handle.read(SNIFF_BYTES), False)
    # Decompress only as far as the sniff window needs; a truncated stream still
    # yields its first bytes so the format can be named in the error.
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    head = bytearray()
    ended_early = False
    with open(path, "rb") as handle:
        while len(head) < SNIFF_BYTES:
            chunk = handle.read(64 * 1024)
            if not chunk:
                ended_early = not decompressor.eof
                break
            try:
                head += decompressor.decompress(chunk, SNIFF_BYTES - len(head))
            except zlib.error:
                raise IngestError(path, CORRUPT_GZIP) from None
            if decompressor.eof:
                break
    return Probe(path, bytes(head), True, truncated=ended_early)


def gzip_is_truncated(path: Path) -> bool:
    """True when a gzip file ends before its end-of-stream marker (reads the whole file)."""
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            try:
                decompressor.decompress(chunk, 1 << 16)
                while decompressor.unconsumed_tail:
                    decompressor.decompress(decompressor.unconsumed_tail, 1 << 16)
            except zlib.error:
                return True
            if decompressor.eof:
                return False
    return not decompressor.eof
