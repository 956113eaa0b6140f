"""A series of runs as a trend: step time, GPU busy share, top-kernel times and memory peaks per run.

Definitions (the same as on /compare): step time = compare_passes.STEP_DEFINITION
(all ranks); GPU busy share = busy / span summed over ranks (gpu_busy); kernel
time = summed durations per kernel name, for the TOP_KERNELS names with the most
time over the whole series; memory peak = the highest allocated bytes per bank
of each buffer type (memory.peaks, rank 0 or the run's first rank). A run
without an evidence kind has no point for its metrics (null, never 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from dashboard.analysis import memory, run_views
from dashboard.analysis.compare_passes import busy_totals, step_time_ns
from dashboard.analysis.kernel_names import kernel_labels
from dashboard.store import Run, RunInfo

TOP_KERNELS = 5
STEP, BUSY, KERNEL, MEMORY = "step time", "GPU busy share", "kernel time", "memory peak"
HISTORY_SCHEMA = {"position": pl.Int64, "run_id": pl.String, "metric": pl.String, "series": pl.String,
                  "value": pl.Float64}


def series_runs(infos: Sequence[RunInfo], name: str | None = None, run_ids: Sequence[str] = ()) -> list[str]:
    """The runs of a series, oldest first: the ones named in `run_ids`, else every run called `name`,
    else every run."""
    if run_ids:
        wanted = set(run_ids)
        chosen = [info for info in infos if info.id in wanted]
    elif name:
        chosen = [info for info in infos if info.name == name]
    else:
        chosen = list(infos)
    return [info.id for info in sorted(chosen, key=lambda info: (info.created, info.id))]


def _run_rows(position: int, run: Run, kernel_totals: dict[str, int]) -> list[dict]:
    rows = []

    def add(metric: str, series: str, value: float | None) -> None:
        if value is not None:
            rows.append({"position": position, "run_id": run.id, "metric": metric, "series": series,
                         "value": float(value)})

    if run.has_evidence("kernels"):
        kernels = run_views.filtered_kernels(run, None, None)
        add(STEP, STEP, step_time_ns(kernels))
        add(BUSY, BUSY, busy_totals(run_views.gpu_busy_view(run, None, None))["busy_share"])
        for name, total in kernel_totals.items():
            add(KERNEL, name, total)
    if run.has_evidence("memory"):
        op_memory = run.frame("op_memory")
        first_rank = op_memory.get_column("rank").min()
        for buffer_type, peak in memory.peaks(op_memory.filter(pl.col("rank") == first_rank)).select(
                "buffer_type", "allocated_per_bank").rows():
            add(MEMORY, buffer_type, peak)
    return rows


def history(runs: Sequence[Run], top_kernels: int = TOP_KERNELS) -> pl.DataFrame:
    """Long frame: position (0 = oldest), run_id, metric, series (kernel label, buffer type...), value
    (ns for times, a share for busy, bytes per bank for memory)."""
    totals = {run.id: dict(run_views.kernel_view(run, None, None, "name").summary.select("group", "total_ns").rows())
              for run in runs if run.has_evidence("kernels")}
    overall: dict[str, int] = {}
    for per_run in totals.values():
        for name, total in per_run.items():
            overall[name] = overall.get(name, 0) + int(total)
    top = sorted(overall, key=lambda name: (-overall[name], name))[:top_kernels]
    labels = kernel_labels(top)
    rows = []
    for position, run in enumerate(runs):
        per_run = totals.get(run.id, {})
        rows += _run_rows(position, run, {labels[name]: per_run[name] for name in top if name in per_run})
    return pl.DataFrame(rows, schema=HISTORY_SCHEMA)


def predecessor(run_ids: Sequence[str], run_id: str) -> str | None:
    """The run before `run_id` in the series, None for the first (or an unknown) run."""
    if run_id not in run_ids:
        return None
    position = list(run_ids).index(run_id)
    return run_ids[position - 1] if position > 0 else None
