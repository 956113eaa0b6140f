"""Vectorised reading of the MLIR text the runtime prints after `Executing operation:`.

    %4 = "ttnn.typecast"(%3) <{dtype = ...}> : (IN_TYPES) -> OUT_TYPES loc("convert.80")
    %1:2 = ttcore.load_cached(@main_const_eval_0, [%arg1, %arg2]) : (...) -> (...) loc(unknown)

Every step is a polars string expression over all op lines at once (positions
found with literal `str.find`, pieces cut with `str.slice`), because a 100 k-op
log has ~100 MB of op text and a per-line Python loop would dominate ingest time.
"""

from __future__ import annotations

import polars as pl

ANSI = r"\x1b\[[0-9;]*m"
_HEAD = r'^(?:(%[\w:#]+)\s*=\s*)?"?([\w.]+)"?\(([^)]*)\)'
# The arrow between the input and output types: affine maps inside layouts also
# contain " -> ", but there the right side is an index list, never a type.
_TOP_ARROW = r"\) -> (?:\(\)|\(?(?:tensor<|!|none))"
# One whole TTNN tensor type; the lazy part stops at the tensor's own buffer_type.
_TENSOR_HEAD = r"tensor<[0-9x]*[a-z][a-z0-9]*"
# memref<ROWSxCOLSx(!ttcore.tile<32x32, DTYPE>|DTYPE), #ttnn.buffer_type<BT>>[, <MEMORY_LAYOUT>]
_PLACEMENT = r"memref<[^,]*(?:, [a-z0-9]+>)?, #ttnn\.buffer_type<\w+>>(?:, <\w+>)?"


def parse_op_text(frame: pl.LazyFrame, column: str = "text") -> pl.LazyFrame:
    """Add result, mlir_op, inputs, attributes, input_types, output_types and loc columns."""
    text = pl.col(column)
    attrs_open = text.str.find("<{", literal=True)
    attrs_close = text.str.find("}> : (", literal=True)
    frame = frame.with_columns(
        text.str.extract_groups(_HEAD).alias("_head"),
        pl.when(attrs_close.is_not_null() & (attrs_open < attrs_close))
        .then(text.str.slice(attrs_open + 2, attrs_close - attrs_open - 2))
        .alias("attributes"),
        pl.when(attrs_close.is_not_null() & (attrs_open < attrs_close))
        .then(attrs_close + 2)
        .otherwise(text.str.find(" : (", literal=True))
        .alias("_sig"),
        text.str.find(" loc(", literal=True).alias("_loc_at"),
    )
    types = text.str.slice(pl.col("_sig") + 3, pl.col("_loc_at") - pl.col("_sig") - 3)
    frame = frame.with_columns(
        pl.col("_head").struct.field("1").alias("result"),
        pl.col("_head").struct.field("2").alias("mlir_op"),
        pl.col("_head").struct.field("3").alias("_operands"),
        pl.when(pl.col("_loc_at").is_null()).then(text.str.slice(pl.col("_sig") + 3)).otherwise(types)
        .alias("_types"),
        text.str.slice(pl.col("_loc_at") + 5).str.extract(r'^(?:fused\[)?"([^"]*)"').alias("loc"),
    )
    arrow = pl.col("_types").str.find(_TOP_ARROW)
    outputs = pl.col("_types").str.slice(arrow + 5).str.strip_chars(" ")
    frame = frame.with_columns(
        pl.col("_operands").str.extract_all(r"[%@][\w#.:]+").alias("inputs"),
        pl.col("_types").str.slice(1, arrow - 1).alias("input_types"),
        pl.when(outputs.str.starts_with("(") & outputs.str.ends_with(")"))
        .then(outputs.str.slice(1, outputs.str.len_chars() - 2))
        .otherwise(outputs)
        .alias("output_types"),
    )
    frame = frame.with_columns(
        pl.coalesce(
            "loc",
            pl.when(pl.col("mlir_op") == "ttcore.load_cached").then(pl.col("inputs").list.first()),
        ).alias("loc")
    )
    return frame.drop("_head", "_sig", "_loc_at", "_operands", "_types")


def tensor_facts(types: pl.Expr, prefix: str, with_placement: bool = False) -> list[pl.Expr]:
    """Per-tensor shapes and dtypes (and, for outputs, buffer types and layouts) of a type list.

    One `extract_all` per fact and only literal cuts inside the lists (a regex per
    list element costs twice as much). `tensor<(\\d+x)*` also matches a rank-0
    tensor, so shapes and dtypes always line up. Every TTNN tensor type has one
    `memref<...>, buffer_type<...>` tail; where the counts differ (a tensor without
    a TTNN layout) placement is left null for that op.
    """
    element = pl.element()
    facts = [
        types.str.extract_all(r"tensor<(?:\d+x)*").list.eval(element.str.slice(7).str.strip_suffix("x"))
        .alias(f"{prefix}_shapes"),
        types.str.extract_all(_TENSOR_HEAD).list.eval(
            element.str.strip_prefix("tensor<").str.strip_chars_start("0123456789x")).alias(f"{prefix}_dtypes"),
    ]
    if with_placement:
        placements = types.str.extract_all(_PLACEMENT)
        buffer_at = element.str.find("buffer_type<", literal=True) + 12
        buffer_type = element.str.slice(buffer_at, element.str.find(">>", literal=True) - buffer_at)
        tiling = pl.when(element.str.contains("!ttcore.tile<", literal=True)).then(pl.lit("tile"))
        tiling = tiling.otherwise(pl.lit("row_major"))
        memory_layout = element.str.slice(element.str.find(">>, <", literal=True) + 5).str.strip_suffix(">")
        layout = pl.when(element.str.contains(">>, <", literal=True)).then(
            pl.concat_str(tiling, pl.lit("/"), memory_layout)).otherwise(tiling)
        aligned = types.str.count_matches(r"tensor<", literal=True) == placements.list.len()
        facts += [
            pl.when(aligned).then(placements.list.eval(buffer_type.str.to_uppercase())).alias("buffer_types"),
            pl.when(aligned).then(placements.list.eval(layout)).alias("layouts"),
        ]
    return facts


def strip_ansi(expr: pl.Expr) -> pl.Expr:
    """Remove terminal colour codes (the tt-mlir logger always colours its prefix)."""
    return expr.str.replace_all(ANSI, "")
