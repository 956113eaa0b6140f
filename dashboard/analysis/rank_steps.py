"""Ranks side by side: step time per rank × step, the slowest ranks, and the kernels that set one apart.

A run ingested on a cluster carries per-rank summaries (analysis/rank_summaries.py)
and these read only them; any other run gets the same tables computed from its
kernels and ranges, reading just the columns needed (lazily, grouped before
collecting), never the whole kernel table in memory.

Definitions (written on the page too):
- step time: see rank_summaries.STEP_DEFINITION.
- a rank's mean step: the mean of its step times; "vs median" = that mean
  minus the median over ranks of the ranks' mean steps.
- the typical rank: per kernel name, the median over ranks of each rank's total
  time in it (a rank without the kernel counts 0); a rank's kernel differs by
  its total minus that median.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.rank_summaries import (
    KERNEL_SUMMARY_SCHEMA,
    STEP_SCHEMA,
    median_step_ns,
    step_source,
    step_spans,
)
from dashboard.store import Run

SLOWEST_SHOWN = 10
KERNELS_SHOWN = 10


def step_matrix(run: Run) -> pl.DataFrame:
    """rank, step, start_ns, end_ns, step_ns, source: one row per rank and profiler step."""
    stored = run.summary("steps")
    if stored is not None:
        return stored
    parts = []
    covered = pl.DataFrame(schema={"rank": pl.Int32})
    if run.has("ranges"):
        marked = run.scan("ranges").filter(
            pl.col("device").is_null(), pl.col("step").is_not_null(),
            (pl.col("category") == "profiler_step") | pl.col("name").str.starts_with("ProfilerStep#"),
        ).select("rank", "step", "start_ns", "end_ns").collect()
        if marked.height:
            parts.append(step_spans(marked, "ProfilerStep"))
            covered = marked.select(pl.col("rank").cast(pl.Int32)).unique()
    if run.has("kernels"):
        # Grouped before collecting: one row per (rank, step) leaves the scan, not one per kernel.
        grouped = run.scan("kernels").filter(pl.col("step").is_not_null()).group_by("rank", "step").agg(
            pl.col("start_ns").min(), pl.col("end_ns").max()).collect().with_columns(pl.col("rank").cast(pl.Int32))
        grouped = grouped.join(covered, on="rank", how="anti")
        if grouped.height:
            parts.append(step_spans(grouped, "kernels"))
    return pl.concat(parts).sort("rank", "step") if parts else pl.DataFrame(schema=STEP_SCHEMA)


def step_time(run: Run, rank: int | None = None) -> tuple[float | None, str]:
    """(the step time of `run` or of one rank: rank_summaries.median_step_ns, which definition it used)."""
    return step_time_of(step_matrix(run), rank)


def step_time_of(steps: pl.DataFrame, rank: int | None = None) -> tuple[float | None, str]:
    """step_time from a step_matrix already found (a view keeps one per run)."""
    if rank is not None:
        steps = steps.filter(pl.col("rank") == rank)
    return median_step_ns(steps), step_source(steps)


def kernel_totals(run: Run) -> pl.DataFrame:
    """rank, name, count, total_ns (the stored summary, or grouped from the kernels lazily)."""
    stored = run.summary("kernels")
    if stored is not None:
        return stored
    if not run.has("kernels"):
        return pl.DataFrame(schema=KERNEL_SUMMARY_SCHEMA)
    return run.scan("kernels").group_by("rank", "name").agg(
        pl.len().cast(pl.Int64).alias("count"),
        (pl.col("end_ns") - pl.col("start_ns")).clip(lower_bound=0).sum().cast(pl.Int64).alias("total_ns"),
    ).collect().with_columns(pl.col("rank").cast(pl.Int32))


def slowest_ranks(steps: pl.DataFrame, shown: int = SLOWEST_SHOWN) -> pl.DataFrame:
    """rank, steps, mean_step_ns, max_step_ns, vs_median_ns: the ranks with the longest mean step first."""
    if steps.height == 0:
        return pl.DataFrame(schema={"rank": pl.Int32, "steps": pl.UInt32, "mean_step_ns": pl.Float64,
                                    "max_step_ns": pl.Int64, "vs_median_ns": pl.Float64})
    per_rank = steps.group_by("rank").agg(pl.len().alias("steps"), pl.col("step_ns").mean().alias("mean_step_ns"),
                                          pl.col("step_ns").max().alias("max_step_ns"))
    median = per_rank.get_column("mean_step_ns").median()
    return per_rank.with_columns((pl.col("mean_step_ns") - median).alias("vs_median_ns")).sort(
        "mean_step_ns", "rank", descending=[True, False]).head(shown)


def kernels_differing(totals: pl.DataFrame, rank: int, shown: int = KERNELS_SHOWN) -> pl.DataFrame:
    """name, rank_ns, typical_ns, diff_ns: the kernels whose time on `rank` differs most from the typical rank."""
    ranks = totals.select(pl.col("rank").unique())
    names = totals.select(pl.col("name").unique())
    full = names.join(ranks, how="cross").join(totals.select("rank", "name", "total_ns"), on=["rank", "name"],
                                               how="left").with_columns(pl.col("total_ns").fill_null(0))
    typical = full.group_by("name").agg(pl.col("total_ns").median().alias("typical_ns"))
    mine = full.filter(pl.col("rank") == rank).select("name", pl.col("total_ns").alias("rank_ns"))
    return mine.join(typical, on="name").with_columns(
        (pl.col("rank_ns") - pl.col("typical_ns")).alias("diff_ns")).sort(
        pl.col("diff_ns").abs(), "name", descending=[True, False]).head(shown)


def step_window(steps: pl.DataFrame, rank: int, step: int) -> tuple[int, int] | None:
    """The (start_ns, end_ns) of one rank's step, for opening it on /timeline."""
    row = steps.filter((pl.col("rank") == rank) & (pl.col("step") == step))
    if row.height == 0:
        return None
    return int(row.item(0, "start_ns")), int(row.item(0, "end_ns"))
