"""`/ranks`: step time per rank × step, the slowest ranks, and the kernels that set a rank apart.

Reads the per-rank summaries a cluster ingest stores (never every kernel row); other runs get the same
tables grouped from their kernels and ranges (analysis/rank_steps.py), cached here per run.

URL state: run, rank (the rank whose kernels are compared with the typical rank; default the slowest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis import rank_steps
from dashboard.analysis.rank_summaries import step_source
from dashboard.figures.ranks import step_heatmap
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.state import ViewState, param

CHARTS = {"ranks-heatmap": "ranks-heatmap"}


@per_run(16)
def steps(run: Run) -> pl.DataFrame:
    """rank, step, start_ns, end_ns, step_ns, source (rank_steps.step_matrix)."""
    return rank_steps.step_matrix(run)


@per_run(16)
def totals(run: Run) -> pl.DataFrame:
    """rank, name, count, total_ns (rank_steps.kernel_totals)."""
    return rank_steps.kernel_totals(run)


@per_run(16)
def ranks(run: Run) -> tuple[int, ...]:
    return tuple(sorted(totals(run).get_column("rank").unique().to_list()))


@per_run(16)
def slowest(run: Run) -> pl.DataFrame:
    return rank_steps.slowest_ranks(steps(run))


def default_rank(run: Run) -> int | None:
    """The slowest rank (the first when no rank has steps)."""
    ranked = slowest(run)
    if ranked.height:
        return int(ranked.item(0, "rank"))
    return ranks(run)[0] if ranks(run) else None


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())  # None: the slowest rank

    def resolved(self, run: Run) -> Self:
        rank = params.resolve_rank(self.rank, ranks(run))
        return self.replace(rank=None if rank == default_rank(run) else rank)

    def shown_rank(self, run: Run) -> int | None:
        return self.rank if self.rank is not None else default_rank(run)


def has_charts(run: Run) -> bool:
    """Whether the run has profiler steps (or stepped kernels) to draw per rank."""
    return steps(run).height > 0


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    return {"ranks-heatmap": step_heatmap(steps(run))} if has_charts(run) else {}


def differing(run: Run, state: State) -> pl.DataFrame:
    """The kernels whose time on the shown rank differs most from the typical rank."""
    rank = state.shown_rank(run)
    return rank_steps.kernels_differing(totals(run), rank) if rank is not None else totals(run).clear()


def source_note(run: Run) -> str:
    """Which step time this is (rank_summaries.step_source) and where it was read from."""
    shown = f"Step times from {step_source(steps(run))}. "
    if run.summary("steps") is not None:
        return shown + "Read from the per-rank summaries stored at ingest."
    return shown + "Computed from the run's kernels and ranges (a cluster ingest stores these summaries ahead)."
