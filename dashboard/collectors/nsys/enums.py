"""Enum maps of the Nsight Systems SQLite export.

Schema 3.x exports carry `ENUM_*` tables `(id, name, label)`; 2.x exports
(e.g. nsys 2022.2, the shipped sample) have none, so the maps of a 3.13.2
export are embedded here. A table, when present, wins: ids may grow between
versions. Unknown ids render as `kind <n>`, never as a guess.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

import polars as pl

from dashboard.schema import MEMCPY_KIND_NAMES

# ENUM_CUDA_MEMCPY_OPER, in the short vocabulary the canonical `memcpy.kind` uses.
MEMCPY_KIND = MEMCPY_KIND_NAMES

# ENUM_CUDA_MEM_KIND: nsys numbering, NOT CUPTI's ActivityMemoryKind (0 is Pageable here).
MEMORY_KIND: dict[int, str] = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device static",
    6: "Managed static",
    7: "Unknown",
}

# ENUM_NSYS_EVENT_CLASS ids of API calls the `api_calls` table keeps. Class 67
# ("CUDA backtrace") duplicates backtraced runtime calls and is left out.
EVENT_CLASS_CATEGORY: dict[int, str] = {0: "cuda_runtime", 1: "cuda_driver"}

# ENUM_NSYS_EVENT_TYPE (NVTX subset), keyed by the enum's `name`.
NVTX_EVENT_TYPE: dict[str, int] = {
    "NvtxMark": 34,
    "NvtxThread": 39,
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxDomainCreate": 75,
}

_COPY_NAME = re.compile(r"^(?:CUDA_MEMCPY_KIND_)?(UVM_)?([A-Z])TO([A-Z])$")


def _memcpy_display(name: str | None, label: str | None) -> str | None:
    """`CUDA_MEMCPY_KIND_HTOD` -> `HtoD`; anything else keeps its label."""
    match = _COPY_NAME.match(name or "")
    if match:
        prefix = "Unified " if match.group(1) else ""
        return f"{prefix}{match.group(2)}to{match.group(3)}"
    return label or name


def _memory_display(name: str | None, label: str | None) -> str | None:
    if label:
        return label
    if name:
        return name.removeprefix("CUDA_MEMOPR_MEMORY_KIND_").replace("_", " ").capitalize()
    return None


def _read_enum(
    conn: sqlite3.Connection,
    table: str,
    tables: set[str],
    display: Callable[[str | None, str | None], str | None],
) -> dict[int, str]:
    if table not in tables:
        return {}
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if "id" not in columns:
        return {}
    name = "CAST(name AS TEXT)" if "name" in columns else "NULL"
    label = "CAST(label AS TEXT)" if "label" in columns else "NULL"
    rows = conn.execute(f"SELECT id, {name}, {label} FROM {table}").fetchall()
    return {int(i): shown for i, n, lab in rows if i is not None and (shown := display(n, lab))}


def memcpy_kinds(conn: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """Copy-kind id -> short name: the export's ENUM table over the embedded map."""
    return MEMCPY_KIND | _read_enum(conn, "ENUM_CUDA_MEMCPY_OPER", tables, _memcpy_display)


def memory_kinds(conn: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """Memory-kind id -> name: the export's ENUM table over the embedded map."""
    return MEMORY_KIND | _read_enum(conn, "ENUM_CUDA_MEM_KIND", tables, _memory_display)


def nvtx_event_types(conn: sqlite3.Connection, tables: set[str]) -> dict[str, int]:
    """NVTX event-type name -> id, from ENUM_NSYS_EVENT_TYPE when present."""
    found = _read_enum(conn, "ENUM_NSYS_EVENT_TYPE", tables, lambda name, label: name)
    by_name = {name: i for i, name in found.items()}
    return {name: by_name.get(name, default) for name, default in NVTX_EVENT_TYPE.items()}


def api_event_classes(conn: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """Event-class id -> api_calls category for CUDA runtime and driver calls."""
    found = _read_enum(conn, "ENUM_NSYS_EVENT_CLASS", tables, lambda name, label: label or name)
    wanted = {"cuda runtime": "cuda_runtime", "cuda driver": "cuda_driver"}
    from_table = {i: wanted[text.lower()] for i, text in found.items() if text.lower() in wanted}
    return from_table if len(from_table) == len(wanted) else dict(EVENT_CLASS_CATEGORY)


def named(column: str, names: dict[int, str]) -> pl.Expr:
    """Map an integer enum column to its names; unknown ids become `kind <n>`, nulls stay null."""
    return pl.col(column).replace_strict(names, default=pl.format("kind {}", pl.col(column)), return_dtype=pl.String)
