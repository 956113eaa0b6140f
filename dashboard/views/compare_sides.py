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
from dashboard.views.cache import per_run

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
    return bool(set(a_run.info.evidence) & set(b_run.info.evidence) & set(SECTIONS))


def previous_run(store: RunStore, a_run: Run) -> str | None:
    """The newest run of A's name created before A that shares an evidence kind with it: the same job profiled
    the time before; None when there is none."""
    earlier = [info for info in store.list_runs() if info.name == a_run.info.name and info.id != a_run.id
               and (info.created, info.id) < (a_run.info.created, a_run.id)
               and set(info.evidence) & set(a_run.info.evidence) & set(SECTIONS)]
    return earlier[0].id if earlier else None


def compares_with_itself(run: Run) -> bool:
    """A run whose two sides can be itself: several ranks (rank against rank) or compiles (one against another)."""
    return len(run_views.kernel_ranks(run)) >= 2 or run.has_evidence("compiler")


def choose_sides(store: RunStore, a_run: Run, a_rank: int | None, other: str | None,
                 other_rank: str | None) -> tuple[Side, Side] | None:
    """(A, B): B as the URL names it (a run sharing an evidence kind with A, a rank it has), else the defaults:
    another rank of A's run when it has several, else the previous run of A's name, else A itself when it
    holds compiles (two of its compiles); None when there is none of these: the page asks for B rather than
    pairing A with an unrelated run."""
    a = Side(a_run.id, a_rank)
    if other:
        try:
            run = store.open(other)
        except RunNotFound:
            run = None
        if run is not None and (run.id == a_run.id or _shares_evidence(a_run, run)):
            return a, Side(run.id, _rank(other_rank, run_views.kernel_ranks(run)))
    chosen = default_sides(a, run_views.kernel_ranks(a_run), previous_run(store, a_run))
    if chosen is None and a_run.has_evidence("compiler"):  # a lone compile log: two of its compiles
        return a, Side(a_run.id, None)
    return chosen


@dataclass(frozen=True)
class Choice:
    """A run B can be: what the picker lists."""

    run_id: str
    label: str  # the run's name and creation date (and "this run" for A itself)
    kind: str  # the first evidence kind it shares with A (SECTIONS order): the group it is listed under


def b_choices(store: RunStore, a_run: Run, current: str | None = None) -> list[Choice]:
    """The runs B can be, grouped by the first evidence kind each shares with A (SECTIONS order), newest first
    within a kind; A itself first when it compares with itself (ranks, compiles) or is the `current` B (a
    URL may compare a run with itself). Runs sharing nothing with A are not listed: a comparison of them
    would be empty."""
    choices: list[Choice] = []
    if compares_with_itself(a_run) or current == a_run.id:
        kind = next((k for k in SECTIONS if a_run.has_evidence(k)), "kernels")
        choices.append(Choice(a_run.id, f"this run ({a_run.info.name}): another rank or compile", kind))
    by_kind: dict[str, list[Choice]] = {}
    for info in store.list_runs():  # newest first
        shared = [kind for kind in SECTIONS if kind in info.evidence and a_run.has_evidence(kind)]
        if info.id == a_run.id or not shared:
            continue
        by_kind.setdefault(shared[0], []).append(Choice(info.id, f"{info.name} · {_date(info.created)}", shared[0]))
    for kind in SECTIONS:
        choices.extend(by_kind.get(kind, []))
    return choices


def _date(created: str) -> str:
    """`2026-11-27T18:10:52+00:00` -> `2026-11-27 18:10:52`."""
    return created.replace("T", " ")[:19] if created else "date unknown"


def compare_view(store: RunStore, a: Side, b: Side) -> CompareView:
    """Both sides summarised per kernel name (whole runs: the comparison ignores time windows)."""
    a_run = store.open(a.run_id)
    return _compare_view(a_run, a_run if b.run_id == a.run_id else store.open(b.run_id), a, b)


@per_run(16)
def _compare_view(a_run: Run, b_run: Run, a: Side, b: Side) -> CompareView:
    """compare_view, cached per pair of runs and sides (the page, its callbacks and the export ask again)."""
    baseline = run_views.kernel_view(a_run, a.rank, None, "name").summary
    compared = run_views.kernel_view(b_run, b.rank, None, "name").summary
    comparison = kernel_comparison(baseline, compared)
    renamed = match_renamed(comparison)
    layers = layer_comparison(run_views.layer_view(a_run, a.rank, None).stats,
                              run_views.layer_view(b_run, b.rank, None).stats)
    return CompareView(a=a, b=b, comparison=merge_renamed(comparison, renamed), totals=comparison_totals(comparison),
                       renamed=renamed, layers=layers)
