"""Kineto `[memory]` instants -> the `device_memory` table.

`profile_memory=True` writes one instant per allocation and free on the
thread that made it: `Device Type` (0 CPU, 1 CUDA), `Device Id`, `Addr`,
`Bytes` (negative on free) and, in traces since 2022, the caching
allocator's `Total Allocated` / `Total Reserved` after the event. 2021
traces carry `Bytes` only: `allocated` is then the running sum of `Bytes`
per device from the trace start (`relative` = true: the memory held before
the profiler started is unknown and counted as 0) and `reserved` is null.

`op` is the innermost CPU op open at the event on its thread, found with the
same as-of join as a runtime call's launching op (`nesting.enclosing`).
"""

from __future__ import annotations

import polars as pl

from dashboard.collectors.kineto.nesting import enclosing
from dashboard.collectors.kineto.ranges import OP_CATEGORIES, TRACK
from dashboard.schema import conform

_DEVICE_NAMES = {0: "cpu", 1: "cuda"}


def _device() -> pl.Expr:
    kind = pl.col("device_type").replace_strict(_DEVICE_NAMES, default=None, return_dtype=pl.String)
    named = pl.when(kind == "cpu").then(pl.lit("cpu")).otherwise(
        pl.concat_str([kind, pl.lit(":"), pl.col("device_id").fill_null(0).cast(pl.String)])
    )
    other = pl.concat_str([pl.lit("device type "), pl.col("device_type").cast(pl.String), pl.lit(":"),
                           pl.col("device_id").fill_null(0).cast(pl.String)])
    return pl.when(kind.is_not_null()).then(named).otherwise(other).fill_null("unknown").alias("device")


def device_memory_table(memory: pl.DataFrame, ranges: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The `device_memory` rows of all files' `[memory]` instants (times in ns); (table, warnings).

    `ranges` is the nested range frame (`ranges.prepare`), for the enclosing op.
    """
    warnings: list[str] = []
    if memory.height == 0:
        return conform("device_memory", pl.DataFrame()), warnings
    unsized = memory.get_column("mem_bytes").is_null()
    if unsized.any():
        warnings.append(f"skipped {int(unsized.sum()):,} [memory] events without `Bytes`")
        memory = memory.filter(~unsized)
    if ranges.height:
        eligible = ranges.select(pl.col("category").is_in(OP_CATEGORIES)).to_series()
        op_row = enclosing(memory, ranges, TRACK, eligible)
        op = ranges.get_column("name").gather(op_row)
    else:
        op = pl.Series("op", [None], dtype=pl.String).new_from_index(0, memory.height)
    frame = memory.with_columns(op.alias("op"), _device()).with_row_index("_order")
    # Events in time order per device; events of one µs keep the file's order (an alloc before its free).
    frame = frame.sort("rank", "device", "start_ns", "file", "_order")
    group = ["rank", "device"]
    frame = frame.with_columns(
        pl.col("total_allocated").is_null().all().over(group).alias("relative"),
    ).with_columns(
        pl.when(pl.col("relative"))
        .then(pl.col("mem_bytes").cum_sum().over(group))
        .otherwise(pl.col("total_allocated"))
        .alias("allocated"),
        pl.when(pl.col("relative")).then(None).otherwise(pl.col("total_reserved")).alias("reserved"),
    )
    table = frame.select(
        "rank",
        "device",
        pl.col("start_ns").alias("time_ns"),
        "addr",
        pl.col("mem_bytes").alias("bytes_delta"),
        "allocated",
        "reserved",
        "op",
        "relative",
        pl.when(pl.col("mem_bytes") < 0).then(pl.lit("free")).otherwise(pl.lit("alloc")).alias("action"),
    )
    return conform("device_memory", table), warnings
