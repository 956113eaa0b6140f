"""The whole-run /kernels numbers of a many-rank run from its per-rank summaries, not its kernel rows.

A cluster ingest stores, per rank and kernel name, the launch count and the
summed duration (`summary_kernels.parquet`, analysis/rank_summaries.py). For a
run with more than SUMMARY_MIN_RANKS ranks, /kernels grouped by kernel name,
over all ranks and without a window, is built from that table alone: count,
total, share of kernel time and mean per launch (total / count) are exactly
what the kernel rows give; the per-launch median, p95, min and max, the launch
shape and the registers need the rows, so they stay empty there (one rank, a
window or grouping by op / layer reads the rows and shows them). The page
says which source its numbers come from (`SUMMARY_SOURCE`).

The run's first instant (every page's clock) comes from the parquet footers'
statistics of the partition files, not from reading a time column.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dashboard.analysis.kernel_keys import with_kernel_keys
from dashboard.analysis.kernel_names import kernel_labels
from dashboard.store import PARTITION_GLOB, Run

# As /timeline (layouts.kernel_views.MANY_RANKS): above this many ranks, whole-run views read summaries.
SUMMARY_MIN_RANKS = 8
SUMMARY_SOURCE = ("from the per-rank kernel summaries stored at ingest (launches and summed duration per rank "
                  "and kernel; median, p95, min, max and launch shapes need the kernel rows: pick a rank "
                  "or a window to see them)")
_NULL_FLOAT = ("median_ns", "p95_ns", "min_ns", "max_ns")


def summary_ranks(run: Run) -> tuple[int, ...] | None:
    """The ranks of the stored kernel summary, or None when the run has none."""
    stored = run.summary("kernels")
    if stored is None:
        return None
    return tuple(sorted(int(rank) for rank in stored.get_column("rank").unique().to_list() if rank is not None))


def reads_summaries(run: Run, rank: int | None, window: object, group: str) -> bool:
    """Whether /kernels in this state is built from the stored summaries (see the module)."""
    if rank is not None or window is not None or group != "name":
        return False
    ranks = summary_ranks(run)
    return ranks is not None and len(ranks) > SUMMARY_MIN_RANKS


def kernel_summary_from_stored(stored: pl.DataFrame) -> pl.DataFrame:
    """`analysis.kernels.kernel_summary`'s columns by kernel name from the stored per-rank summary."""
    summary = stored.group_by("name").agg(
        pl.col("count").sum().cast(pl.UInt32), pl.col("total_ns").sum().cast(pl.Int64)
    ).rename({"name": "group"})
    grand_total = summary.get_column("total_ns").sum()
    summary = summary.with_columns(
        (pl.col("total_ns") / grand_total if grand_total else pl.lit(0.0)).alias("share"),
        (pl.col("total_ns") / pl.col("count")).alias("mean_ns"),
        *(pl.lit(None, pl.Float64).alias(column) for column in _NULL_FLOAT),
        pl.lit(1, pl.UInt32).alias("kernels"),
        pl.lit(None, pl.String).alias("grid"), pl.lit(None, pl.String).alias("block"),
        pl.lit(None, pl.Int64).alias("registers"), pl.lit(None, pl.Int64).alias("shared_memory"),
    )
    summary = with_kernel_keys(summary, "group", "key")
    labels = kernel_labels(summary.get_column("group").to_list())
    summary = summary.with_columns(
        pl.col("group").replace_strict(labels, default=pl.col("group"), return_dtype=pl.String).alias("label"))
    return summary.sort(["total_ns", "group"], descending=[True, False]).select(
        "group", "key", "label", "count", "total_ns", "share", "mean_ns", "median_ns", "p95_ns", "min_ns",
        "max_ns", "kernels", "grid", "block", "registers", "shared_memory",
    )


def partitioned_first_start_ns(run: Run, table: str) -> int | None:
    """The smallest `start_ns` of a rank-partitioned table from its files' footers; None when it is not
    partitioned or a file has no statistics for it (the caller then reads the column)."""
    folder = run.info.path / table
    if (run.info.path / f"{table}.parquet").exists() or not folder.is_dir():
        return None
    import pyarrow.parquet as pq  # footers only; loaded on first use

    firsts: list[int] = []
    for path in sorted(Path(folder).glob(PARTITION_GLOB)):
        metadata = pq.ParquetFile(path).metadata
        names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
        if "start_ns" not in names:
            return None
        column = names.index("start_ns")
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(column).statistics
            if metadata.row_group(group).num_rows == 0:
                continue
            if statistics is None or not statistics.has_min_max:
                return None
            firsts.append(int(statistics.min))
    return min(firsts) if firsts else None
