"""Worker process for `parallel`: decode byte ranges of one trace file.

    python -m dashboard.collectors.kineto.worker SOURCE OUTDIR CHUNK_BYTES

Reads tasks `START STOP INDEX` from stdin, one per line, until stdin closes.
Each range holds whole, comma-separated events of the `traceEvents` array;
its frames go to `OUTDIR/INDEX-KIND.arrow` and its counts to
`OUTDIR/INDEX.json`, then `INDEX` is printed so the parent can hand out the
next task and report progress. Exit status 3 means a range did not decode as
whole events (the cut was wrong); the parent then decodes the file in one
process.

A plain subprocess rather than `multiprocessing`: spawn-based pools re-import
the parent's `__main__`, which breaks in scripts without a main guard and
starts the whole Dash app again in every worker of the server.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from dashboard.collectors.gc_pause import gc_paused
from dashboard.collectors.kineto.decode import DecodedTrace, decode_chunk, event_spans, frames_of_chunk
from dashboard.collectors.kineto.frames import CATEGORICAL_NAMES

CUT_FAILED = 3
KINDS = ("gpu", "api", "range", "flow", "memory")
_OPEN, _CLOSE = ord("["), ord("]")


def decode_range(
    mapped: mmap.mmap, start: int, stop: int, chunk_bytes: int
) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """Frames and counts of the events in `mapped[start:stop]`; msgspec.DecodeError when the cut was wrong.

    `mapped` must be a private writable mapping (ACCESS_COPY): each chunk is
    decoded in place, its neighbouring bytes (a separator, or the array's own
    brackets) turned into `[` and `]` for the time of the decode, which saves
    copying every chunk (~20 % of the decode). Only those two pages are copied.
    """
    trace = DecodedTrace(path=Path(), top={}, frames={})
    parts: dict[str, list[pl.DataFrame]] = {kind: [] for kind in KINDS}
    with gc_paused():
        for first, last in event_spans(mapped, start, stop, chunk_bytes):
            before, after = mapped[first - 1], mapped[last]
            mapped[first - 1], mapped[last] = _OPEN, _CLOSE
            view = memoryview(mapped)[first - 1 : last + 1]
            decoded: list[Any] = []
            try:
                decoded = decode_chunk(view, trace)
                trace.events += len(decoded)
                frames_of_chunk(decoded, trace, parts)  # copies what it keeps out of the buffer
                decoded = []
            except Exception as exc:
                # The traceback's frames hold the decoded events, whose raw spans point into the view: without
                # them the view can be released below, and the caller sees this error, not a BufferError.
                decoded.clear()
                raise exc.with_traceback(None) from None
            finally:
                view.release()
                mapped[first - 1], mapped[last] = before, after
            _forget(mapped, first - 1, last + 1)
    frames = {kind: pl.concat(found, how="diagonal_relaxed") for kind, found in parts.items() if found}
    counts = {
        "events": trace.events,
        "ignored": trace.ignored,
        "problems": dict(trace.problems),
        "categories": dict(trace.categories),
        "lenient": trace.lenient,
    }
    return frames, counts


def _forget(mapped: mmap.mmap, start: int, stop: int) -> None:
    """Give back the pages of a decoded range: read pages of a mapped file count in this process's
    resident memory until unmapped (the whole trace, summed over the decode processes). The bytes were
    restored above, so a page read again (a neighbouring range shares one) comes back from the file."""
    first = start - start % mmap.PAGESIZE
    # No madvise on this platform: only memory is spent.
    with contextlib.suppress(AttributeError, OSError, ValueError):
        mapped.madvise(mmap.MADV_DONTNEED, first, min(len(mapped), stop) - first)


def write_result(outdir: Path, index: int, frames: dict[str, pl.DataFrame], counts: dict[str, Any]) -> None:
    for kind, frame in frames.items():
        # Names repeat a lot (a few thousand distinct in a million events): as a dictionary
        # they cost a fraction of the bytes to write and read back.
        if "name" in frame.columns:
            frame = frame.with_columns(pl.col("name").cast(pl.Categorical))
        frame.write_ipc(outdir / f"{index}-{kind}.arrow", compression="uncompressed")
    (outdir / f"{index}.json").write_text(json.dumps(counts))


def read_result(outdir: Path, index: int) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    counts = json.loads((outdir / f"{index}.json").read_text())
    frames = {}
    for kind in KINDS:
        path = outdir / f"{index}-{kind}.arrow"
        if path.exists():
            frame = pl.read_ipc(path)
            # As decoded in one process (`columns.CATEGORICAL_NAMES`); every name travels as a dictionary.
            text = "name" in frame.columns and kind not in CATEGORICAL_NAMES
            frames[kind] = frame.with_columns(pl.col("name").cast(pl.String)) if text else frame
    return frames, counts


def main(argv: list[str]) -> int:
    source, outdir, chunk_bytes = argv
    with open(source, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) as mapped:
        for line in sys.stdin:
            start, stop, index = (int(part) for part in line.split())
            try:
                frames, counts = decode_range(mapped, start, stop, int(chunk_bytes))
            except msgspec.DecodeError as exc:
                print(f"range {index}: {exc}", file=sys.stderr)
                return CUT_FAILED
            write_result(Path(outdir), index, frames, counts)
            print(index, flush=True)
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # The parent waits for this process to end before it goes on: its results are in files, so the
    # interpreter's teardown (freeing every decoded object, ~30 ms) is skipped.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
