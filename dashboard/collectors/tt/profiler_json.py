"""The memory profiler's JSON outputs: `_memory.json`, `_operations.json`, `_inputs_registry.json`.

v0 (tt-swiss 8d92e87): memory.json is `{metadata, operations: [...]}` or, in old
files, a bare list; element n of operations.json describes element n of
memory.json. v1 adds `unpadded_memory` per op (device-wide bytes of the live
tensors it tracks), `rank`, `program_index` and `metadata.programs`.

Deallocate / get_device ops are absent from these files, so a compute op's delta
here is net of the frees that followed it; the runtime log is preferred when both
are there (see collector.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import IngestError
from dashboard.collectors.failures import json_problem
from dashboard.collectors.tt.common import OpMemoryTables, mib_to_bytes, op_memory_columns, top_program_of
from dashboard.collectors.tt.mlir_text import tensor_facts

_VIEW_FIELDS = {
    "total_per_bank": "totalBytesPerBank_MB",
    "allocated_per_bank": "totalBytesAllocatedPerBank_MB",
    "free_per_bank": "totalBytesFreePerBank_MB",
    "largest_free_per_bank": "largestContiguousBytesFreePerBank_MB",
}


def _read_json(path: Path, data: bytes) -> pl.DataFrame:
    try:
        return pl.read_json(io.BytesIO(data), infer_schema_length=None)
    except Exception:  # polars raises several kinds for bad JSON; its wording is not for users
        raise IngestError(path, json_problem(data, "not a table of records")) from None


def _records(path: Path, data: bytes, what: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The list of op records (bare list or under `operations`) and the `metadata` object."""
    frame = _read_json(path, data)
    metadata: dict[str, Any] = {}
    if "operations" in frame.columns and frame.height == 1:
        if "metadata" in frame.columns:
            metadata = frame["metadata"][0] or {}
        records = frame.select(pl.col("operations").explode()).filter(pl.col("operations").is_not_null())
        if records.is_empty():
            raise IngestError(path, f"the {what} has no operations")
        if not isinstance(records.schema["operations"], pl.Struct):
            raise IngestError(path, f"the {what}'s `operations` are not JSON objects (where: the `operations` list)")
        frame = records.unnest("operations")
    if frame.is_empty():
        raise IngestError(path, f"the {what} has no operations")
    return frame.with_row_index("_pos").with_columns(pl.col("_pos").cast(pl.Int64)), metadata


def _column(frame: pl.DataFrame, name: str, dtype: pl.DataType) -> pl.Expr:
    if name in frame.columns:
        return pl.col(name).cast(dtype, strict=False)
    return pl.lit(None, dtype)


def _memory_rows(path: Path, ops: pl.DataFrame) -> pl.DataFrame:
    if "memory" not in ops.columns or not isinstance(ops.schema["memory"], pl.Struct):
        raise IngestError(path, "memory.json records have no 'memory' object (expected "
                                "{'DRAM': {'numBanks': ..., 'totalBytesAllocatedPerBank_MB': ...}, ...})")
    parts = []
    for type_field in ops.schema["memory"].fields:  # type: ignore[union-attr]
        view = pl.col("memory").struct.field(type_field.name)
        names = {f.name for f in type_field.dtype.fields} if isinstance(type_field.dtype, pl.Struct) else set()
        missing = sorted({"numBanks", *_VIEW_FIELDS.values()} - names)
        if missing:
            raise IngestError(path, f"memory entries for {type_field.name} lack {', '.join(missing)}")
        part = ops.filter(view.is_not_null()).select(
            "_pos",
            pl.lit(type_field.name.replace(" ", "_")).alias("buffer_type"),
            view.struct.field("numBanks").cast(pl.Int32, strict=False).alias("banks"),
            *(mib_to_bytes(view.struct.field(src)).alias(dst) for dst, src in _VIEW_FIELDS.items()),
        )
        parts.append(part)
    rows = pl.concat(parts) if parts else pl.DataFrame()
    if rows.is_empty():
        raise IngestError(path, "no memory values in memory.json (every 'memory' object is empty)")
    broken = rows.filter(pl.any_horizontal(pl.all().is_null()))
    if broken.height:
        raise IngestError(path, f"operation at position {broken['_pos'][0]}: {broken['buffer_type'][0]} memory "
                                "has missing or non-numeric values")
    return rows


def _unpadded_rows(ops: pl.DataFrame) -> pl.DataFrame | None:
    """v1 `unpadded_memory`: {DRAM: {unpadded_bytes, padded_bytes, ...}, L1: {...}} per op."""
    if "unpadded_memory" not in ops.columns or not isinstance(ops.schema["unpadded_memory"], pl.Struct):
        return None
    parts = []
    for type_field in ops.schema["unpadded_memory"].fields:  # type: ignore[union-attr]
        entry = pl.col("unpadded_memory").struct.field(type_field.name)
        names = {f.name for f in type_field.dtype.fields} if isinstance(type_field.dtype, pl.Struct) else set()
        if not {"unpadded_bytes", "padded_bytes"} <= names:
            continue
        parts.append(ops.filter(entry.is_not_null()).select(
            "_pos", pl.lit(type_field.name).alias("buffer_type"),
            entry.struct.field("unpadded_bytes").cast(pl.Int64, strict=False).alias("unpadded_bytes"),
            entry.struct.field("padded_bytes").cast(pl.Int64, strict=False).alias("padded_bytes"),
        ))
    return pl.concat(parts) if parts else None


def _programs(const_eval_names: list[str], metadata: dict[str, Any]) -> pl.Expr:
    """Program per op: v1 metadata ranges when present, else the const-eval graph or its caller."""
    graph = pl.col("const_eval_graph")
    ranges = metadata.get("programs") if isinstance(metadata, dict) else None
    if ranges:
        program = pl.lit(None, pl.String)
        for entry in ranges:
            inside = pl.col("_pos").is_between(entry.get("start_op_index", -1), entry.get("end_op_index", -2))
            program = pl.when(inside).then(pl.lit(entry.get("name"))).otherwise(program)
        return pl.coalesce(graph, program)
    return pl.coalesce(graph, pl.lit(top_program_of(const_eval_names), pl.String))


def read_memory_json(path: Path, data: bytes, operations: tuple[Path, bytes] | None = None) -> OpMemoryTables:
    """memory.json (+ operations.json, joined by position) into op_memory / op_meta rows."""
    ops, metadata = _records(path, data, "memory.json")
    base = ops.select(
        "_pos",
        _column(ops, "rank", pl.Int32).fill_null(0).alias("rank"),
        pl.col("_pos").alias("op_index"),
        pl.coalesce(_column(ops, "index", pl.Int64), pl.col("_pos")).alias("profiler_index"),
        _column(ops, "op_type", pl.String).alias("op_type"),
        _column(ops, "mlir_op", pl.String).alias("mlir_op"),
        _column(ops, "loc", pl.String).alias("loc"),
        _column(ops, "const_eval_graph", pl.String).alias("const_eval_graph"),
    )
    graphs = base["const_eval_graph"].drop_nulls().unique().to_list()
    base = base.with_columns(
        _programs(graphs, metadata).alias("program"),
        pl.col("const_eval_graph").is_not_null().alias("is_weight_op"),
    )
    meta = base.select("_pos", "rank", "program", "op_index", "mlir_op", "loc", "const_eval_graph", "is_weight_op",
                       "profiler_index")
    warnings: list[str] = []
    if operations is not None:
        meta = _join_operations(path, base, *operations)
    # load_cached has no loc of its own; v1 names it after the const-eval program it runs.
    base = base.join(meta.select("_pos", pl.col("loc").alias("_loc")), on="_pos", how="left").with_columns(
        pl.coalesce("loc", "_loc").alias("loc")).drop("_loc")
    rows = _memory_rows(path, ops)
    unpadded = _unpadded_rows(ops)
    if unpadded is not None:
        rows = rows.join(unpadded, on=["_pos", "buffer_type"], how="left")
    op_memory = op_memory_columns(rows.lazy().join(base.lazy(), on="_pos", how="left")).sort(
        "_pos", maintain_order=True).drop("_pos").collect()
    info = {"ops": base.height, "total_operations": metadata.get("total_operations"),
            "schema": "v1" if unpadded is not None else "v0"}
    return OpMemoryTables(op_memory, meta.sort("_pos").drop("_pos"), info, warnings)


def _join_operations(memory_path: Path, base: pl.DataFrame, path: Path, data: bytes) -> pl.DataFrame:
    """operations.json element n describes memory.json element n; anything else is refused."""
    records, _ = _records(path, data, "operations.json")
    if records.height != base.height:
        raise IngestError(path, f"{records.height} operation records but {memory_path.name} has {base.height} "
                                "memory entries; element n of one must be op n of the other, so they cannot be "
                                "joined (files from different runs, or one of them cut short?)")
    ops = records.select(
        "_pos",
        _column(records, "index", pl.Int64).alias("_index"),
        _column(records, "mlir_op", pl.String).alias("_mlir_op"),
        _column(records, "loc", pl.String).alias("_loc"),
        _column(records, "result", pl.String).alias("result"),
        _column(records, "inputs", pl.List(pl.String)).alias("inputs"),
        _column(records, "attributes", pl.String).alias("attributes"),
        _column(records, "input_shapes", pl.List(pl.String)).alias("input_shapes"),
        _column(records, "input_dtypes", pl.List(pl.String)).alias("input_dtypes"),
        _column(records, "output_shapes", pl.List(pl.String)).alias("output_shapes"),
        _column(records, "output_dtypes", pl.List(pl.String)).alias("output_dtypes"),
        _column(records, "is_weight_op", pl.Boolean).alias("_weight"),
        *tensor_facts(_column(records, "output_type", pl.String), "_out", with_placement=True),
    ).drop("_out_shapes", "_out_dtypes")
    joined = base.join(ops, on="_pos", how="left")
    clash = joined.filter(
        (pl.col("_index").is_not_null() & (pl.col("_index") != pl.col("profiler_index")))
        | pl.col("_mlir_op").ne_missing(pl.col("mlir_op")) & pl.col("_mlir_op").is_not_null()
        | pl.col("_loc").ne_missing(pl.col("loc")) & pl.col("_loc").is_not_null() & pl.col("loc").is_not_null()
    )
    if clash.height:
        row = clash.row(0, named=True)
        raise IngestError(path, f"record {row['_pos']} ({row['_mlir_op']} at {row['_loc']}) does not match "
                                f"{memory_path.name} entry {row['_pos']} ({row['mlir_op']} at {row['loc']}); "
                                "the files are not from the same run")
    callee = pl.col("inputs").list.first()
    return joined.select(
        "_pos", "rank", "program", "op_index", "mlir_op",
        pl.coalesce("loc", pl.when((pl.col("mlir_op") == "ttcore.load_cached") & callee.str.starts_with("@"))
                    .then(callee)).alias("loc"),
        "result", "inputs", "attributes", "input_shapes", "input_dtypes", "output_shapes", "output_dtypes",
        "layouts", "buffer_types", "const_eval_graph",
        # operations.json also flags ops that consume a parameter (matched by shape) as weight ops.
        pl.coalesce("_weight", "is_weight_op").alias("is_weight_op"),
        "profiler_index",
    )


def read_registry(path: Path, data: bytes) -> dict[str, Any]:
    """The inputs registry's summary (weights and inputs of `main`) for run metadata."""
    frame = _read_json(path, data)
    if "entries" not in frame.columns:
        raise IngestError(path, "an inputs registry needs an 'entries' list")
    summary = frame["metadata"][0] if "metadata" in frame.columns else None
    return {key: value for key, value in (summary or {}).items() if value is not None}
