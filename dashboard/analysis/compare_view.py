"""The /compare view for one URL state, without Dash (the page and the PNG export share it)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import run_views
from dashboard.analysis.compare import (
    Side,
    Totals,
    comparison_totals,
    default_sides,
    kernel_comparison,
    layer_comparison,
)
from dashboard.store import Run, RunNotFound, RunStore


@dataclass(frozen=True)
class CompareView:
    a: Side
    b: Side
    comparison: pl.DataFrame  # kernel_comparison
    totals: Totals
    layers: pl.DataFrame  # layer_comparison


def _rank(value: object, ranks: tuple[int, ...]) -> int | None:
    try:
        rank = int(str(value))
    except ValueError:
        return None
    return rank if rank in ranks else None


def choose_sides(store: RunStore, a_run: Run, a_rank: int | None, other: str | None,
                 other_rank: str | None) -> tuple[Side, Side] | None:
    """(A, B): B as the URL names it (a run with kernels, a rank it has), else the defaults for A."""
    a = Side(a_run.id, a_rank)
    if other:
        try:
            run = store.open(other)
        except RunNotFound:
            run = None
        if run is not None and run.has_evidence("kernels"):
            return a, Side(run.id, _rank(other_rank, run_views.kernel_ranks(run)))
    with_kernels = [info.id for info in store.list_runs() if "kernels" in info.evidence]
    return default_sides(a, run_views.kernel_ranks(a_run), with_kernels)


def compare_view(store: RunStore, a: Side, b: Side) -> CompareView:
    """Both sides summarised per kernel name (whole runs: the comparison ignores time windows)."""
    a_run = store.open(a.run_id)
    b_run = a_run if b.run_id == a.run_id else store.open(b.run_id)
    baseline = run_views.kernel_view(a_run, a.rank, None, "name").summary
    compared = run_views.kernel_view(b_run, b.rank, None, "name").summary
    comparison = kernel_comparison(baseline, compared)
    layers = layer_comparison(run_views.layer_view(a_run, a.rank, None).stats,
                              run_views.layer_view(b_run, b.rank, None).stats)
    return CompareView(a=a, b=b, comparison=comparison, totals=comparison_totals(comparison), layers=layers)
