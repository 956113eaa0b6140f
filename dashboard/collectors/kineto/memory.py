"""Kineto `[memory]` instants -> the `device_memory` table.

`profile_memory=True` writes one instant per allocation and free on the
thread that made it: `Device Type` (c10's DeviceType: 0 CPU, 1 CUDA, 6 HIP, 12 XPU, 19 MTIA, ...),
`Device Id`, `Addr`,
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
from dashboard.schema import conform, empty

# c10::DeviceType (torch/headeronly/core/DeviceType.h) -> the name PyTorch gives the device. A ROCm build
# names its HIP devices `cuda` (torch.device("cuda:0") on an AMD GPU), so HIP events are `cuda:N` too, and
# the vendor is kept beside the name (`device_vendors`).
DEVICE_NAMES = {0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "cuda", 7: "fpga",
                8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu",
                16: "ve", 17: "lazy", 18: "ipu", 19: "mtia", 20: "privateuseone"}
DEVICE_VENDORS = {1: "NVIDIA CUDA", 6: "AMD HIP (ROCm build: PyTorch names the device cuda)", 12: "Intel XPU",
                  13: "Apple MPS", 15: "Intel Gaudi HPU", 19: "Meta MTIA", 9: "XLA"}
_DEVICE_NAMES = DEVICE_NAMES


def device_vendors(memory: pl.DataFrame) -> dict[str, str]:
    """`device` name -> who makes it, for the device types a name does not tell apart (HIP is `cuda`)."""
    if memory.height == 0 or "device_type" not in memory.columns:
        return {}
    pairs = memory.select("device_type", "device_id").unique().drop_nulls("device_type")
    found: dict[str, str] = {}
    for device_type, device_id in pairs.iter_rows():
        vendor = DEVICE_VENDORS.get(device_type)
        name = DEVICE_NAMES.get(device_type)
        if vendor and name and name != "cpu":
            found[f"{name}:{device_id or 0}"] = vendor
    return found


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
        return empty("device_memory"), warnings
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
