"""The canonical tables: every collector produces them, every view reads them (their columns live in
`activity`, `memory` and `compiler`).

Times are int64 nanoseconds on one clock per run (`start_ns`, `end_ns`), sizes
are int64 bytes. Kernel-side tables carry `rank` (0 for a single process).
`conform` is the single gate every table passes before it is written, so a
parquet file on disk always has exactly these columns and types.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from dashboard.schema.activity import ACTIVITY_TABLES
from dashboard.schema.compiler import COMPILER_TABLES, IR_DIALECTS
from dashboard.schema.memory import MEMORY_TABLES

__all__ = ["EVIDENCE_LABELS", "EVIDENCE_TABLES", "IR_DIALECTS", "MEMCPY_KIND_NAMES", "SCHEMA_VERSION", "TABLES",
           "conform", "empty", "evidence_of", "schema_of"]

SCHEMA_VERSION = 1

# The tables by kind of evidence, each in its own module; one dict, in the order runs write them.
TABLES: dict[str, dict[str, pl.DataType]] = {**ACTIVITY_TABLES, **MEMORY_TABLES, **COMPILER_TABLES}

# Which kinds of evidence a run holds follows from the tables it has.
EVIDENCE_TABLES: dict[str, tuple[str, ...]] = {
    # API calls alone are not kernel activity: a CPU-only trace still has some.
    "kernels": ("kernels", "memcpy"),
    "layers": ("ranges",),
    "stacks": ("stack",),
    "memory": ("op_memory",),
    "cuda_memory": ("device_memory", "memory_segments"),
    "planner": ("ws_buffers", "ws_ops", "ws_channels", "dot_nodes"),
    "compiler": ("ir_steps",),
    "rewrites": ("rewrite_steps",),
}

EVIDENCE_LABELS: dict[str, str] = {
    "kernels": "kernel activity",
    "layers": "ops and layers",
    "stacks": "Python call stacks",
    "memory": "device memory per op",
    "cuda_memory": "device memory over time (allocator events)",
    "planner": "warp-specialization planner",
    "compiler": "Triton compiler IR",
    "rewrites": "tinygrad graph rewrites",
}


def schema_of(table: str) -> pl.Schema:
    """The polars schema of a canonical table."""
    try:
        return pl.Schema(TABLES[table])
    except KeyError:
        raise KeyError(f"unknown canonical table {table!r}") from None


def empty(table: str) -> pl.DataFrame:
    """An empty frame with the table's schema."""
    return pl.DataFrame(schema=schema_of(table))


def conform(table: str, frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Cast `frame` to the canonical schema of `table`.

    Missing columns become nulls of the right type; columns the schema does not
    know are an error, because silently dropping them hides collector bugs.
    """
    schema = schema_of(table)
    lazy = frame.lazy()
    present = lazy.collect_schema()
    if not present.names():
        # A frame without columns has no rows: selecting only literals from it would make one all-null row.
        return empty(table)
    unknown = [name for name in present.names() if name not in schema]
    if unknown:
        raise ValueError(f"table {table!r} has columns outside its schema: {unknown}")
    columns = [
        pl.col(name).cast(dtype) if name in present else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in schema.items()
    ]
    return lazy.select(columns).collect()


def evidence_of(row_counts: Mapping[str, int]) -> list[str]:
    """The evidence kinds present given a table -> row count mapping."""
    return [
        kind
        for kind, tables in EVIDENCE_TABLES.items()
        if any(row_counts.get(table, 0) > 0 for table in tables)
    ]


# Copy direction ids -> the short names `memcpy.kind` holds. CUPTI's ActivityMemcpyKind and Nsight
# Systems' ENUM_CUDA_MEMCPY_OPER share ids 0-10; nsys adds the Unified (UVM) ones. (Their memory-kind
# enums differ: those stay with each reader.)
MEMCPY_KIND_NAMES: dict[int, str] = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
    9: "HtoH", 10: "PtoP", 11: "Unified HtoD", 12: "Unified DtoH", 13: "Unified DtoD",
}
