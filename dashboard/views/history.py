"""`/history`: a series of runs as a trend (the definitions: analysis/compare_history.py), built from each
run's cached views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from dashboard.analysis import memory
from dashboard.analysis.compare_history import BUSY, HISTORY_SCHEMA, KERNEL, MEMORY, STEP, TOP_KERNELS
from dashboard.analysis.compare_passes import busy_totals
from dashboard.analysis.kernel_names import kernel_labels
from dashboard.analysis.rank_steps import step_time
from dashboard.figures.compare_history import history_figure
from dashboard.figures.plain import plain
from dashboard.store import Run
from dashboard.views import run_views
from dashboard.views.cache import per_run


def _run_rows(position: int, run: Run, kernel_totals: dict[str, int]) -> list[dict]:
    rows = []

    def add(metric: str, series: str, value: float | None) -> None:
        if value is not None:
            rows.append({"position": position, "run_id": run.id, "metric": metric, "series": series,
                         "value": float(value)})

    if run.has_evidence("kernels"):
        add(STEP, STEP, step_time(run)[0])  # the one step time (rank_summaries.median_step_ns)
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
    for run_totals in totals.values():
        for name, total in run_totals.items():
            overall[name] = overall.get(name, 0) + int(total)
    top = sorted(overall, key=lambda name: (-overall[name], name))[:top_kernels]
    labels = kernel_labels(top)
    rows = []
    for position, run in enumerate(runs):
        run_totals = totals.get(run.id, {})
        rows += _run_rows(position, run, {labels[name]: run_totals[name] for name in top if name in run_totals})
    return pl.DataFrame(rows, schema=HISTORY_SCHEMA)


@per_run(8)
def history_chart(runs: tuple[Run, ...]) -> dict[str, Any]:
    """The trend of a series of runs as the page sends it: built once per series of opened runs (a run whose
    run.json changes is a new Run object, so a new series), a plain dict shared by every load (never mutate)."""
    return plain(history_figure(history(runs), [run.id for run in runs]))
