"""Nsight Systems SQLite export (`nsys export --type sqlite`) -> canonical tables.

Reads kernels, memcpy + memset, CUDA runtime / driver calls and NVTX ranges
from export schemas 2.x (no ENUM tables, every table present) and 3.x (ENUM
tables, tables only when non-empty). Names come from `StringIds`; kernel
names prefer the demangled signature, then the short name, then the mangled one.

Time base: `start_ns` / `end_ns` are the export's own integer ns on the
capture timeline (0 near session start), kept as they are. Absolute wall time
is `metadata["exports"][i]["session_start_utc_ns"] + start_ns`; other sources
(PyTorch traces, CUPTI captures) use their own clocks, and per-rank files of
one job are only NTP-aligned, so compare across files by duration, not instant.

Attribution: a kernel or copy gets `op` = the innermost NVTX range (push/pop
or start/end) on the CPU thread of the runtime call that launched it
(matched by process + correlation id) that contains the whole call. `layer`
and `pass` stay null: NVTX names carry no reliable layer / pass meaning.

Input shapes: an NVTX range written by PyTorch's `emit_nvtx(record_shapes=True)` carries its op's input
sizes in its text (`aten::addmm, seq = 3, op_id = 9, sizes = [[16], [64, 32], [32, 16], [], []]`); they go
to `ranges.input_shapes` in the common form (`collectors.inputs`). The range keeps its whole text as its
name; emit_nvtx records no dtypes, so `input_dtypes` stays null, as do both for any other NVTX range.

Rank: an NVTX thread name such as `MPI Rank 3`, else an MPI / Slurm / torch
rank variable in TARGET_INFO_SYSTEM_ENV, else the file name (`…rank3`,
`…perlmutter3`; not nsys's default `report3`), else 0.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn
from dashboard.collectors.failures import describe_failure, sqlite_problem
from dashboard.collectors.inputs import CUT_MARK, MAX_INPUT_CHARS, nvtx_input_shapes
from dashboard.collectors.nsys.db import SQLITE_ERRORS, SQLITE_MAGIC, Export, connect, table_names
from dashboard.collectors.nsys.readers import read_activity

_log = logging.getLogger(__name__)
_NSYS_PREFIXES = ("CUPTI_ACTIVITY_KIND_", "TARGET_INFO_", "NVTX_EVENTS", "META_DATA_EXPORT", "EXPORT_META_DATA")


def _is_nsys(tables: set[str]) -> bool:
    return "StringIds" in tables and any(t.startswith(_NSYS_PREFIXES) for t in tables)


def _metadata(db: Export, activity_pids: set[int], devices: set[int], domains: pl.DataFrame) -> dict[str, Any]:
    meta: dict[str, Any] = {"file": db.path.name, "tables": len(db.tables)}
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if {"name", "value"} <= set(db.columns(table)):
            pairs = dict(db.pairs(f"SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM {table}"))
            for key, label in (
                ("EXPORT_PRODUCT_VERSION", "nsys_version"),
                ("EXPORT_SCHEMA_VERSION", "schema_version"),
                ("EXPORT_PARAM_TIME_NORMALIZE", "time_normalize"),
                ("EXPORT_PARAM_TIME_SHIFT", "time_shift"),
            ):
                if key in pairs:
                    meta[label] = pairs[key]
            break
    start_columns = db.columns("TARGET_INFO_SESSION_START_TIME")
    if "utcEpochNs" in start_columns:
        utc = "CAST(utcTime AS TEXT)" if "utcTime" in start_columns else "NULL"
        rows = db.pairs(f"SELECT utcEpochNs, {utc} FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        if rows:
            meta["session_start_utc_ns"], meta["session_start_utc"] = rows[0]
    gpu_fields = ("id", "name", "busLocation", "totalMemory", "smCount", "computeMajor", "computeMinor")
    present = [c for c in gpu_fields if c in db.columns("TARGET_INFO_GPU")]
    if present:
        rows = db.pairs(f"SELECT {', '.join(present)} FROM TARGET_INFO_GPU")
        gpus = [dict(zip(present, row, strict=True)) for row in rows]
        meta["gpus"] = [gpu | {"active": gpu.get("id") in devices} for gpu in gpus]
    if {"pid", "name"} <= set(db.columns("PROCESSES")) and activity_pids:
        ids = ", ".join(str(int(p)) for p in sorted(activity_pids))
        rows = db.pairs(f"SELECT pid, CAST(name AS TEXT) FROM PROCESSES WHERE pid IN ({ids})")
        meta["processes"] = [{"pid": pid, "name": name} for pid, name in rows]
    meta["nvtx_domains"] = domains.select(id="domain", name="name").unique("id").sort("id").to_dicts()
    return meta


@dataclass
class ExportTables:
    """One export's tables before its rank is final."""

    tables: dict[str, pl.DataFrame]
    rank: int
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def read_export(path: Path) -> ExportTables:
    """Read one export into canonical-column frames (without `rank`)."""
    db = Export(path)
    try:
        warnings: list[str] = []
        activity = read_activity(db, warnings)
        kernels, copies, calls, ranges = activity.kernels, activity.copies, activity.calls, activity.ranges
        if not (kernels.height or copies.height or calls.height or ranges.height):
            raise IngestError(
                path,
                "the export holds no CUDA kernels, copies, API calls or NVTX ranges "
                "(was it captured with --trace=cuda,nvtx?)",
            )
        if not kernels.height:
            found = ", ".join(f"{frame.height:,} {what}" for frame, what in
                              ((copies, "copies and memsets"), (calls, "CUDA API calls"), (ranges, "NVTX ranges")))
            warnings.append(f"{path}: no GPU kernels ({found})")
        rank, rank_source = activity.rank
        pids = set(pl.concat([kernels["pid"], copies["pid"], calls["pid"]]).drop_nulls().unique().to_list())
        devices = set(pl.concat([kernels["device"], copies["device"]]).drop_nulls().unique().to_list())
        metadata = _metadata(db, pids, devices, activity.domains)
        metadata |= {"rank_source": rank_source}
    except SQLITE_ERRORS as exc:  # enum and PRAGMA reads outside Export.frame
        raise IngestError(path, f"corrupt SQLite database: {sqlite_problem(exc)}") from None
    except pl.exceptions.PolarsError as exc:  # e.g. a damaged cell that breaks a join or cast
        _log.error("%s: unexpected values in the export", path, exc_info=True)
        raise IngestError(path, f"unexpected values in the export: {describe_failure(exc)}") from None
    finally:
        db.close()
    # PyTorch's emit_nvtx(record_shapes=True) writes each op's input sizes into its range text.
    shapes, cut, longest = nvtx_input_shapes(ranges.get_column("name"))
    if cut:
        warnings.append(f"{path}: {cut:,} NVTX ranges' `sizes = [...]` longer than {MAX_INPUT_CHARS:,} characters "
                        f"as text, cut there and ended with {CUT_MARK} (the longest: {longest:,} characters)")
    tables = {
        "kernels": kernels.drop("pid"),
        "memcpy": copies.drop("pid"),
        "api_calls": calls.drop("pid"),
        "ranges": ranges.select(
            "id", "thread", "name", "start_ns", "end_ns", "depth", "parent", category=pl.lit("nvtx")
        ).with_columns(shapes),
    }
    return ExportTables(tables, rank, metadata, warnings)


class NsysCollector:
    name = "nsys"
    description = "Nsight Systems SQLite export (.sqlite)"

    def sniff(self, probe: Probe) -> bool:
        if not probe.head.startswith(SQLITE_MAGIC):
            return False
        if probe.compressed:  # cannot open a gzip stream in place; look for nsys table names
            return b"StringIds" in probe.head and any(p.encode() in probe.head for p in _NSYS_PREFIXES)
        try:
            conn = connect(probe.path)
        except IngestError:
            return True  # an SQLite file too damaged to read: claim it so collect() names the problem
        try:
            return _is_nsys(table_names(conn))
        except SQLITE_ERRORS:
            return True
        finally:
            conn.close()

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        exports: list[ExportTables] = []
        for position, path in enumerate(sources):
            progress(position / len(sources), f"reading {Path(path).name}")
            exports.append(read_export(Path(path)))
        ranks = [export.rank for export in exports]
        warnings = [w for export in exports for w in export.warnings]
        if len(set(ranks)) < len(ranks):
            warnings.append(
                f"nsys: several exports claim the same rank ({ranks}); numbered 0..{len(ranks) - 1} in order"
            )
            ranks = list(range(len(ranks)))
        tables = {
            name: pl.concat(
                [
                    e.tables[name].with_columns(rank=pl.lit(r, dtype=pl.Int32))
                    for e, r in zip(exports, ranks, strict=True)
                ]
            )
            for name in ("kernels", "memcpy", "api_calls", "ranges")
        }
        metadata = {"exports": [e.metadata | {"rank": r} for e, r in zip(exports, ranks, strict=True)]}
        progress(1.0, "done")
        return Collected(tables=tables, metadata=metadata, warnings=warnings)


COLLECTOR = NsysCollector()
