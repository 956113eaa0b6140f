"""`/insights`: the GPU time breakdown per rank and step, and the findings ranked by what is at stake.

URL state: run (any run: kernel traces give GPU-time findings, memory logs, allocator traces and planner
dumps give theirs) and `scope=hta`: the breakdown in Holistic Trace Analysis' scope (its events, its kernel
split: breakdown.hta_scope), so a user moving from HTA reads HTA's numbers. The analysis is built once per run
(`analysis.insights.run_insights`, cached here).
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.insights import Insights, run_breakdown, run_insights
from dashboard.figures.insights import breakdown_figure, hta_breakdown_figure
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.state import ViewState, param

MAX_STEP_BARS = 64  # more (rank, step) bars than this are not legible: the per-step chart shows the first ones
CHARTS = {"insights-breakdown": "insights-breakdown", "insights-breakdown-steps": "insights-breakdown-steps"}


SCOPES = ("all", "hta")  # every event of the run; HTA's scope


@dataclass(frozen=True)
class State(ViewState):
    """The run (the page shows all of it) and which scope the breakdown is drawn in."""

    scope: str = param(params.choice("scope", SCOPES, "all"), "all")

    @property
    def hta_scope(self) -> bool:
        return self.scope == "hta"


def has_gpu_time(run: Run) -> bool:
    return run.has("kernels") or run.has("memcpy")


@per_run(8)
def insights(run: Run) -> Insights:
    return run_insights(run)


@per_run(8)
def breakdown(run: Run) -> pl.DataFrame:
    """The whole run's GPU time breakdown (analysis.breakdown), the /kernels headline."""
    return run_breakdown(run)


def steps_shown(run: Run) -> pl.DataFrame:
    """The (rank, step) rows the per-step chart draws: the first MAX_STEP_BARS with a step."""
    return insights(run).by_step.filter(pl.col("step").is_not_null()).head(MAX_STEP_BARS)


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    if not has_gpu_time(run):
        return {}
    if state.hta_scope:  # HTA's temporal breakdown is per rank only
        return {"insights-breakdown": hta_breakdown_figure(insights(run).time.hta)}
    found = {"insights-breakdown": breakdown_figure(insights(run).by_rank)}
    by_step = steps_shown(run)
    if by_step.height:
        found["insights-breakdown-steps"] = breakdown_figure(by_step, by_step=True)
    return found
