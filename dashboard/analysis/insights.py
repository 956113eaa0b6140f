"""Everything /insights and `report` show for a run: the GPU time tables and the ranked findings.

Built once per run object by views.insights (cached there): the page, its export and the CLI read the same numbers.
The GPU-time tables are one object (time_tables.TimeTables); `Insights` adds the findings of every kind of
evidence and what was not analysed.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import breakdown, device_findings, ir_growth, planner_sharing
from dashboard.analysis.cuda_findings import cuda_memory_findings
from dashboard.analysis.finding import Finding, ranked
from dashboard.analysis.time_findings import time_findings
from dashboard.analysis.time_tables import (
    API_COLUMNS,
    KEPT_NAME,
    KERNEL_COLUMNS,
    MEMCPY_COLUMNS,
    RANGE_COLUMNS,
    TimeTables,
    empty_time_tables,
    from_kept,
    kept_frames,
    time_tables,
)
from dashboard.store import Run

__all__ = ["Insights", "run_breakdown", "run_insights", "time_tables"]


@dataclass(frozen=True)
class Insights:
    time: TimeTables  # breakdown, idle causes, launches, copies, HTA's scope
    findings: list[Finding]
    skipped: list[str]  # analyses not run, with why

    @property
    def run_id(self) -> str:
        return self.time.run_id

    @property
    def by_rank(self) -> pl.DataFrame:
        return self.time.by_rank

    @property
    def by_step(self) -> pl.DataFrame:
        return self.time.by_step

    @property
    def idle_causes(self) -> pl.DataFrame:
        return self.time.idle_causes

    @property
    def launch(self) -> pl.DataFrame:
        return self.time.launch


def _kernels(run: Run) -> pl.DataFrame:
    return breakdown.read_columns(run, "kernels", KERNEL_COLUMNS).with_columns(pl.col("rank").cast(pl.Int32))


def _kernel_side(run: Run) -> tuple[pl.DataFrame, ...]:
    memcpy = breakdown.read_columns(run, "memcpy", MEMCPY_COLUMNS)
    api_calls = breakdown.read_columns(run, "api_calls", API_COLUMNS)
    # CPU ranges only (ops, annotations, steps): what the host was doing while the GPU idled.
    ranges = run.scan("ranges").filter(pl.col("device").is_null()).select(RANGE_COLUMNS).collect() \
        if run.has("ranges") else breakdown.read_columns(run, "ranges", RANGE_COLUMNS)
    return _kernels(run), memcpy.with_columns(pl.col("rank").cast(pl.Int32)), api_calls, ranges


def run_breakdown(run: Run) -> pl.DataFrame:
    """breakdown.gpu_time_breakdown of `run` (the /kernels headline reads only this; views.insights caches it)."""
    return breakdown.gpu_time_breakdown(run)


def run_time_tables(run: Run) -> TimeTables:
    """The GPU-time tables of a run with kernels or copies: kept beside the run by whichever process (or the
    ingest) computed them first, read from there by every other (time_tables.KEPT_NAME)."""
    kept = run.derived(KEPT_NAME)
    if kept is not None:
        tables = from_kept(run.id, kept, _kernels(run))
        if tables is not None:
            return tables
    tables = time_tables(run.id, *_kernel_side(run))
    run.keep_derived(KEPT_NAME, kept_frames(tables))
    return tables


def run_insights(run: Run) -> Insights:
    """The GPU time tables and the ranked findings of `run`."""
    findings: list[Finding] = []
    skipped: list[str] = []
    if run.has("kernels") or run.has("memcpy"):
        tables = run_time_tables(run)
        findings.extend(time_findings(tables))
        if not run.has("api_calls"):
            skipped.append("launch delays and launch-bound gaps: the run has no CUDA API calls")
        if not run.has("ranges"):
            skipped.append("what the host did while the GPU idled, and gaps outside profiler steps: the run has no "
                           "CPU ranges")
    else:
        tables = empty_time_tables(run.id)
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
    return Insights(tables, ranked(findings), skipped)
