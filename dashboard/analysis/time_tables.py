"""The GPU-time tables of a run, built once: breakdown per rank and step, idle parts by cause, launches,
copies, HTA's scope. /insights, `report` and the GPU-time findings all read this one object."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import breakdown, idle_causes, launch_stats
from dashboard.analysis import copies as copy_analysis
from dashboard.analysis.gpu_busy import merged_intervals
from dashboard.analysis.kernel_kinds import with_kernel_kinds
from dashboard.analysis.units import format_ns

KERNEL_COLUMNS = ("rank", "step", "name", "op", "layer", "correlation", "start_ns", "end_ns")
MEMCPY_COLUMNS = ("rank", "step", "kind", "src_kind", "dst_kind", "bytes", "correlation", "start_ns", "end_ns")
API_COLUMNS = ("rank", "thread", "name", "correlation", "start_ns", "end_ns")
RANGE_COLUMNS = ("rank", "device", "thread", "name", "category", "start_ns", "end_ns")
_CAUSE_SCHEMA = {"rank": pl.Int32, "cause": pl.String, "gaps": pl.Int64, "idle_ns": pl.Int64}


@dataclass(frozen=True)
class TimeTables:
    run_id: str
    by_rank: pl.DataFrame  # breakdown.breakdown_by_rank
    by_step: pl.DataFrame  # breakdown.breakdown_by_step
    gaps: pl.DataFrame  # idle_causes.idle_parts: one row per gap (ready_ns, opened_by_sync…)
    idle_parts: pl.DataFrame  # idle_causes.idle_parts: disjoint parts of the gaps, one cause each
    idle_causes: pl.DataFrame  # idle_causes.idle_by_cause
    data_ranges: pl.DataFrame  # idle_causes.data_loading_ranges: what the host ran while loading data
    kernels: pl.DataFrame  # KERNEL_COLUMNS + kind, family (analysis.kernel_kinds)
    launch: pl.DataFrame  # launch_stats.launch_summary
    copies: pl.DataFrame  # copies.copy_summary (each copy in one class)
    hta: pl.DataFrame  # breakdown.hta_breakdown: HTA's scope and kernel split

    def span(self, rank: int) -> int:
        return int(self.by_rank.filter(pl.col("rank") == rank).get_column("span_ns").item())

    def span_text(self, rank: int) -> str:
        return f"rank {rank}'s GPU span ({format_ns(self.span(rank))})"

    def rank_value(self, rank: int, column: str) -> int:
        found = self.by_rank.filter(pl.col("rank") == rank).get_column(column)
        return int(found.item()) if found.len() else 0


def kinded_kernels(kernels: pl.DataFrame) -> pl.DataFrame:
    """The kernels the tables read: those with both times, each with its kind and family."""
    return with_kernel_kinds(kernels.drop_nulls(["start_ns", "end_ns"]))


def time_tables(run_id: str, kernels: pl.DataFrame, memcpy: pl.DataFrame, api_calls: pl.DataFrame,
                ranges: pl.DataFrame) -> TimeTables:
    """The tables the GPU-time rules read, from a run's kernels, copies, API calls and CPU ranges."""
    kernels = kinded_kernels(kernels)
    intervals = breakdown.classified_intervals(kernels, memcpy)
    pieces = merged_intervals(intervals.select("rank", "start_ns", "end_ns"))
    gaps, parts = idle_causes.idle_parts(kernels, memcpy, api_calls, ranges, pieces)
    return TimeTables(
        run_id=run_id, by_rank=breakdown.breakdown_by_rank(intervals), by_step=breakdown.breakdown_by_step(intervals),
        gaps=gaps, idle_parts=parts, idle_causes=idle_causes.idle_by_cause(parts),
        data_ranges=idle_causes.data_loading_ranges(ranges),
        kernels=kernels,
        launch=launch_stats.launch_summary(launch_stats.launch_delays(kernels, api_calls)),
        copies=copy_analysis.copy_summary(copy_analysis.copy_classes(memcpy, api_calls)),
        hta=breakdown.hta_breakdown(kernels, memcpy, api_calls, ranges))


def empty_time_tables(run_id: str) -> TimeTables:
    """The tables of a run with no kernels or copies: every frame empty, with its columns."""
    kernels = pl.DataFrame(schema={"rank": pl.Int32, "step": pl.Int64, "name": pl.String, "op": pl.String,
                                   "layer": pl.String, "correlation": pl.Int64, "start_ns": pl.Int64,
                                   "end_ns": pl.Int64})
    memcpy = pl.DataFrame(schema={"rank": pl.Int32, "step": pl.Int64, "kind": pl.String, "src_kind": pl.String,
                                  "dst_kind": pl.String, "bytes": pl.Int64, "correlation": pl.Int64,
                                  "start_ns": pl.Int64, "end_ns": pl.Int64})
    api = pl.DataFrame(schema={"rank": pl.Int32, "thread": pl.Int64, "name": pl.String, "correlation": pl.Int64,
                               "start_ns": pl.Int64, "end_ns": pl.Int64})
    ranges = pl.DataFrame(schema={"rank": pl.Int32, "device": pl.Int32, "thread": pl.Int64, "name": pl.String,
                                  "category": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64})
    tables = time_tables(run_id, kernels, memcpy, api, ranges)
    return TimeTables(**{**tables.__dict__, "idle_causes": pl.DataFrame(schema=_CAUSE_SCHEMA)})


# The frames kept beside a run (store.derived) under KEPT_NAME: every table but the kernels, which are the
# run's own with two columns added (cheap to add again, and as big as the rest together). The name carries a
# version: a change to what these tables hold must change it, so tables an older version kept are not read.
KEPT_NAME = "time_tables-1"
KEPT_FIELDS = ("by_rank", "by_step", "gaps", "idle_parts", "idle_causes", "data_ranges", "launch", "copies", "hta")


def kept_frames(tables: TimeTables) -> dict[str, pl.DataFrame]:
    return {name: getattr(tables, name) for name in KEPT_FIELDS}


def from_kept(run_id: str, kept: dict[str, pl.DataFrame], kernels: pl.DataFrame) -> TimeTables | None:
    """The tables from frames kept beside the run and its kernels; None when a frame is missing."""
    if not set(KEPT_FIELDS) <= set(kept):
        return None
    return TimeTables(run_id=run_id, kernels=kinded_kernels(kernels), **{name: kept[name] for name in KEPT_FIELDS})
