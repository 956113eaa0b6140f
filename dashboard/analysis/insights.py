"""Everything /insights and `report` show for a run: the GPU time breakdown and the ranked findings.

Built once per run object by views.insights (cached there): the page, its export and the CLI read the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import breakdown, device_findings, idle_causes, ir_growth, launch_stats, planner_sharing
from dashboard.analysis import copies as copy_analysis
from dashboard.analysis.cuda_findings import cuda_memory_findings
from dashboard.analysis.finding import Finding, ranked
from dashboard.analysis.gpu_busy import merged_intervals
from dashboard.analysis.time_findings import TimeTables, time_findings
from dashboard.store import Run

KERNEL_COLUMNS = ("rank", "step", "name", "layer", "correlation", "start_ns", "end_ns")
MEMCPY_COLUMNS = ("rank", "step", "kind", "src_kind", "dst_kind", "bytes", "correlation", "start_ns", "end_ns")


@dataclass(frozen=True)
class Insights:
    run_id: str
    by_rank: pl.DataFrame  # breakdown.breakdown_by_rank
    by_step: pl.DataFrame  # breakdown.breakdown_by_step
    idle_causes: pl.DataFrame  # idle_causes.idle_by_cause
    launch: pl.DataFrame  # launch_stats.launch_summary
    findings: list[Finding]
    skipped: list[str]  # analyses not run, with why


def time_tables(run_id: str, kernels: pl.DataFrame, memcpy: pl.DataFrame, api_calls: pl.DataFrame,
                ranges: pl.DataFrame) -> TimeTables:
    """The tables the GPU-time rules read, from a run's kernels, copies, API calls and ranges."""
    intervals = breakdown.classified_intervals(kernels, memcpy)
    pieces = merged_intervals(intervals.select("rank", "start_ns", "end_ns"))
    gaps = idle_causes.idle_gaps(pieces, kernels, memcpy, api_calls, ranges)
    return TimeTables(
        run_id=run_id, by_rank=breakdown.breakdown_by_rank(intervals), by_step=breakdown.breakdown_by_step(intervals),
        gaps=gaps,
        kernels=breakdown.with_kernel_kinds(kernels.drop_nulls(["start_ns", "end_ns"])),
        launch=launch_stats.launch_summary(launch_stats.launch_delays(kernels, api_calls)),
        copies=copy_analysis.copy_summary(copy_analysis.copy_classes(memcpy, api_calls)))


def _kernel_side(run: Run) -> tuple[pl.DataFrame, ...]:
    kernels = breakdown.read_columns(run, "kernels", KERNEL_COLUMNS)
    memcpy = breakdown.read_columns(run, "memcpy", MEMCPY_COLUMNS)
    api_calls = breakdown.read_columns(run, "api_calls", ("rank", "name", "correlation", "start_ns", "end_ns"))
    ranges = run.scan("ranges").filter(pl.col("category") == "profiler_step").select(
        "rank", "category", "start_ns", "end_ns").collect()
    return kernels.with_columns(pl.col("rank").cast(pl.Int32)), memcpy.with_columns(pl.col("rank").cast(pl.Int32)), \
        api_calls, ranges


def run_breakdown(run: Run) -> pl.DataFrame:
    """breakdown.gpu_time_breakdown of `run` (the /kernels headline reads only this; views.insights caches it)."""
    return breakdown.gpu_time_breakdown(run)


def run_insights(run: Run) -> Insights:
    """The breakdown, idle causes, launch summary and ranked findings of `run`."""
    findings: list[Finding] = []
    skipped: list[str] = []
    if run.has("kernels") or run.has("memcpy"):
        tables = time_tables(run.id, *_kernel_side(run))
        findings.extend(time_findings(tables))
        by_rank, by_step = tables.by_rank, tables.by_step
        causes, launch = idle_causes.idle_by_cause(tables.gaps), tables.launch
        if not run.has("api_calls"):
            skipped.append("launch delays and launch-bound gaps: the run has no CUDA API calls")
        if not run.has("ranges"):
            skipped.append("gaps outside profiler steps: the run has no profiler steps")
    else:
        empty = breakdown.classified_intervals(run.frame("kernels"), run.frame("memcpy"))
        by_rank, by_step = breakdown.breakdown_by_rank(empty), breakdown.breakdown_by_step(empty)
        causes = pl.DataFrame(schema={"rank": pl.Int32, "cause": pl.String, "gaps": pl.Int64, "idle_ns": pl.Int64})
        launch = launch_stats.launch_summary(launch_stats.launch_delays(run.frame("kernels"), run.frame("api_calls")))
        skipped.append("GPU time: the run has no kernels or copies")
    if run.has("op_memory"):
        findings.extend(device_findings.memory_findings(run.id, run.frame("op_memory")))
        skipped.append("buffers kept alive after their last use: op_memory holds totals, not per-buffer lifetimes")
    if run.has("device_memory"):
        findings.extend(cuda_memory_findings(run.id, run.frame("device_memory"),
                                             run.frame("memory_segments"), run.info.metadata))
    if run.has("ws_buffers"):
        findings.extend(device_findings.planner_findings(run.id, run.frame("ws_buffers")))
        findings.extend(planner_sharing.sharing_findings(run.id, run.frame("ws_buffers")))
    if run.has("ir_steps"):
        findings.extend(ir_growth.ir_findings(run.id, run.frame("ir_steps")))
    return Insights(run.id, by_rank, by_step, causes, launch, ranked(findings), skipped)
