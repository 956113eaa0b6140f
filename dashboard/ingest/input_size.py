"""How big an ingest's inputs are, from the bytes actually read: never from a number the uploader wrote.

A gzip file's trailer says how big its content is, and an uploader writes the trailer: a 1 MiB file with
a forged one once got a budget of 4,156 s and 41,984 MB. So a budget starts from the bytes on disk
(which the server counted as they arrived), and a gzip input is measured by decompressing it as a
stream and counting, with a hard cap: it may expand to at most `ratio` times its compressed size (at
least `floor` bytes) and `absolute` bytes in all. A decompression bomb (1 MiB of zeros that would be
1 GiB) is stopped once it passes the cap, after a fraction of a second, before anything parses it or
writes it out. Symbolic links are neither counted nor read (ingest refuses or skips them). A tinygrad
VIZ pickle counts HEAVY_PICKLE_WEIGHT times its bytes, on disk and measured alike.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from dashboard.collectors.base import CORRUPT_GZIP, GZIP_MAGIC, IngestError, probe_file
from dashboard.collectors.tinygrad import COLLECTOR as TINYGRAD

MB = 1024 * 1024
DEFAULT_MAX_RATIO = 200.0  # real traces and IR dumps measured 14x to 52x (../shared/samples)
DEFAULT_FLOOR_BYTES = 64 * MB
_READ_BYTES = 1 << 20
_OUT_BYTES = 4 << 20
# A tinygrad VIZ pickle counts this many times its size: it unpickles to ~19 bytes of Python objects and
# tables per byte at its peak (benchmarks/tinygrad_ingest.py) and ~0.45 s of CPU per MB, where the per-MB
# shares were measured on JSON traces (~10 bytes per byte); counted at its size, a 100 MB rewrites.pkl
# would be stopped at its budget.
HEAVY_PICKLE_WEIGHT = 2.5


def weight(file: Path) -> float:
    """How many times its bytes a file counts in a budget: HEAVY_PICKLE_WEIGHT for a tinygrad pickle."""
    try:
        return HEAVY_PICKLE_WEIGHT if TINYGRAD.sniff(probe_file(file)) else 1.0
    except (OSError, EOFError, IngestError, gzip.BadGzipFile, zlib.error):
        return 1.0


def input_files(paths: Sequence[Path]) -> Iterator[Path]:
    """Every regular file of the inputs (folders walked), links left out."""
    for path in paths:
        if path.is_symlink():
            continue
        if path.is_file():
            yield path
        elif path.is_dir():
            for folder, folders, names in os.walk(path, followlinks=False):
                folders.sort()
                for name in sorted(names):
                    file = Path(folder) / name
                    if not file.is_symlink() and file.is_file():
                        yield file


def weighted_bytes_on_disk(paths: Sequence[Path]) -> int:
    """The inputs' size as stored: what the server received (links not counted), each file weighted."""
    return int(sum(file.stat().st_size * weight(file) for file in input_files(paths)))


@dataclass(frozen=True)
class ExpansionLimit:
    """How far a compressed input may expand: `ratio` x its size (at least `floor` bytes), `absolute` in all."""

    ratio: float = DEFAULT_MAX_RATIO
    floor: int = DEFAULT_FLOOR_BYTES
    absolute: int | None = None
    hint: str = "DASHBOARD_INGEST_MAX_EXPANSION"

    def for_file(self, compressed: int) -> int:
        return max(self.floor, int(self.ratio * compressed))


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def gzip_content_bytes(path: Path, cap: int) -> int:
    """The decompressed size of a gzip file (every member), counted as a stream; stops once past `cap`
    and returns what it counted then (> cap). A truncated stream counts what it yields (the parser words
    the truncation); a corrupt one is an IngestError."""
    total = 0
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BYTES):
            data = chunk
            while data:
                try:
                    out = decompressor.decompress(data, _OUT_BYTES)
                except zlib.error:
                    raise IngestError(path, CORRUPT_GZIP) from None
                total += len(out)
                if total > cap:
                    return total
                if decompressor.eof:  # another member may follow (concatenated gzip files)
                    data = decompressor.unused_data
                    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    if data[:2] != GZIP_MAGIC:
                        data = b""
                    continue
                data = decompressor.unconsumed_tail
    return total


def measured_bytes(paths: Sequence[Path], limit: ExpansionLimit) -> int:
    """The bytes a parse of `paths` will read: plain files as stored, gzip files decompressed and counted,
    each weighted (`weight`).
    IngestError (naming the file and the limit) when an input expands past `limit`, whose `absolute` counts
    the bytes read, unweighted."""
    total = read = 0
    for file in input_files(paths):
        size = file.stat().st_size
        if size >= 18 and _is_gzip(file):
            cap = limit.for_file(size)
            if limit.absolute is not None:
                cap = min(cap, max(0, limit.absolute - read))
            content = gzip_content_bytes(file, cap)
            if content > cap:
                raise IngestError(file, f"its compressed content expands to more than {cap / MB:,.0f} MiB "
                                        f"(from {size / MB:,.1f} MiB on disk), over what this server reads from "
                                        f"one input (the limit is set by {limit.hint}); not parsed")
            read += content
            total += int(content * weight(file))
        else:
            read += size
            total += int(size * weight(file))
    return total
