"""The map step of a cluster ingest: what one Dask worker does with one input file.

It parses the file with the same collectors as a single-process ingest
(collectors/registry.py), writes each table into the run's staging folder one
file per rank (`<table>/rank=<N>/part-<i>.parquet`, the full canonical schema
inside, rank included), copies the file byte for byte under `source/`, and
returns only what the client needs to reduce: row counts, the ranks seen, the
per-rank summaries (analysis/rank_summaries.py), warnings and metadata.

The staging folder lives in the data folder, which must be on storage every
worker sees (NFS, Lustre, GPFS, a Kubernetes ReadWriteMany volume). The client
writes a token file there first; a worker that cannot read the same token is
not looking at the same folder, and says so instead of writing elsewhere.
This module imports no Dask: it is plain functions that Dask ships by reference.
"""

from __future__ import annotations

import resource
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.analysis.rank_summaries import rank_summaries
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from dashboard.store.files import PARQUET_OPTIONS

TOKEN_FILE = ".cluster-token"
NO_RANK = "none"  # partition of a table without a rank column (or a null rank)


class FolderNotShared(IngestError):
    """A worker does not see the staging folder the client wrote (not a shared filesystem)."""


@dataclass
class PartResult:
    """What the client gathers from one parsed file (small: no event rows)."""

    file: str
    collectors: list[str]
    row_counts: dict[str, int]
    ranks: list[int]
    summaries: dict[str, pl.DataFrame]
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    parse_seconds: float = 0.0
    worker: str = ""


def check_shared(staging: str, token: str) -> str:
    """The worker's host name when it reads `token` in the staging folder, else FolderNotShared."""
    host = socket.gethostname()
    try:
        seen = (Path(staging) / TOKEN_FILE).read_text(encoding="utf-8")
    except OSError:
        seen = None
    if seen != token:
        raise FolderNotShared(staging, f"worker on {host} cannot see the run's staging folder; put the data "
                                       "folder (--data) on a filesystem every Dask worker mounts at the same path")
    return host


def _still_wanted(staging: Path, token: str) -> None:
    """Raise when the client has given up on this run (it removes the token before the folder)."""
    try:
        wanted = (staging / TOKEN_FILE).read_text(encoding="utf-8") == token
    except OSError:
        wanted = False
    if not wanted:
        raise IngestError(staging, "the ingest was stopped (another file failed); nothing more is written")


def partition_folder(staging: Path, table: str, rank: int | None) -> Path:
    return staging / table / f"rank={NO_RANK if rank is None else rank}"


def parse_file(file: str, staging: str, token: str, part: int, source_name: str) -> PartResult:
    """Parse one input file into the staging folder (see the module docstring); raises IngestError."""
    host = check_shared(staging, token)
    started = time.perf_counter()
    collected = registry.collect([Path(file)])
    target = Path(staging)
    row_counts: dict[str, int] = {}
    ranks: set[int] = set()
    for table, frame in collected.tables.items():
        if "start_ns" in frame.columns:
            frame = frame.sort("start_ns", nulls_last=True)  # as the single-file layout: windows skip row groups
        pieces = frame.partition_by("rank", as_dict=True) if "rank" in frame.columns else {(None,): frame}
        for (rank,), piece in pieces.items():
            _still_wanted(target, token)
            folder = partition_folder(target, table, rank)
            folder.mkdir(parents=True, exist_ok=True)
            piece.write_parquet(folder / f"part-{part}.parquet", **PARQUET_OPTIONS)
            if rank is not None:
                ranks.add(int(rank))
        row_counts[table] = frame.height
    _still_wanted(target, token)
    if source_name:  # empty for a member of an archive: the client keeps the archive itself
        source = target / "source" / source_name
        source.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, source)
    return PartResult(file=file, collectors=collected.collectors, row_counts=row_counts, ranks=sorted(ranks),
                      summaries=rank_summaries(collected.tables), warnings=collected.warnings,
                      metadata=collected.metadata, parse_seconds=time.perf_counter() - started, worker=host)


def peak_rss_bytes() -> int:
    """This process's peak resident memory (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
