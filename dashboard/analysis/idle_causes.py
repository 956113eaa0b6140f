"""Why the GPU sat idle: each gap between busy stretches of a rank, with one cause.

A gap is the time between two consecutive pieces of the union of a rank's
kernels and copies (gpu_busy.merged_intervals), so gap lengths add up to the
breakdown's idle time. Causes, checked in this order (the first that holds):

- ``outside steps`` (data loading, evaluation, logging...): the run has
  profiler steps and the gap does not lie inside one of this rank's
  ProfilerStep ranges.
- ``synchronisation``: a blocking call (cudaDeviceSynchronize,
  cudaStreamSynchronize, cudaEventSynchronize, a synchronous cudaMemcpy) ends
  inside the gap, or the gap follows a device-to-host copy (`.item()`,
  `.cpu()`): the CPU waited for the GPU to drain, then had to issue new work.
- ``launch-bound`` (host-bound): the activity that ends the gap was launched
  by an API call that ended after the gap began: the GPU waited for the CPU.
- ``other``: work was launched in time but started late (waits on another
  stream or an event, or nothing explains it from the trace).
"""

from __future__ import annotations

import polars as pl

CAUSES = ("outside steps", "synchronisation", "launch-bound", "other")
SYNC_CALL_PATTERN = (r"^(cuda|cu)(Device|Stream|Event|Ctx)Synchroni[sz]e|^cudaMemcpy(2D|3D)?$|^cudaMemcpy(To|From)"
                     r"Symbol$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$")
_ASOF = {"by": "rank", "strategy": "backward", "check_sortedness": False}  # sorted within each rank
_GAP_SCHEMA = {"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "gap_ns": pl.Int64, "cause": pl.String,
               "next_correlation": pl.Int64}


def gaps(pieces: pl.DataFrame) -> pl.DataFrame:
    """rank, start_ns, end_ns, gap_ns of every gap between consecutive union pieces of a rank."""
    ordered = pieces.sort("rank", "start_ns")
    return ordered.select(
        "rank", pl.col("end_ns").alias("start_ns"), pl.col("start_ns").shift(-1).over("rank").alias("end_ns"),
    ).drop_nulls("end_ns").with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("gap_ns")).filter(
        pl.col("gap_ns") > 0)


def _launched(activity: pl.DataFrame, api_calls: pl.DataFrame) -> pl.DataFrame:
    """rank, start_ns, correlation, launch_end_ns of each activity (launch_end null without its API call)."""
    calls = api_calls.select(pl.col("rank").cast(pl.Int32), "correlation", pl.col("end_ns").alias("launch_end_ns"))
    calls = calls.drop_nulls("correlation").unique(["rank", "correlation"], keep="first")
    return activity.select(pl.col("rank").cast(pl.Int32), "start_ns", "correlation").join(
        calls, on=["rank", "correlation"], how="left")


def idle_gaps(pieces: pl.DataFrame, kernels: pl.DataFrame, memcpy: pl.DataFrame, api_calls: pl.DataFrame,
              ranges: pl.DataFrame) -> pl.DataFrame:
    """Every idle gap with its cause (see the module doc) and the correlation of the activity that ends it."""
    found = gaps(pieces)
    if found.height == 0:
        return pl.DataFrame(schema=_GAP_SCHEMA)
    activity = pl.concat([kernels.select("rank", "start_ns", "correlation"),
                          memcpy.select("rank", "start_ns", "correlation")])
    launched = _launched(activity, api_calls)
    # The activity (or activities) that end the gap: the latest launch end among them decides.
    ending = launched.group_by("rank", "start_ns").agg(
        pl.col("launch_end_ns").max(), pl.col("correlation").first().alias("next_correlation"))
    found = found.join(ending.rename({"start_ns": "end_ns"}), on=["rank", "end_ns"], how="left")

    sync_ends = api_calls.filter(pl.col("name").str.contains(SYNC_CALL_PATTERN)).select(
        pl.col("rank").cast(pl.Int32), pl.col("end_ns").alias("sync_end_ns"))
    dtoh_ends = memcpy.filter(pl.col("kind") == "DtoH").select(pl.col("rank").cast(pl.Int32),
                                                                pl.col("end_ns").alias("dtoh_end_ns"))
    found = found.sort("end_ns").join_asof(sync_ends.sort("sync_end_ns"), left_on="end_ns", right_on="sync_end_ns",
                                           **_ASOF)
    found = found.sort("start_ns").join_asof(dtoh_ends.sort("dtoh_end_ns"), left_on="start_ns",
                                             right_on="dtoh_end_ns", **_ASOF)
    steps = ranges.filter(pl.col("category") == "profiler_step").select(
        pl.col("rank").cast(pl.Int32), pl.col("start_ns").alias("step_start_ns"), pl.col("end_ns").alias("step_end_ns"))
    if steps.height:
        found = found.sort("start_ns").join_asof(steps.sort("step_start_ns"), left_on="start_ns",
                                                 right_on="step_start_ns", **_ASOF)
        outside = pl.col("step_end_ns").is_null() | (pl.col("end_ns") > pl.col("step_end_ns"))
    else:
        outside = pl.lit(False)
    synced = (pl.col("sync_end_ns") >= pl.col("start_ns")) | (pl.col("dtoh_end_ns") == pl.col("start_ns"))
    launch_bound = pl.col("launch_end_ns") > pl.col("start_ns")
    cause = (pl.when(outside).then(pl.lit("outside steps"))
             .when(synced.fill_null(False)).then(pl.lit("synchronisation"))
             .when(launch_bound.fill_null(False)).then(pl.lit("launch-bound"))
             .otherwise(pl.lit("other")))
    return found.with_columns(cause.alias("cause")).select(list(_GAP_SCHEMA)).cast(_GAP_SCHEMA).sort(
        "rank", "start_ns")


def idle_by_cause(gap_table: pl.DataFrame) -> pl.DataFrame:
    """Per rank and cause: gaps and idle_ns (every cause listed, 0 where none)."""
    ranks = gap_table.select(pl.col("rank").unique())
    grid = ranks.join(pl.DataFrame({"cause": list(CAUSES)}), how="cross")
    sums = gap_table.group_by("rank", "cause").agg(pl.len().cast(pl.Int64).alias("gaps"),
                                                   pl.col("gap_ns").sum().alias("idle_ns"))
    return grid.join(sums, on=["rank", "cause"], how="left").fill_null(0).sort(
        "rank", pl.col("cause").replace_strict(list(CAUSES), list(range(len(CAUSES)))))
