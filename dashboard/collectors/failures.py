"""Plain-words descriptions of failures, so no library's message reaches a user.

The error contract: any failure to read an input is one line,
`error: FILE: what is wrong (where: ...)`. Libraries (polars, msgspec,
sqlite3, zlib, the codecs) word their errors for programmers, often over
several lines with hints that do not apply; these helpers describe the same
failure in the user's terms from the exception's type and its structured
fields (byte offsets, SQLite error codes), never from its text. The full
traceback still goes to the log, for `--debug` and the server log.
"""

from __future__ import annotations

import errno
import json
import re
import sqlite3

import polars as pl

_BYTE_OFFSET = re.compile(r"\(byte (\d+)\)")

# SQLite's primary result codes (sqlite3.Error.sqlite_errorname) in plain words.
_SQLITE_CODES = {
    "SQLITE_CORRUPT": "the database is damaged (malformed pages)",
    "SQLITE_NOTADB": "the file is not an SQLite database",
    "SQLITE_CANTOPEN": "the database cannot be opened",
    "SQLITE_IOERR": "an input/output error while reading the database",
    "SQLITE_FULL": "the disk is full",
    "SQLITE_NOMEM": "not enough memory to read the database",
    "SQLITE_TOOBIG": "a value in the database is too large to read",
    "SQLITE_RANGE": "the database refers to data that is not there",
}


def describe_failure(exc: BaseException, reader: str = "the reader") -> str:
    """What went wrong, from the exception's type only: no library text."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read (more levels of brackets than a parser can follow)"
    if isinstance(exc, UnicodeDecodeError):
        return "holds bytes that are not UTF-8 text"
    if isinstance(exc, MemoryError):
        return "too large to read in the memory available"
    if isinstance(exc, sqlite3.Error):
        return sqlite_problem(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "could not be processed: no space left on the disk for its temporary files"
    if isinstance(exc, OSError):
        return f"could not be read ({exc.strerror or 'input/output error'})"
    if isinstance(exc, OverflowError | pl.exceptions.InvalidOperationError):
        return "holds a number too large or of the wrong type for its column"
    if isinstance(exc, pl.exceptions.PolarsError | ValueError | TypeError):
        return f"holds values {reader} cannot use (of an unexpected type or size)"
    return f"{reader} failed on content it does not handle"


def sqlite_problem(exc: BaseException) -> str:
    """An SQLite failure in plain words, from its error code."""
    code = getattr(exc, "sqlite_errorname", None) or ""
    for primary, words in _SQLITE_CODES.items():
        if code == primary or code.startswith(primary + "_"):  # extended codes: SQLITE_IOERR_SHORT_READ
            return words
    if isinstance(exc, UnicodeDecodeError):
        return "the database schema holds bytes that are not UTF-8 text"
    return "the database cannot be read (it is damaged or not a complete SQLite file)"


def msgspec_offset(exc: BaseException) -> int | None:
    """The byte offset msgspec names in a decode error, when it names one."""
    found = _BYTE_OFFSET.search(str(exc))
    return int(found.group(1)) if found else None


def json_problem(data: bytes, shape: str = "not the expected shape") -> str:
    """Why a reader refused `data`: not UTF-8, not JSON (line and column), too deep, or the wrong `shape`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (where: byte offset {exc.start})"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not valid JSON (where: line {exc.lineno}, column {exc.colno})"
    except RecursionError:
        return "JSON nested too deeply to read (more levels of brackets than a parser can follow)"
    return f"valid JSON, but {shape}"


def one_line(text: str) -> str:
    """A message on one line, whatever its parts held."""
    return " ".join(text.split())


def ingest_failure(exc: BaseException, inputs: str) -> str:
    """The one line (without `error: `) for a failed ingest, for the CLI and the upload page alike."""
    from dashboard.collectors.base import IngestError

    if isinstance(exc, IngestError):
        return one_line(str(exc))
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return one_line(f"{inputs}: no space left on the disk while writing the run; nothing half-written was kept")
    if isinstance(exc, OSError):  # the inputs were read; storing the run failed
        return one_line(f"{inputs}: could not store the run ({exc.strerror or 'input/output error'})")
    return one_line(f"{inputs}: {describe_failure(exc, 'the ingest')}")
