"""Link GPU activity to the CPU side and shape the canonical tables.

* kernel / copy / memset -> runtime call: equal `correlation` in the same file.
* -> CPU op (spec §6): the op whose `External id` equals the GPU event's, when
  that op is a `cpu_op` / `user_annotation` / step that is open at the
  runtime call on the runtime call's thread (or the runtime call is missing);
  otherwise the innermost such range open at the runtime call on its thread
  (traces whose GPU `External id` is the correlation id match no op).
* layer comes from that op; pass and profiler step from the ops enclosing the
  launch and its time (`passes.gpu_passes`); FLOPs from the outermost range with a
  formula around it (`flop_owner`), shared among the kernels under that range
  in proportion to their durations, so per-layer sums are not double counted
  and a kernel's FLOP/s equals its op's.
"""

from __future__ import annotations

import polars as pl

from dashboard.collectors.kineto.nesting import PARENT, ROW, enclosing
from dashboard.collectors.kineto.passes import gpu_passes
from dashboard.collectors.kineto.ranges import OP_CATEGORIES, TRACK

_MEMCPY_NAME = r"^Memcpy (\w+) \((\w+) -> (\w+)\)"
_MEMSET_NAME = r"^Memset \((\w+)\)"
_KERNEL_ONLY = (
    *(f"{prefix}_{axis}" for prefix in ("grid", "block") for axis in "xyz"),
    "registers",
    "shared_memory",
)


def _first_per_key(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    frame = frame.drop_nulls(keys)
    if len(keys) == 1 and frame.get_column(keys[0]).n_unique() == frame.height:
        return frame  # the usual case, and a cheap check
    return frame.filter(pl.struct(keys).is_first_distinct())


def _keys(frames: list[pl.DataFrame], key: str) -> list[str]:
    """Join keys within one file; the file column only matters when there are several."""
    files = {file for frame in frames if frame.height for file in frame.get_column("file").unique().to_list()}
    return ["file", key] if len(files) > 1 else [key]


def _joined(frame: pl.DataFrame, lookup: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`frame` with `lookup`'s other columns by `keys` (a left join; `lookup` holds each key once).

    Only the key columns go through the join and its columns are added beside `frame`'s: a join of the
    whole frame gathers every column of every GPU event again (two such copies of the largest frame were
    a fifth of the linking's memory traffic).
    """
    found = frame.select(keys).join(lookup, on=keys, how="left", maintain_order="left")
    return frame.hstack(found.drop(keys).get_columns())


def link_gpu(gpu: pl.DataFrame, api: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Add `op_row` (row of the launching op in `ranges`) to every GPU event.

    The launching call's thread and start stay (`api_pid_key`, `api_tid_key`,
    `api_start`, `api_found`): the pass and step of the event depend on them.
    """
    if gpu.height == 0:
        return gpu.with_columns(pl.lit(None, pl.Int64).alias("op_row"))
    has_ranges = ranges.height > 0
    if has_ranges and api.height:
        eligible = ranges.select(pl.col("category").is_in(OP_CATEGORIES)).to_series()
        api_op = enclosing(api, ranges, TRACK, eligible)
        calls = api.select("file", "correlation", *[pl.col(c).alias(f"api_{c}") for c in TRACK[1:]],
                           pl.col("start_ns").alias("api_start"), api_op.alias("api_op"))
    else:
        calls = pl.DataFrame(schema={"file": pl.Int32, "correlation": pl.Int64, "api_pid_key": pl.Int64,
                                     "api_tid_key": pl.Int64, "api_start": pl.Int64, "api_op": pl.Int64})
    by_correlation = _keys([gpu, api, ranges], "correlation")
    calls = _first_per_key(calls, by_correlation).with_columns(pl.lit(True).alias("api_found"))
    calls = calls.drop("file") if "file" not in by_correlation else calls
    linked = _joined(gpu, calls, by_correlation)
    if not has_ranges:
        return linked.with_columns(pl.lit(None, pl.Int64).alias("op_row"))

    by_external_id = _keys([gpu, api, ranges], "external_id")
    ops = _first_per_key(
        ranges.filter(pl.col("category").is_in(OP_CATEGORIES)).select(
            *by_external_id, pl.col(ROW).alias("ext_row"),
            pl.col("pid_key").alias("ext_pid"), pl.col("tid_key").alias("ext_tid"),
            pl.col("start_ns").alias("ext_start"), pl.col("end_ns").alias("ext_end"),
        ),
        by_external_id,
    )
    linked = _joined(linked, ops, by_external_id)
    at = pl.col("api_start")
    ext_holds_call = (
        (pl.col("ext_pid") == pl.col("api_pid_key"))
        & (pl.col("ext_tid") == pl.col("api_tid_key"))
        & (pl.col("ext_start") <= at)
        & ((pl.col("ext_end") > at) | (pl.col("ext_end") == at))
    )
    ext_valid = pl.col("ext_row").is_not_null() & (pl.col("api_found").is_null() | ext_holds_call.fill_null(False))
    return linked.with_columns(
        pl.when(ext_valid).then(pl.col("ext_row")).otherwise(pl.col("api_op")).alias("op_row")
    ).drop("ext_row", "ext_pid", "ext_tid", "ext_start", "ext_end", "api_op")


# Linked columns the tables do not read again (the joins are done).
_LINK_ONLY = ("pid_key", "tid_key", "external_id")


def in_time_order_by_kind(linked: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kernels, copies and memsets) of the linked GPU events, each sorted by start, in one gather each.

    Tables are stored in time order (`store.files.write_table` sorts what is not): GPU events of several
    streams arrive slightly out of order, and a filter here plus that sort were two copies of the largest
    table, the second at the very end of the ingest. Both gathers come first so that the caller can let
    the linked events go before the tables are built (they were ~45 MB of the peak at 262 MB).
    """
    order = (
        linked.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_at"), "start_ns",
                      (pl.col("category") == "kernel").alias("_kernel"))
        .sort("start_ns", maintain_order=True, nulls_last=True)
    )
    kept = linked.drop(_LINK_ONLY, strict=False)
    kernels = order.filter(pl.col("_kernel")).get_column("_at")
    copies = order.filter(~pl.col("_kernel")).get_column("_at")
    return kept.drop("category")[kernels], kept[copies]


def _from_op(linked: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """op / layer of each GPU event's op (null where no op is known), its pass and step."""
    passes = gpu_passes(linked, ranges).get_columns()
    if ranges.height == 0:
        return linked.with_columns(
            pl.lit(None, pl.String).alias("op"), pl.lit(None, pl.String).alias("layer"),
            pl.lit(None, pl.Int64).alias("flop_owner"), *passes,
        )
    row = linked.get_column("op_row")
    return linked.with_columns(
        ranges.get_column("name").gather(row).alias("op"),
        ranges.get_column("layer").gather(row).alias("layer"),
        ranges.get_column("flop_owner").gather(row).alias("flop_owner"),
        *passes,
    )


def _device_stream() -> list[pl.Expr]:
    # A GPU event's pid is its device index and its tid its stream ("stream 7" in legacy traces).
    return [pl.col("pid_num").alias("device"), pl.col("tid_num").alias("stream")]


def kernels_table(kernel_events: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """The canonical kernels table from linked kernel events in time order (`in_time_order_by_kind`)."""
    kernels = _from_op(kernel_events, ranges)
    duration = (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64)
    if ranges.height:
        owner_flops = ranges.get_column("own_flops").gather(kernels.get_column("flop_owner"))
        kernels = kernels.with_columns(owner_flops.alias("_owner_flops"))
    else:
        kernels = kernels.with_columns(pl.lit(None, pl.Float64).alias("_owner_flops"))
    total = duration.sum().over("flop_owner")
    count = pl.len().over("flop_owner")
    share = pl.when(total > 0).then(duration / total).otherwise(1.0 / count)
    flops = pl.when(pl.col("flop_owner").is_not_null()).then(pl.col("_owner_flops") * share)
    missing = [pl.lit(None, pl.Int64).alias(c) for c in _KERNEL_ONLY if c not in kernels.columns]
    return kernels.with_columns(missing).select(
        "rank", *_device_stream(), "correlation", pl.col("name").cast(pl.String), "start_ns", "end_ns", *_KERNEL_ONLY,
        "op", "layer", "pass", "pass_annotation", "step", flops.alias("flops"),
    )


def memcpy_table(copy_events: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Copies and memsets (linked, in time order: `in_time_order_by_kind`); direction and memory kinds
    parsed from the name."""
    copies = _from_op(copy_events, ranges)
    if "bytes" not in copies.columns:  # no copy or memset in any file
        copies = copies.with_columns(pl.lit(None, pl.Int64).alias("bytes"))
    name = pl.col("name").cast(pl.String)
    is_memset = pl.col("category") == "gpu_memset"
    return copies.select(
        "rank", *_device_stream(), "correlation",
        pl.when(is_memset).then(pl.lit("Memset")).otherwise(name.str.extract(_MEMCPY_NAME, 1)).alias("kind"),
        pl.when(is_memset).then(None).otherwise(name.str.extract(_MEMCPY_NAME, 2)).alias("src_kind"),
        pl.when(is_memset).then(name.str.extract(_MEMSET_NAME, 1))
        .otherwise(name.str.extract(_MEMCPY_NAME, 3)).alias("dst_kind"),
        "bytes", "start_ns", "end_ns", "op", "layer", "pass", "pass_annotation", "step",
    )


def api_table(api: pl.DataFrame) -> pl.DataFrame:
    return api.select(
        "rank", pl.col("tid_num").alias("thread"), pl.col("name").cast(pl.String), "category", "correlation",
        "start_ns", "end_ns",
    )


def ranges_table(ranges: pl.DataFrame) -> pl.DataFrame:
    """The canonical ranges table: ids unique per rank, parents as ids."""
    if ranges.height == 0:
        return ranges
    ids = ranges.select(pl.int_range(pl.len(), dtype=pl.Int64).over("rank").alias("id")).to_series()
    return ranges.select(
        "rank",
        ids.alias("id"),
        pl.when(pl.col("category") == "gpu_user_annotation").then(pl.col("pid_num")).alias("device"),
        pl.col("tid_num").alias("thread"),
        "name", "category", "start_ns", "end_ns", "depth",
        ids.gather(ranges.get_column(PARENT)).alias("parent"),
        "pass", "step", "layer", "sequence",
        pl.col("flops_inclusive").alias("flops"),
        pl.col("external_id").alias("correlation"),
        *(column for column in ("input_shapes", "input_dtypes") if column in ranges.columns),
    )
