"""What one fuzz case did when run through the real ingest (`registry.collect`), classified.

The contract (issue 14): a case either ingests, or fails with exactly one `IngestError` whose
message is one line naming the file, in the project's words, not a library's; within a time
bound; and what it stores has no interval ending before it starts and no negative byte count.
"""

from __future__ import annotations

import re
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from dashboard.ingest.archives import Unpacked, unpack_inputs

OK = "ok"
ERROR = "one-line error"
MULTI_LINE = "multi-line error"
LIBRARY_TEXT = "library text"  # one line, but a library's message or hint leaks through
TRACEBACK = "traceback"  # any exception other than IngestError
HANG = "hang"
NEGATIVE = "negative duration/bytes"
OUTCOMES = (OK, ERROR, MULTI_LINE, LIBRARY_TEXT, TRACEBACK, HANG, NEGATIVE)
FAILURES = frozenset(OUTCOMES) - {OK, ERROR}

# Text that only a library writes: exception class names, polars' hints, tracebacks, Rust panics, and the
# phrasing of msgspec, simd-json (polars' JSON reader), zlib, gzip and SQLite error messages.
_LIBRARY_TEXT = re.compile(
    r"Traceback|\bHint:|polars|pyo3|panicked|PanicException|\b(?:Compute|InvalidOperation|Schema|Shape|ColumnNotFound"
    r"|Recursion|UnicodeDecode|Overflow|JSONDecode|Key|Type|Index|Attribute|Value|Decode|Validation|Operational"
    r"|Database|Integrity|Programming)Error\b|msgspec|sqlite3\.|consider (?:using|increasing|setting)|strict=False"
    r"|infer_schema_length|Error -?\d+ while|while decompressing|CRC check failed|JSON is malformed|TapeError"
    r"|InternalError\(|\b(?:Syntax|InvalidUtf8|InvalidNumber|Expected[A-Z]\w*) at character"
    r"|disk image is malformed|malformed database schema|codec can't decode"
)
# Columns that hold a byte count (or a memory size): never negative in a stored table.
BYTE_COLUMNS = frozenset({"bytes", "shared_memory", "unpadded_bytes", "padded_bytes", "total_per_bank",
                          "allocated_per_bank", "free_per_bank", "largest_free_per_bank", "total", "allocated",
                          "free", "largest_free"})


@dataclass(frozen=True)
class Outcome:
    kind: str
    seconds: float
    detail: str = ""  # the error line, the exception, or the offending table and column


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so a collector's `except Exception` cannot swallow it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` (main thread only; regex matching checks for signals)."""

    def _expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def stored_problems(tables: dict[str, pl.DataFrame]) -> list[str]:
    """Rows a stored table must never hold: end before start, negative bytes."""
    problems = []
    for name, frame in tables.items():
        if {"start_ns", "end_ns"} <= set(frame.columns):
            backwards = frame.filter(pl.col("end_ns") < pl.col("start_ns")).height
            if backwards:
                problems.append(f"{name}: {backwards} rows with end_ns < start_ns")
        for column in BYTE_COLUMNS & set(frame.columns):
            if frame.schema[column].is_numeric():
                rows = frame
                if name == "device_memory" and "relative" in frame.columns:
                    # A relative curve is a running sum from the trace's start: below zero when it opens
                    # with frees of memory allocated before the trace. Absolute totals never are.
                    rows = frame.filter(~pl.col("relative").fill_null(False))
                negative = rows.filter(pl.col(column) < 0).height
                if negative:
                    problems.append(f"{name}.{column}: {negative} negative values")
    return problems


def classify_error(error: IngestError, inputs: Sequence[Path]) -> Outcome:
    message = str(error)
    if len(message.strip().splitlines()) > 1:
        return Outcome(MULTI_LINE, 0.0, message)
    folders = {str(p) for p in inputs} | {str(p.parent) for p in inputs}
    names_file = any(error.path.startswith(folder) for folder in folders)
    if not names_file or _LIBRARY_TEXT.search(error.problem) or not error.problem.strip():
        return Outcome(LIBRARY_TEXT, 0.0, message)
    return Outcome(ERROR, 0.0, message)


def _collect(paths: Sequence[Path]) -> registry.CollectedRun:
    """As ingest reads its inputs: archives opened like folders (`ingest.archives`), then the registry."""
    with tempfile.TemporaryDirectory(prefix="fuzz-unpacked-") as into:
        unpacked = Unpacked(inputs=list(paths))
        try:
            unpacked = unpack_inputs(list(paths), Path(into) / "u")
            return registry.collect(unpacked.inputs)
        except IngestError as error:
            raise IngestError(unpacked.name(error.path), unpacked.name(error.problem)) from error


def ingest_outcome(paths: Sequence[Path], timeout: float | None = None) -> Outcome:
    """Run the real ingest on `paths` and classify what happened (`timeout` uses SIGALRM)."""
    started = time.perf_counter()
    try:
        if timeout is None:
            run = _collect(paths)
        else:
            with time_limit(timeout):
                run = _collect(paths)
    except CaseTimeout as exc:
        outcome = Outcome(HANG, 0.0, str(exc))
    except IngestError as exc:
        outcome = classify_error(exc, paths)
    except Exception as exc:  # the failure this suite exists to find
        outcome = Outcome(TRACEBACK, 0.0, f"{type(exc).__name__}: {str(exc)[:300]}")
    else:
        problems = stored_problems(run.tables)
        outcome = Outcome(NEGATIVE, 0.0, "; ".join(problems)) if problems else Outcome(OK, 0.0)
    return Outcome(outcome.kind, time.perf_counter() - started, outcome.detail)
