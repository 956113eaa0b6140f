"""One run: what its run.json says (`RunInfo`) and its tables, read lazily (`Run`); a run that cannot be
right is `RunDamaged`, one that is not there `RunNotFound`. `runs.py` finds, publishes and deletes runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema
from dashboard.store.derived import read_derived, write_derived
from dashboard.store.memory import CACHE

# Partitioned tables (cluster ingest): DIR/<table>/rank=<N>/part-<i>.parquet; per-rank summaries beside them.
PARTITION_GLOB = "rank=*/*.parquet"
SUMMARY_PREFIX = "summary_"


class RunNotFound(KeyError):
    """No run with that id exists (or the id is not a valid run id)."""

    def __str__(self) -> str:
        return f"no run named {self.args[0]!r}"


class RunDamaged(RunNotFound):
    """The run exists but cannot be read (`store.checks`): args are (run id, what is wrong, in one line).

    A RunNotFound too, so that every place that copes with a missing run copes with a damaged one; the
    places that can say more (pages, downloads: HTTP 409) say its line.
    """

    @property
    def reason(self) -> str:
        return str(self.args[1]) if len(self.args) > 1 else "damaged"

    def __str__(self) -> str:
        return f"run {self.args[0]} is damaged: {self.reason}"


@dataclass(frozen=True)
class RunInfo:
    """What run.json says about a run, plus where it lives."""

    id: str
    path: Path
    name: str
    created: str
    sources: list[str]
    evidence: list[str]
    row_counts: dict[str, int]
    parse_seconds: float
    schema_version: int
    size_bytes: int
    collectors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # What is wrong with the run when it cannot be read (store.checks), in one line; None when whole.
    damaged: str | None = None

    @property
    def total_rows(self) -> int:
        return sum(self.row_counts.values())

    @classmethod
    def from_json(cls, path: Path, data: dict[str, Any]) -> RunInfo:
        return cls(
            id=path.name,
            path=path,
            name=str(data.get("name", path.name)),
            created=str(data.get("created", "")),
            sources=list(data.get("sources", [])),
            evidence=list(data.get("evidence", [])),
            row_counts={k: int(v) for k, v in data.get("row_counts", {}).items()},
            parse_seconds=float(data.get("parse_seconds", 0.0)),
            schema_version=int(data.get("schema_version", 0)),
            size_bytes=int(data.get("size_bytes", 0)),
            collectors=list(data.get("collectors", [])),
            warnings=list(data.get("warnings", [])),
            metadata=dict(data.get("metadata", {})),
        )


class Run:
    """An opened run: its tables are scanned lazily; a table read whole is kept in the process's byte-
    budgeted cache (`store.memory`), so it is read once while it is in use and let go when others are."""

    def __init__(self, info: RunInfo) -> None:
        self.info = info

    @property
    def id(self) -> str:
        return self.info.id

    def has(self, table: str) -> bool:
        return self.info.row_counts.get(table, 0) > 0

    def has_evidence(self, kind: str) -> bool:
        return kind in self.info.evidence

    def scan(self, table: str) -> pl.LazyFrame:
        """A lazy scan of a table; an absent table scans as empty with its schema."""
        if not self.has(table):
            return schema.empty(table).lazy()
        single = self.info.path / f"{table}.parquet"
        if not single.exists() and (self.info.path / table).is_dir():
            # A run ingested on a cluster: one folder per rank (`kernels/rank=3/part-0.parquet`),
            # each file holding the full schema (rank included), so the glob reads as one table.
            return pl.scan_parquet(self.info.path / table / PARTITION_GLOB, hive_partitioning=False)
        return pl.scan_parquet(single)

    def summary(self, name: str) -> pl.DataFrame | None:
        """A per-rank summary written at ingest (`summary_<name>.parquet`), or None when the run has none."""
        path = self.info.path / f"{SUMMARY_PREFIX}{name}.parquet"
        if name not in self.info.metadata.get("summaries", []) or not path.is_file():
            return None
        return self._kept(f"{SUMMARY_PREFIX}{name}", lambda: pl.read_parquet(path))

    def derived(self, name: str) -> dict[str, pl.DataFrame] | None:
        """Frames an analysis kept beside the run under `name` (`store.derived`), or None."""
        return read_derived(self.info.path, name)

    def keep_derived(self, name: str, frames: dict[str, pl.DataFrame]) -> bool:
        """Keep an analysis's frames beside the run for every process serving it (best effort)."""
        return write_derived(self.info.path, name, frames)

    def frame(self, table: str) -> pl.DataFrame:
        """The whole table in memory, read once and reused while the process's cache budget keeps it."""
        return self._kept(table, lambda: self.scan(table).collect())

    def _kept(self, table: str, read: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        key = ("table", self, table)
        frame = CACHE.get(key)
        if frame is None:
            frame = read()
            CACHE.put(key, frame, group="run tables", size=int(frame.estimated_size()) + 1024)
        return frame
