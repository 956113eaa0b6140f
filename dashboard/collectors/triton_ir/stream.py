"""Cut a dump log into (header, body) pieces while reading it in chunks.

No whole-file string and no Python work per body line: each chunk of whole
lines is searched for header lines with bytes.find, bodies are sliced
out as bytes, and whatever lies between a body's end and the next header
(program prints, warnings, planner DOT blocks under `2>&1`) is handed back as
"other" text so the caller can look for planner blocks in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dashboard.collectors.base import TRUNCATED_GZIP, IngestError, open_source
from dashboard.collectors.triton_ir.headers import Header, find_headers, parse_header

CHUNK_BYTES = 8 << 20
_LLVM_TRAILERS = (b"Running pass: ", b"Running analysis: ", b"Invalidating analysis: ", b"Skipping pass: ")


@dataclass
class Dump:
    header: Header
    body: bytes
    line: int  # 1-based line of the header in the log


@dataclass
class Piece:
    """One dump, or the non-dump text found since the previous dump (dump is None)."""

    dump: Dump | None
    other: bytes = b""


def _split_body(header: Header, raw: bytes) -> tuple[bytes, bytes]:
    """The dump's body and the non-dump text after it.

    An MLIR body never holds a blank line and MLIR ends each dump with one; an
    LLVM body does hold blank lines (between functions) and runs to the next
    header, less the pass manager's trailing debug lines.
    """
    if header.dialect == "mlir":
        end = raw.find(b"\n\n")
        if end < 0:
            return raw, b""
        return raw[: end + 1], raw[end + 1:]
    body = raw.rstrip(b"\n")
    other_start = len(body)
    while True:
        start = body.rfind(b"\n") + 1
        if not body[start:].startswith(_LLVM_TRAILERS):
            break
        other_start = start
        body = body[:start].rstrip(b"\n")
    return body + b"\n" if body else b"", raw[other_start:]


def read_pieces(path: Path, progress: Callable[[int], None] | None = None) -> Iterator[Piece]:
    """Every dump of the log in order, with the text between dumps."""
    header: Header | None = None
    header_line = 0
    parts: list[bytes] = []
    lines_before = 0  # newlines in the log before the current chunk
    leftover = b""
    consumed = 0
    try:
        handle = open_source(path)
    except OSError as exc:
        raise IngestError(path, f"cannot read ({exc.strerror})") from None
    with handle:
        while True:
            try:
                chunk = handle.read(CHUNK_BYTES)
            except EOFError:
                raise IngestError(path, TRUNCATED_GZIP) from None
            at_end = not chunk
            data = leftover + chunk
            cut = len(data) if at_end else data.rfind(b"\n") + 1
            if cut == 0 and not at_end:
                leftover = data
                continue
            block, leftover = data[:cut], data[cut:]
            cursor = 0
            counted_to, lines_in_block = 0, 0  # newlines counted so far in this block, and up to where
            for start, end in find_headers(block):
                parsed = parse_header(block[start:end].decode("utf-8", "replace"))
                if parsed is None:
                    continue  # looks like a header but is not one: stays in the body
                parts.append(block[cursor:start])
                yield from _finish(header, header_line, parts)
                header = parsed
                lines_in_block += block.count(b"\n", counted_to, start)
                counted_to = start
                header_line = lines_before + lines_in_block + 1
                parts = []
                cursor = end
            parts.append(block[cursor:])
            lines_before += block.count(b"\n")
            consumed += len(chunk)
            if progress is not None:
                progress(consumed)
            if at_end:
                break
    yield from _finish(header, header_line, parts)


def _finish(header: Header | None, line: int, parts: list[bytes]) -> Iterator[Piece]:
    raw = b"".join(parts)
    if header is None:
        if raw:
            yield Piece(None, raw)
        return
    body, other = _split_body(header, raw)
    yield Piece(Dump(header, body, line), other)
