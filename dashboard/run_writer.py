"""Writing a run's files into its staging folder, off the critical path where it can be.

Two costs the user waited for after parsing (issue 19, a 260 MB Kineto trace):
copying the inputs byte for byte into `source/` (~0.5 s: the bytes go through
the kernel once more) and encoding the parquet tables (~0.2 s). The copy needs
nothing from the parse, so `SourceCopy` runs it in a thread while the inputs
are parsed (the copy is kernel work that does not hold the GIL); the tables
are encoded two at a time in threads (polars releases the GIL while it writes).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema
from dashboard.sources import copy_sources

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
    conformed.write_parquet(path, **PARQUET_OPTIONS)
    return conformed.height


def write_tables(folder: Path, tables: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Every table as `folder/<table>.parquet`, written in parallel; rows per table, in the given order."""
    if not tables:
        return {}
    with ThreadPoolExecutor(max_workers=min(_WRITE_THREADS, len(tables))) as pool:
        futures = {table: pool.submit(write_table, folder / f"{table}.parquet", table, frame)
                   for table, frame in tables.items()}
        return {table: future.result() for table, future in futures.items()}


class SourceCopy:
    """The inputs copied under `target` in a background thread (see `sources.copy_sources`)."""

    def __init__(self, sources: Sequence[Path], target: Path) -> None:
        self._sources, self._target = list(sources), target
        self._copied: list[str] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="copy-sources", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._copied = copy_sources(self._sources, self._target)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        """Until the copy ended (before its folder may be removed)."""
        self._thread.join()

    def result(self) -> list[str]:
        """The copied paths relative to `target`; the copy's own error when it failed."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._copied
