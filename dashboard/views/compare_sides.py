"""The /compare view for one URL state, without Dash (the page and the PNG export share it)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis.compare import (
    Side,
    Totals,
    comparison_totals,
    default_sides,
    kernel_comparison,
    layer_comparison,
)
from dashboard.analysis.compare_kernels import match_renamed, merge_renamed
from dashboard.store import Run, RunNotFound, RunStore
from dashboard.views import run_views

# Evidence kinds compared, in the order the page and `dashboard compare` show them.
SECTIONS = ("kernels", "layers", "memory", "cuda_memory", "planner", "compiler", "rewrites")


def shared_evidence(run_a: Run, run_b: Run) -> list[str]:
    """The evidence kinds both runs hold, in SECTIONS order."""
    return [kind for kind in SECTIONS if run_a.has_evidence(kind) and run_b.has_evidence(kind)]


def memory_rank(run: Run, wanted: int | None) -> int:
    """The op_memory rank a side shows: the wanted one when it has it, else its first."""
    ranks = sorted(run.scan("op_memory").select(pl.col("rank").unique()).collect().get_column("rank").to_list())
    return wanted if wanted in ranks else (ranks[0] if ranks else 0)


@dataclass(frozen=True)
class CompareView:
    a: Side
    b: Side
    comparison: pl.DataFrame  # kernel_comparison, renamed kernels merged (compare_kernels.merge_renamed)
    totals: Totals  # of the comparison before renamed kernels were matched
    renamed: pl.DataFrame  # compare_kernels.match_renamed
    layers: pl.DataFrame  # layer_comparison


def _rank(value: object, ranks: tuple[int, ...]) -> int | None:
    try:
        rank = int(str(value))
    except ValueError:
        return None
    return rank if rank in ranks else None


def _shares_evidence(a_run: Run, b_run: Run) -> bool:
    return bool(set(a_run.info.evidence) & set(b_run.info.evidence))


def choose_sides(store: RunStore, a_run: Run, a_rank: int | None, other: str | None,
                 other_rank: str | None) -> tuple[Side, Side] | None:
    """(A, B): B as the URL names it (a run sharing some evidence with A, a rank it has), else the defaults
    for A: another rank or the newest other run with kernels when A has kernels, else the newest other run
    sharing an evidence kind with A, else A itself when it holds compiles."""
    a = Side(a_run.id, a_rank)
    if other:
        try:
            run = store.open(other)
        except RunNotFound:
            run = None
        if run is not None and _shares_evidence(a_run, run):
            return a, Side(run.id, _rank(other_rank, run_views.kernel_ranks(run)))
    infos = store.list_runs()
    if a_run.has_evidence("kernels"):
        with_kernels = [info.id for info in infos if "kernels" in info.evidence]
        return default_sides(a, run_views.kernel_ranks(a_run), with_kernels)
    sharing = [info.id for info in infos if info.id != a_run.id and set(info.evidence) & set(a_run.info.evidence)]
    if not sharing and a_run.has_evidence("compiler"):  # a lone compile log: two of its compiles, or one with itself
        return a, Side(a_run.id, None)
    return (a, Side(sharing[0], None)) if sharing else None


def compare_view(store: RunStore, a: Side, b: Side) -> CompareView:
    """Both sides summarised per kernel name (whole runs: the comparison ignores time windows)."""
    a_run = store.open(a.run_id)
    b_run = a_run if b.run_id == a.run_id else store.open(b.run_id)
    baseline = run_views.kernel_view(a_run, a.rank, None, "name").summary
    compared = run_views.kernel_view(b_run, b.rank, None, "name").summary
    comparison = kernel_comparison(baseline, compared)
    renamed = match_renamed(comparison)
    layers = layer_comparison(run_views.layer_view(a_run, a.rank, None).stats,
                              run_views.layer_view(b_run, b.rank, None).stats)
    return CompareView(a=a, b=b, comparison=merge_renamed(comparison, renamed), totals=comparison_totals(comparison),
                       renamed=renamed, layers=layers)
