"""Kernel launch statistics: launch delay, short kernels, launch-bound layers.

- launch delay = kernel start − end of the API call that launched it (joined
  by rank and correlation); kernels whose launch is not in the trace are left
  out of the delay figures.
- short kernel: shorter than SHORT_KERNEL_NS. Many of them make a run
  launch-bound: each costs a launch (several µs of CPU) for little GPU work.
- a layer is launch-bound when the launch-bound idle time (idle_causes) of
  the gaps its kernels end adds up to more than LAUNCH_BOUND_LAYER_SHARE of
  its kernel time.
"""

from __future__ import annotations

import polars as pl

SHORT_KERNEL_NS = 10_000  # 10 µs
LAUNCH_BOUND_LAYER_SHARE = 0.5


def launch_delays(kernels: pl.DataFrame, api_calls: pl.DataFrame) -> pl.DataFrame:
    """rank, name, layer, start_ns, duration_ns, delay_ns of each kernel (delay null without its launch)."""
    calls = api_calls.select(pl.col("rank").cast(pl.Int32), "correlation",
                             pl.col("end_ns").alias("launch_end_ns")).drop_nulls("correlation").unique(
        ["rank", "correlation"], keep="first")
    return kernels.select(pl.col("rank").cast(pl.Int32), "correlation", "name", "layer", "start_ns",
                          (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns")).join(
        calls, on=["rank", "correlation"], how="left").select(
        "rank", "name", "layer", "start_ns", "duration_ns", (pl.col("start_ns") - pl.col("launch_end_ns"))
        .alias("delay_ns"))


def launch_summary(delays: pl.DataFrame) -> pl.DataFrame:
    """Per rank: kernels, short kernels and their share of count and of kernel time; median / p95 delay."""
    short = pl.col("duration_ns") < SHORT_KERNEL_NS
    return delays.group_by("rank").agg(
        pl.len().alias("kernels"),
        short.sum().alias("short_kernels"),
        pl.col("duration_ns").sum().alias("kernel_ns"),
        pl.col("duration_ns").filter(short).sum().alias("short_kernel_ns"),
        pl.col("delay_ns").median().alias("median_delay_ns"),
        pl.col("delay_ns").quantile(0.95, "nearest").alias("p95_delay_ns"),
    ).with_columns(
        (pl.col("short_kernels") / pl.col("kernels")).alias("short_count_share"),
        pl.when(pl.col("kernel_ns") > 0).then(pl.col("short_kernel_ns") / pl.col("kernel_ns")).otherwise(None)
        .alias("short_time_share"),
    ).sort("rank")


def launch_bound_layers(kernels: pl.DataFrame, waits: pl.DataFrame) -> pl.DataFrame:
    """Per layer: kernel_ns, launch_bound_ns (launch-bound idle time ended by its kernels), kernels, short kernels.

    `waits`: rank, correlation (of the work that ended a gap), wait_ns (that gap's launch-bound ns, see
    idle_causes). Only layers whose launch-bound time exceeds LAUNCH_BOUND_LAYER_SHARE of their kernel time,
    most launch-bound time first.
    """
    layered = kernels.filter(pl.col("layer").is_not_null())
    per_kernel = layered.select(pl.col("rank").cast(pl.Int32), "correlation", "layer",
                                (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns")).join(
        waits, on=["rank", "correlation"], how="left")
    per_layer = per_kernel.group_by("layer").agg(
        pl.col("duration_ns").sum().alias("kernel_ns"),
        pl.col("wait_ns").sum().alias("launch_bound_ns"),
        pl.len().alias("kernels"),
        (pl.col("duration_ns") < SHORT_KERNEL_NS).sum().alias("short_kernels"),
    )
    return per_layer.filter(pl.col("launch_bound_ns") > LAUNCH_BOUND_LAYER_SHARE * pl.col("kernel_ns")).sort(
        "launch_bound_ns", "layer", descending=[True, False])
