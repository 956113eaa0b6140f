"""Per-operation device memory (`op_memory`, `op_meta`): curves, peaks, growth, regions.

Timing (tt-mlir runtime): snapshot i is the state *before* op i. So what op i
left behind is `delta_i = mem[i+1] - mem[i]`, and the buffer seen at a peak
snapshot i was allocated by op i-1 (the culprit), not by op i, which is only
about to run. The last op has no after-snapshot (its delta is null).

Deallocate / get_device ops ("housekeeping") keep their snapshots: they
separate an op's allocations from the frees that follow it. Op lists hide them
by default; curves and deltas always use them.

Sizes are bytes: `*_per_bank` as printed by the runtime (what decides whether a
buffer fits), the plain columns are device totals (x banks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

BUFFER_ORDER = ("DRAM", "L1", "L1_SMALL", "TRACE")
HOUSEKEEPING_OP_TYPES = ("DeallocateOp", "GetDeviceOp")
HOUSEKEEPING_MLIR_OPS = ("ttnn.deallocate", "ttnn.get_device")
_OP_COLUMNS = ("rank", "op_index", "profiler_index", "program", "op_type", "mlir_op", "loc", "const_eval_graph",
               "is_weight_op")
_GROUP = ("rank", "buffer_type")


def housekeeping() -> pl.Expr:
    """True for deallocate / get_device ops (by OpType or MLIR op name)."""
    return (pl.col("op_type").is_in(HOUSEKEEPING_OP_TYPES).fill_null(False)
            | pl.col("mlir_op").is_in(HOUSEKEEPING_MLIR_OPS).fill_null(False))


def fragmentation(free: str = "free_per_bank", largest: str = "largest_free_per_bank") -> pl.Expr:
    """External fragmentation 1 - largest free block / total free; 0 when nothing is free.

    The runtime rounds each value to 1/1000 MiB independently, so largest can
    exceed free by a rounding step: the result is clipped to [0, 1].
    """
    ratio = 1.0 - pl.col(largest).cast(pl.Float64) / pl.col(free).cast(pl.Float64)
    return pl.when(pl.col(free) > 0).then(ratio.clip(0.0, 1.0)).otherwise(0.0)


def _type_order() -> pl.Expr:
    """DRAM, L1, L1_SMALL, TRACE first, any other type after them."""
    return pl.col("buffer_type").replace_strict(
        {bt: i for i, bt in enumerate(BUFFER_ORDER)}, default=len(BUFFER_ORDER), return_dtype=pl.Int32)


def _order(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in (rank, op_index) order, which is all the per-type windows need.

    Stored tables already are (the collectors write them so); checking is far
    cheaper than sorting 400 k rows with their string columns.
    """
    in_order = frame.select(
        ((pl.col("rank").diff() > 0) | ((pl.col("rank").diff() == 0) & (pl.col("op_index").diff() >= 0)))
        .fill_null(True).all()).item()
    return frame if in_order else frame.sort("rank", "op_index", maintain_order=True)


def with_deltas(op_memory: pl.DataFrame) -> pl.DataFrame:
    """Add what each op left behind: next snapshot minus this one (per bank and device-wide)."""
    ordered = _order(op_memory)
    return ordered.with_columns(
        pl.col("allocated_per_bank").shift(-1).over(_GROUP).alias("allocated_after_per_bank"),
        (pl.col("allocated_per_bank").shift(-1) - pl.col("allocated_per_bank")).over(_GROUP).alias("delta_per_bank"),
        (pl.col("allocated").shift(-1) - pl.col("allocated")).over(_GROUP).alias("delta"),
    )


def memory_curves(op_memory: pl.DataFrame, per_bank: bool = True) -> pl.DataFrame:
    """One row per (op, buffer type): capacity, allocated, free, largest free, fragmentation, utilisation."""
    suffix = "_per_bank" if per_bank else ""
    present = [c for c in _OP_COLUMNS if c in op_memory.columns]
    extra = [c for c in ("unpadded_bytes", "padded_bytes") if c in op_memory.columns]
    return _order(op_memory).select(
        *present, "buffer_type", "banks",
        housekeeping().alias("housekeeping"),
        pl.col(f"total{suffix}").alias("capacity"),
        pl.col(f"allocated{suffix}").alias("allocated"),
        pl.col(f"free{suffix}").alias("free"),
        pl.col(f"largest_free{suffix}").alias("largest_free"),
        fragmentation().alias("fragmentation"),
        pl.when(pl.col("total_per_bank") > 0)
        .then(pl.col("allocated_per_bank") / pl.col("total_per_bank")).otherwise(0.0).alias("utilisation"),
        *extra,
    )


def peaks(op_memory: pl.DataFrame, housekeeping_snapshots: bool = True) -> pl.DataFrame:
    """The highest snapshot per buffer type (first on ties) and the op that allocated it (i-1).

    With `housekeeping_snapshots=False` the states seen just before deallocate /
    get_device ops are skipped, which is the profiler JSON's view (it drops those
    ops): the peak can then only be lower, and the culprit is the previous kept op.
    """
    if not housekeeping_snapshots:
        op_memory = op_memory.filter(~housekeeping())
    previous = [pl.col(c).shift(1).over(_GROUP).alias(f"culprit_{c}") for c in
                ("op_index", "profiler_index", "op_type", "mlir_op", "loc", "allocated_per_bank")]
    ordered = _order(op_memory).with_columns(*previous, fragmentation().alias("fragmentation"))
    first_max = pl.col("op_index") == pl.col("op_index").filter(
        pl.col("allocated_per_bank") == pl.col("allocated_per_bank").max()).min()
    found = ordered.filter(first_max.over(_GROUP)).sort(pl.col("rank"), _type_order(), pl.col("buffer_type"))
    return found.select(
        "rank", "buffer_type", "banks",
        pl.col("op_index").alias("peak_op_index"),
        pl.col("profiler_index").alias("peak_profiler_index"),
        pl.col("op_type").alias("next_op_type"), pl.col("mlir_op").alias("next_mlir_op"),
        pl.col("loc").alias("next_loc"),
        "allocated_per_bank", "allocated", pl.col("total_per_bank").alias("capacity_per_bank"),
        pl.col("total").alias("capacity"), "free_per_bank", "largest_free_per_bank", "fragmentation",
        pl.when(pl.col("total_per_bank") > 0).then(pl.col("allocated_per_bank") / pl.col("total_per_bank"))
        .otherwise(0.0).alias("utilisation"),
        "culprit_op_index", "culprit_profiler_index", "culprit_op_type", "culprit_mlir_op", "culprit_loc",
        (pl.col("allocated_per_bank") - pl.col("culprit_allocated_per_bank")).alias("culprit_delta_per_bank"),
    )


def top_growth(op_memory: pl.DataFrame, n: int = 10, buffer_types: Sequence[str] | None = None) -> pl.DataFrame:
    """The n ops that left the most memory behind (positive deltas), per buffer type.

    A frame that already went through `with_deltas` (and maybe a filter since, by
    program or op range: deltas must be taken before filtering) is used as it is.
    """
    has_deltas = "delta_per_bank" in op_memory.columns
    deltas = (op_memory if has_deltas else with_deltas(op_memory)).filter(pl.col("delta_per_bank") > 0)
    if buffer_types is not None:
        deltas = deltas.filter(pl.col("buffer_type").is_in(list(buffer_types)))
    present = [c for c in _OP_COLUMNS if c in deltas.columns]
    ranked = deltas.sort([pl.col("rank"), _type_order(), pl.col("buffer_type"), pl.col("delta_per_bank"),
                          pl.col("op_index")], descending=[False, False, False, True, False])
    return ranked.group_by(_GROUP, maintain_order=True).head(n).select(
        *present, "buffer_type", "banks", "delta_per_bank", "delta", "allocated_per_bank", "allocated_after_per_bank")


def const_eval_regions(op_memory: pl.DataFrame) -> pl.DataFrame:
    """Contiguous op-index ranges run inside one const-eval program (weights prepared there)."""
    ops = op_memory.select("rank", "op_index", "const_eval_graph").unique(["rank", "op_index"]).sort(
        "rank", "op_index")
    runs = ops.with_columns(pl.col("const_eval_graph").rle_id().over("rank").alias("_run"))
    return runs.filter(pl.col("const_eval_graph").is_not_null()).group_by("rank", "_run").agg(
        pl.col("const_eval_graph").first(),
        pl.col("op_index").min().alias("start_op_index"),
        pl.col("op_index").max().alias("end_op_index"),
        pl.len().alias("ops"),
    ).sort("rank", "start_op_index").drop("_run")


def filter_ops(frame: pl.DataFrame, op_types: Iterable[str] | None = None, mlir_ops: Iterable[str] | None = None,
               programs: Iterable[str] | None = None, op_range: tuple[int, int] | None = None,
               show_housekeeping: bool = True) -> pl.DataFrame:
    """Rows of any op-keyed frame by op type, MLIR op, program and inclusive op-index range."""
    conditions = []
    if op_types is not None:
        conditions.append(pl.col("op_type").is_in(list(op_types)))
    if mlir_ops is not None:
        conditions.append(pl.col("mlir_op").is_in(list(mlir_ops)))
    if programs is not None:
        conditions.append(pl.col("program").is_in(list(programs)))
    if op_range is not None:
        conditions.append(pl.col("op_index").is_between(op_range[0], op_range[1]))
    if not show_housekeeping:
        conditions.append(~housekeeping())
    return frame.filter(*conditions) if conditions else frame


def op_table(op_memory: pl.DataFrame, op_meta: pl.DataFrame | None = None, show_housekeeping: bool = False,
             per_bank: bool = True) -> pl.DataFrame:
    """One row per op with allocated-before and delta per buffer type (`DRAM_allocated`, `DRAM_delta`, ...).

    Deltas are taken over every snapshot before housekeeping ops are hidden, so a
    compute op's delta never absorbs the deallocates that follow it.
    """
    suffix = "_per_bank" if per_bank else ""
    deltas = with_deltas(op_memory)
    present = set(deltas["buffer_type"].unique())
    kinds = [bt for bt in BUFFER_ORDER if bt in present] + sorted(present - set(BUFFER_ORDER))
    info = [c for c in _OP_COLUMNS if c in deltas.columns]
    # One narrow frame per buffer type joined on the op: cheaper than a group-by over every row.
    first_of_op = (pl.col("op_index") != pl.col("op_index").shift(1)) | (pl.col("rank") != pl.col("rank").shift(1))
    table = deltas.filter(first_of_op.fill_null(True)).select(info)
    for bt in kinds:
        columns = deltas.filter(pl.col("buffer_type") == bt).select(
            "rank", "op_index", pl.col(f"allocated{suffix}").alias(f"{bt}_allocated"),
            pl.col(f"delta{suffix}").alias(f"{bt}_delta"))
        table = table.join(columns, on=["rank", "op_index"], how="left", maintain_order="left")
    if op_meta is not None:
        shapes = [pl.col(c).list.join(", ").alias(c) for c in ("input_shapes", "output_shapes")]
        table = table.join(op_meta.select("rank", "op_index", *shapes), on=["rank", "op_index"], how="left",
                           maintain_order="left")
    return filter_ops(table, show_housekeeping=show_housekeeping)


def range_stats(op_memory: pl.DataFrame, start: int, end: int, rank: int = 0) -> pl.DataFrame:
    """Per buffer type over ops start..end (inclusive): levels, peak, growth, frees, fragmentation."""
    deltas = with_deltas(op_memory.filter(pl.col("rank") == rank))
    inside = deltas.filter(pl.col("op_index").is_between(start, end))
    after_end = pl.col("allocated_after_per_bank").sort_by("op_index").last()
    stats = inside.group_by("buffer_type").agg(
        (~housekeeping()).sum().alias("ops"),
        (pl.col("op_type") == "DeallocateOp").sum().alias("deallocates"),
        pl.col("allocated_per_bank").sort_by("op_index").first().alias("start_per_bank"),
        pl.coalesce(after_end, pl.col("allocated_per_bank").sort_by("op_index").last()).alias("end_per_bank"),
        pl.col("allocated_per_bank").max().alias("peak_per_bank"),
        pl.col("op_index").sort_by("op_index").gather(
            pl.col("allocated_per_bank").sort_by("op_index").arg_max()).first().alias("peak_op_index"),
        pl.col("allocated_per_bank").min().alias("min_per_bank"),
        pl.col("allocated_per_bank").mean().alias("mean_per_bank"),
        pl.col("delta_per_bank").filter(pl.col("delta_per_bank") > 0).sum().alias("growth_per_bank"),
        (-pl.col("delta_per_bank").filter(pl.col("delta_per_bank") < 0).sum()).alias("freed_per_bank"),
        fragmentation().max().alias("max_fragmentation"),
        pl.col("total_per_bank").first().alias("capacity_per_bank"),
        pl.col("banks").first(),
    )
    stats = stats.with_columns((pl.col("end_per_bank") - pl.col("start_per_bank")).alias("net_per_bank"),
                               pl.lit(rank, pl.Int32).alias("rank"))
    return stats.sort(_type_order(), "buffer_type")


def op_detail(op_memory: pl.DataFrame, op_meta: pl.DataFrame | None, op_index: int, rank: int = 0) -> pl.DataFrame:
    """One op: per buffer type before / after / delta and free space, with its metadata on every row."""
    deltas = with_deltas(op_memory.filter(pl.col("rank") == rank)).filter(pl.col("op_index") == op_index)
    detail = deltas.select(
        "rank", "op_index", "buffer_type", "banks",
        pl.col("total_per_bank").alias("capacity_per_bank"),
        pl.col("allocated_per_bank").alias("before_per_bank"),
        pl.col("allocated_after_per_bank").alias("after_per_bank"),
        "delta_per_bank", "delta", "free_per_bank", "largest_free_per_bank",
        fragmentation().alias("fragmentation"),
        *(c for c in ("op_type", "program") if c in deltas.columns),
    )
    if op_meta is not None:
        meta = op_meta.filter((pl.col("rank") == rank) & (pl.col("op_index") == op_index)).drop("program")
        detail = detail.join(meta, on=["rank", "op_index"], how="left")
    return detail


def downsample(frame: pl.DataFrame, value: str, max_points: int, by: Sequence[str] = _GROUP) -> pl.DataFrame:
    """At most ~max_points rows per group: the min and max of `value` in each op-index bucket.

    Peaks and troughs survive (a bucket's extremes are kept exactly); the rows are
    real snapshots, so hover and click still name a real op.
    """
    if frame.height == 0:
        return frame
    groups = frame.group_by(list(by)).len()["len"].max() or 0
    if groups <= max_points:
        return frame
    buckets = max(max_points // 2, 1)
    span = frame["op_index"].max() - frame["op_index"].min() + 1
    width = -(-span // buckets)
    bucket = ((pl.col("op_index") - pl.col("op_index").min()) // width).alias("_bucket")
    keys = [*by, "_bucket"]
    marked = frame.with_columns(bucket).with_columns(
        ((pl.col("op_index") == pl.col("op_index").sort_by(value).first().over(keys))
         | (pl.col("op_index") == pl.col("op_index").sort_by(value, descending=True).first().over(keys))
         ).alias("_keep"))
    return marked.filter("_keep").drop("_bucket", "_keep")
