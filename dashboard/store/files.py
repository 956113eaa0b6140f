"""Writing a run's files into its staging folder: the canonical tables as parquet, the inputs byte for byte.

Two costs the user waited for after parsing (issue 19, a 260 MB Kineto trace):
copying the inputs byte for byte into `source/` (~0.5 s: the bytes go through
the kernel once more) and encoding the parquet tables (~0.2 s). The copy needs
nothing from the parse, so `dashboard.ingest.pipeline.SourceCopy` runs it in a thread while the inputs
are parsed (the copy is kernel work that does not hold the GIL); the tables
are encoded two at a time in threads (polars releases the GIL while it writes),
each as soon as the collector hands it over when it streams its tables
(`TableWriter`), so that only the last tables' encoding follows the parse.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema

# zstd level 1: files as small as the default level's (6.8 vs 6.9 MB for a 264 MB trace) in 2/3 of the time;
# lz4 or no compression measured no faster there (the encoding, not the compression, is the cost).
PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 1, "statistics": True}
# Two tables at a time: a write may first gather its table's chunks into one buffer; four at once
# raised the ingest's peak memory by ~70 MB (403 vs 333 MB, 262 MB trace) and were no faster.
_WRITE_THREADS = 2


def write_table(path: Path, table: str, frame: pl.DataFrame) -> int:
    """One canonical table as parquet, time-sorted when it has times (window queries skip row groups)."""
    conformed = schema.conform(table, frame)
    # Collectors mostly hand tables over in time order already: checking one column is ~100x cheaper
    # than sorting every column again (~0.2 s for a 260 MB trace's tables).
    if "start_ns" in conformed.columns and not conformed.get_column("start_ns").is_sorted(nulls_last=True):
        conformed = conformed.sort("start_ns", nulls_last=True)
    try:
        conformed.write_parquet(path, **PARQUET_OPTIONS)
    except pl.exceptions.PolarsError as exc:
        # polars words a failed write (a full disk) as a ComputeError with the OS error in its text and
        # no errno: made the OSError it is, so that callers say "no space left" rather than "bad values".
        if "os error 28" in str(exc) or "No space left" in str(exc):
            raise OSError(errno.ENOSPC, "No space left on device", path.name) from exc
        raise
    return conformed.height


class TableWriter:
    """Tables written as parquet files into one folder in background threads, as they are handed over.

    A collector that streams its tables (see `registry.collect`'s `sink`) gets each one written while it
    builds the next, and the written table's memory back: writing overlaps parsing rather than following it.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._pool = ThreadPoolExecutor(max_workers=_WRITE_THREADS, thread_name_prefix="write-table")
        self._writes: dict[str, Future[int]] = {}

    @property
    def tables(self) -> list[str]:
        """The tables handed over so far, in order."""
        return list(self._writes)

    def write(self, table: str, frame: pl.DataFrame) -> None:
        if table in self._writes:
            raise ValueError(f"table {table} was handed over twice")
        self._writes[table] = self._pool.submit(write_table, self.folder / f"{table}.parquet", table, frame)

    def finish(self) -> dict[str, int]:
        """Rows per table, in the order handed over, once every file is written; a write's error is raised."""
        try:
            return {table: write.result() for table, write in self._writes.items()}
        finally:
            self.close()

    def close(self) -> None:
        """Stop: writes not started are dropped, running ones finish (before their folder may be removed)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def write_tables(folder: Path, tables: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Every table as `folder/<table>.parquet`, written in parallel; rows per table, in the given order."""
    writer = TableWriter(folder)
    try:
        for table, frame in tables.items():
            writer.write(table, frame)
    except BaseException:
        writer.close()
        raise
    return writer.finish()


def _skip_symlinks(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if os.path.islink(os.path.join(folder, name))]


class SymlinkRefused(ValueError):
    """A symbolic link was given as a source: a run never copies through a link (what it points to could be
    anything the server can read, and a run's `source/` can be downloaded by every user)."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: symbolic link (to {os.readlink(path)}); give the file or folder it points to "
                         "instead")


def copy_sources(paths: Sequence[Path], target: Path) -> list[str]:
    """Copy every input byte for byte under `target`, keeping folder structure; links are not copied."""
    for path in paths:
        if path.is_symlink():
            raise SymlinkRefused(path)
    target.mkdir(parents=True)
    copied: list[str] = []
    for index, path in enumerate(paths):
        destination = target / path.name
        if destination.exists():  # two inputs with one file name
            destination = target / f"{index}" / path.name
            destination.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, destination, symlinks=False, ignore=_skip_symlinks)
        else:
            shutil.copyfile(path, destination)
        copied.append(str(destination.relative_to(target)))
    return copied
