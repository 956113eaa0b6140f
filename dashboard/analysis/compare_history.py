"""A series of runs as a trend: step time, GPU busy share, top-kernel times and memory peaks per run.

Definitions (the same as on /compare and /ranks): step time = compare_passes.STEP_DEFINITION
(rank_summaries.median_step_ns over all ranks: the ProfilerStep range where the trace has one, else the
kernel span); GPU busy share = busy / span summed over ranks (gpu_busy); kernel
time = summed durations per kernel name, for the TOP_KERNELS names with the most
time over the whole series; memory peak = the highest allocated bytes per bank
of each buffer type (memory.peaks, rank 0 or the run's first rank). A run
without an evidence kind has no point for its metrics (null, never 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from dashboard.store import RunInfo

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


def predecessor(run_ids: Sequence[str], run_id: str) -> str | None:
    """The run before `run_id` in the series, None for the first (or an unknown) run."""
    if run_id not in run_ids:
        return None
    position = list(run_ids).index(run_id)
    return run_ids[position - 1] if position > 0 else None
