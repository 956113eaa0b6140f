"""Ranks that hold the others back: stragglers and uneven time in collectives.

- GPU span of a rank's step = first to last GPU activity it launched in that
  step (breakdown_by_step): what its GPU did, unlike the step time of /ranks
  (the ProfilerStep range, which ranks in lock-step share). A rank straggles in
  a step when its GPU span exceeds the median over ranks by more than
  STRAGGLER_MARGIN.
- the kernels that make the difference: per kernel name, the straggler's
  time in its slow steps minus the median over the other ranks in those steps.
- collectives are uneven when the ranks' communication time (union of their
  collective kernels) spreads by more than UNEVEN_COLLECTIVE_SHARE of the
  longest rank span: the rank that spends most in collectives mostly waits
  for the others to arrive.
"""

from __future__ import annotations

import polars as pl

STRAGGLER_MARGIN = 0.10
UNEVEN_COLLECTIVE_SHARE = 0.10


def step_stragglers(by_step: pl.DataFrame) -> pl.DataFrame:
    """rank, step, span_ns, median_ns, excess_ns of each (rank, step) above the median by STRAGGLER_MARGIN.

    Only steps that at least two ranks ran; the step-less bucket is left out.
    """
    stepped = by_step.filter(pl.col("step").is_not_null()).select("rank", "step", "span_ns")
    with_median = stepped.with_columns(pl.col("span_ns").median().over("step").alias("median_ns"),
                                       pl.len().over("step").alias("ranks"))
    return with_median.filter(pl.col("ranks") >= 2, pl.col("span_ns") > (1 + STRAGGLER_MARGIN) * pl.col("median_ns")
                              ).select("rank", "step", "span_ns", "median_ns",
                                       (pl.col("span_ns") - pl.col("median_ns")).cast(pl.Int64).alias("excess_ns")
                                       ).sort("excess_ns", descending=True)


def straggler_kernels(kernels: pl.DataFrame, rank: int, steps: list[int], top: int = 3) -> pl.DataFrame:
    """name, rank_ns, others_median_ns, difference_ns: the kernels that make `rank` slower in `steps`."""
    chosen = kernels.filter(pl.col("step").is_in(steps)).group_by("rank", "name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("time_ns"))
    mine = chosen.filter(pl.col("rank") == rank).select("name", pl.col("time_ns").alias("rank_ns"))
    others = chosen.filter(pl.col("rank") != rank).group_by("name").agg(pl.col("time_ns").median()
                                                                        .alias("others_median_ns"))
    return mine.join(others, on="name", how="left").fill_null(0).with_columns(
        (pl.col("rank_ns") - pl.col("others_median_ns")).alias("difference_ns")).sort(
        "difference_ns", descending=True).head(top)


def collective_spread(by_rank: pl.DataFrame) -> dict[str, int] | None:
    """The ranks with most and least communication time and the spread, or None below the threshold."""
    ranks = by_rank.filter(pl.col("communication_total_ns") > 0)
    if ranks.height < 2:
        return None
    most = ranks.sort("communication_total_ns", descending=True).row(0, named=True)
    least = ranks.sort("communication_total_ns").row(0, named=True)
    spread = most["communication_total_ns"] - least["communication_total_ns"]
    if spread <= UNEVEN_COLLECTIVE_SHARE * by_rank.get_column("span_ns").max():
        return None
    return {"most_rank": most["rank"], "most_ns": most["communication_total_ns"], "least_rank": least["rank"],
            "least_ns": least["communication_total_ns"], "spread_ns": spread}
