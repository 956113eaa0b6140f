"""Several processes (DDP): one capture per rank, merged into one run.

Each rank writes its tables as `<table>.rank<N>.parquet` into a shared staging
folder, then `capture.rank<N>.json` last: the json marks the partial complete,
so a rank that died mid-write is not merged. `merge_rank_partials` reads every
complete partial and stacks the tables with their `rank` column (set from the
file name, the one place a rank cannot be wrong). Timestamps of ranks on one
node share CUPTI's host clock; across nodes they are only as aligned as the
nodes' clocks (NTP).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema
from dashboard.collectors.base import IngestError
from dashboard.collectors.failures import describe_failure

RANK_VARIABLES = ("RANK", "SLURM_PROCID", "LOCAL_RANK")
_META = re.compile(r"^capture\.rank(\d+)\.json$")


def rank_from_env(environ: Mapping[str, str] | None = None) -> int:
    """This process's global rank: RANK, else SLURM_PROCID, else LOCAL_RANK, else 0."""
    env = os.environ if environ is None else environ
    for variable in RANK_VARIABLES:
        value = env.get(variable, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def _partial_path(staging: Path, table: str, rank: int) -> Path:
    return staging / f"{table}.rank{rank}.parquet"


def _write_atomic_bytes(path: Path, write: Any) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_rank_partial(
    staging: Path,
    rank: int,
    tables: Mapping[str, pl.DataFrame],
    metadata: Mapping[str, Any] | None = None,
    warnings: list[str] | None = None,
) -> Path:
    """Write one rank's tables into `staging`; returns the rank's json (written last)."""
    staging.mkdir(parents=True, exist_ok=True)
    meta_path = staging / f"capture.rank{rank}.json"
    if meta_path.exists():
        raise FileExistsError(f"{meta_path}: rank {rank} already wrote a capture into this staging folder")
    written = []
    for table, frame in tables.items():
        conformed = schema.conform(table, frame.with_columns(pl.lit(rank).alias("rank")))
        _write_atomic_bytes(_partial_path(staging, table, rank), conformed.write_parquet)
        written.append(table)
    info = {"rank": rank, "tables": written, "metadata": dict(metadata or {}), "warnings": list(warnings or [])}
    _write_atomic_bytes(meta_path, lambda p: p.write_text(json.dumps(info, default=str), encoding="utf-8"))
    return meta_path


@dataclass
class MergedCapture:
    tables: dict[str, pl.DataFrame]
    ranks: list[int]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def merge_rank_partials(staging: Path) -> MergedCapture:
    """Stack every complete rank partial in `staging` into one set of tables."""
    staging = Path(staging)
    if not staging.is_dir():
        raise IngestError(staging, "no such staging folder")
    metas = sorted(
        ((int(m.group(1)), path) for path in staging.iterdir() if (m := _META.match(path.name))),
    )
    if not metas:
        raise IngestError(staging, "no complete rank capture here (no capture.rank<N>.json)")
    parts: dict[str, list[pl.DataFrame]] = {}
    per_rank: dict[str, Any] = {}
    warnings: list[str] = []
    for rank, meta_path in metas:
        try:
            info = json.loads(meta_path.read_text(encoding="utf-8"))
            tables = list(info["tables"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IngestError(meta_path, f"unreadable rank capture description ({describe_failure(exc)})") from None
        per_rank[str(rank)] = info.get("metadata", {})
        warnings.extend(f"rank {rank}: {w}" for w in info.get("warnings", []))
        for table in tables:
            path = _partial_path(staging, table, rank)
            if table not in schema.TABLES:
                raise IngestError(path, f"unknown table {table!r} in a rank capture")
            try:
                frame = pl.read_parquet(path)
            except (OSError, pl.exceptions.PolarsError) as exc:
                raise IngestError(path, f"missing or unreadable rank partial ({describe_failure(exc)})") from None
            frame = frame.with_columns(pl.lit(rank).alias("rank"))
            parts.setdefault(table, []).append(schema.conform(table, frame))
    merged = {table: pl.concat(frames) for table, frames in parts.items()}
    ranks = [rank for rank, _ in metas]
    return MergedCapture(merged, ranks, {"capture_ranks": ranks, "per_rank": per_rank}, warnings)


def write_merged_run(staging: Path | str, data_dir: Path | str, name: str = "capture") -> str:
    """Merge the rank partials in `staging` and write them as one run; returns the run id."""
    from dashboard.collectors.validation import drop_impossible_rows
    from dashboard.store import RunStore

    merged = merge_rank_partials(Path(staging))
    tables, dropped = drop_impossible_rows(merged.tables, f"capture {name}")
    return RunStore(data_dir).write(
        name=name,
        tables=tables,
        collectors=["cupti"],
        metadata=merged.metadata,
        warnings=[*merged.warnings, *dropped],
    )
