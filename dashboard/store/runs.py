"""Runs on disk: list, open (lazily, cached), publish, delete; never overwrite.

A run is `DATA/runs/<name>-<YYYYMMDD-HHMMSS>/` with `run.json`, one parquet
file per canonical table present, and `source/` holding the original inputs
byte for byte. A run is assembled in `DATA/.staging/` and renamed into
`runs/` in one step, so a killed ingest never leaves a half-written run; each
staging folder has an `<folder>.owner` file naming the process that writes it,
so the leftovers of a dead process are removed at the next ingest.

The store knows nothing of parsing: `dashboard.ingest` turns a user's paths
into tables and hands the store a filled staging folder to publish; capture
and the demo publish tables they built with `RunStore.write`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from dashboard import schema
from dashboard.store.checks import read_run_json, tables_problem
from dashboard.store.files import copy_sources, write_tables
from dashboard.store.memory import CACHE
from dashboard.store.owners import owner_is_gone, partial_marker_is_orphaned, read_owner, write_owner
from dashboard.store.run import PARTITION_GLOB, SUMMARY_PREFIX, Run, RunDamaged, RunInfo, RunNotFound

RUN_FILE = "run.json"
SOURCE_DIR = "source"
STAGING_DIR = ".staging"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
# A staging folder whose owner cannot be checked (none recorded, or another host's)
# and older than this belongs to an ingest that died.
STALE_STAGING_SECONDS = 6 * 3600
OWNER_SUFFIX = ".owner"



def safe_name(name: str) -> str:
    """A run name usable in a folder name: letters, digits, '.', '_', '-'."""
    cleaned = _UNSAFE_NAME_CHARS.sub("-", name).strip("-.")
    return cleaned[:100] or "run"


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@lru_cache(maxsize=64)  # a Run holds its run.json only: its tables live in the byte-budgeted cache
def _open_cached(path: str, stamp: int) -> Run:
    # `stamp` (run.json's mtime) is part of the key so a replaced run is reread (and checked again).
    return Run(checked_info(Path(path)))


def checked_info(run_path: Path) -> RunInfo:
    """What run.json says, checked (schema, parquet footers): `damaged` names the first problem."""
    data, problem = read_run_json(run_path / RUN_FILE)
    if data is None or problem is not None:
        return RunInfo(id=run_path.name, path=run_path, name=run_path.name, created="", sources=[], evidence=[],
                       row_counts={}, parse_seconds=0.0, schema_version=0, size_bytes=0,
                       damaged=problem or "run.json cannot be read")
    info = RunInfo.from_json(run_path, data)
    summaries = info.metadata.get("summaries", [])
    damaged = tables_problem(run_path, info.row_counts, summaries if isinstance(summaries, list) else [],
                             PARTITION_GLOB, SUMMARY_PREFIX)
    return dataclasses.replace(info, damaged=damaged) if damaged else info


class RunStore:
    """The runs under one data folder."""

    def __init__(self, data_dir: Path | str) -> None:
        self.data_dir = Path(data_dir)
        self.runs_dir = self.data_dir / "runs"
        self.staging_dir = self.data_dir / STAGING_DIR

    @classmethod
    def containing(cls, run: Run) -> RunStore:
        """The store a run lives in (to open the runs it is compared with)."""
        return cls(run.info.path.parent.parent)

    # ---- reading -------------------------------------------------------
    def run_path(self, run_id: str) -> Path:
        """The folder of a run; ids that could escape the runs folder are rejected."""
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise RunNotFound(run_id)
        path = self.runs_dir / run_id
        try:
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            raise RunNotFound(run_id) from None
        if resolved.parent != self.runs_dir.resolve() or not (resolved / RUN_FILE).is_file():
            raise RunNotFound(run_id)
        return resolved

    def list_runs(self, include_damaged: bool = False) -> list[RunInfo]:
        """Every complete run, newest first. Damaged runs (`RunInfo.damaged`) only when asked for: the Runs
        page lists them with their reason; comparisons, history and findings never see them."""
        if not self.runs_dir.is_dir():
            return []
        infos: list[RunInfo] = []
        for entry in self.runs_dir.iterdir():
            if entry.name.startswith(".") or not (entry / RUN_FILE).is_file():
                continue
            try:
                info = self._opened(entry.name).info
            except (OSError, ValueError, RunNotFound):
                continue
            if include_damaged or info.damaged is None:
                infos.append(info)
        return sorted(infos, key=lambda info: (info.created, info.id), reverse=True)

    def open(self, run_id: str) -> Run:
        """Open a run (cached per process, refreshed if its run.json changes); RunDamaged if it cannot be read."""
        run = self._opened(run_id)
        if run.info.damaged is not None:
            raise RunDamaged(run_id, run.info.damaged)
        return run

    def _opened(self, run_id: str) -> Run:
        path = self.run_path(run_id)
        try:
            stamp = (path / RUN_FILE).stat().st_mtime_ns
        except OSError:
            raise RunNotFound(run_id) from None
        return _open_cached(str(path), stamp)

    def exists(self, run_id: str) -> bool:
        try:
            self.run_path(run_id)
        except RunNotFound:
            return False
        return True

    # ---- writing -------------------------------------------------------
    def write(
        self,
        name: str,
        tables: dict[str, pl.DataFrame],
        sources: Sequence[Path] = (),
        parse_seconds: float = 0.0,
        collectors: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        warnings: Sequence[str] = (),
    ) -> str:
        """Write a new run from canonical tables; it appears in `runs/` whole or not at all."""
        staging = self.new_staging(name)
        try:
            row_counts = write_tables(staging, tables)
            copied = copy_sources(list(sources), staging / SOURCE_DIR)
            return self.publish_staging(staging, name, row_counts, copied, sources, parse_seconds, collectors,
                                        metadata, warnings)
        finally:
            self.drop_staging(staging)

    def new_staging(self, name: str) -> Path:
        """A fresh staging folder for a run named `name`, its owner recorded (see `remove_stale_staging`)."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        staging = self.staging_dir / f"{safe_name(name)}-{uuid.uuid4().hex}"
        write_owner(_owner_marker(staging))  # before the folder, so a cleaner never sees it without its owner
        try:
            staging.mkdir()
        except BaseException:  # a full disk: nothing of this staging folder is left behind, its marker neither
            _owner_marker(staging).unlink(missing_ok=True)
            raise
        return staging

    def drop_staging(self, staging: Path) -> None:
        """Remove what is left of a staging folder (nothing once published) and its owner marker."""
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        _owner_marker(staging).unlink(missing_ok=True)

    def publish_staging(self, staging: Path, name: str, row_counts: dict[str, int], copied_sources: Sequence[str],
                        sources: Sequence[Path] = (), parse_seconds: float = 0.0, collectors: Sequence[str] = (),
                        metadata: dict[str, Any] | None = None, warnings: Sequence[str] = ()) -> str:
        """Write run.json into a filled staging folder and rename it into `runs/`; return the run id."""
        name = safe_name(name)
        created = datetime.now().astimezone()
        info = {
            "name": name,
            "created": created.isoformat(timespec="seconds"),
            "sources": list(copied_sources),
            "original_paths": [str(Path(p).resolve()) for p in sources],
            "evidence": schema.evidence_of(row_counts),
            "row_counts": row_counts,
            "parse_seconds": round(parse_seconds, 3),
            "schema_version": schema.SCHEMA_VERSION,
            "collectors": list(collectors),
            "warnings": list(warnings)[:200],
            "metadata": metadata or {},
        }
        info["size_bytes"] = _folder_size(staging)
        _write_json_atomic(staging / RUN_FILE, info)
        return self._publish(staging, f"{name}-{created:%Y%m%d-%H%M%S}")

    def _publish(self, staging: Path, base_id: str) -> str:
        # rename() onto an existing non-empty folder fails, which is exactly the
        # never-overwrite guarantee; on a clash try the next suffix.
        for attempt in range(1, 1000):
            run_id = base_id if attempt == 1 else f"{base_id}-{attempt}"
            target = self.runs_dir / run_id
            if target.exists():
                continue
            try:
                os.rename(staging, target)
            except OSError:
                if target.exists():
                    continue
                raise
            return run_id
        raise RuntimeError(f"could not find a free run id for {base_id}")

    def delete(self, run_id: str) -> None:
        """Remove a run; it leaves `runs/` in one rename, then its files are removed."""
        path = self.run_path(run_id)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        trash = self.staging_dir / f"deleted-{run_id}-{uuid.uuid4().hex}"
        write_owner(_owner_marker(trash))
        os.rename(path, trash)
        shutil.rmtree(trash, ignore_errors=True)
        _owner_marker(trash).unlink(missing_ok=True)
        _open_cached.cache_clear()
        # What this process kept of it goes now, not when the budget gets round to it.
        CACHE.discard_where(lambda key: not any(isinstance(part, Run) and part.info.path == path
                                                for part in (key if isinstance(key, tuple) else ())))

    def remove_stale_staging(self, older_than_s: float = STALE_STAGING_SECONDS) -> int:
        """Delete staging folders left by ingests that died; returns how many.

        A folder whose recorded owner is a process of this host that is gone is
        removed at once; one whose owner is alive is kept whatever its age; one
        whose owner cannot be checked (none recorded, another host) only after
        `older_than_s` without a change.
        """
        if not self.staging_dir.is_dir():
            return 0
        removed = 0
        now = time.time()
        for entry in self.staging_dir.iterdir():
            try:
                if partial_marker_is_orphaned(entry):  # its writer was killed mid-write
                    entry.unlink(missing_ok=True)
                    continue
                if entry.name.endswith(OWNER_SUFFIX):
                    # A marker whose folder is gone (its writer died between the two steps); one that
                    # names no owner (written before markers were written whole) goes by the age rule.
                    owner = read_owner(entry)
                    if not entry.with_name(entry.name.removesuffix(OWNER_SUFFIX)).exists() and (
                            owner_is_gone(owner) or (owner is None and now - entry.stat().st_mtime > older_than_s)):
                        entry.unlink(missing_ok=True)
                    continue
                if not entry.is_dir() or entry.is_symlink():
                    continue
                marker = _owner_marker(entry)
                owner = read_owner(marker)
                stale = owner_is_gone(owner) or (
                    (owner is None or owner.get("host") != socket.gethostname())
                    and now - entry.stat().st_mtime > older_than_s)
            except OSError:  # removed meanwhile by another worker's cleanup
                continue
            if stale:
                shutil.rmtree(entry, ignore_errors=True)
                marker.unlink(missing_ok=True)
                removed += 1
        return removed


def _owner_marker(staging: Path) -> Path:
    return staging.with_name(staging.name + OWNER_SUFFIX)
