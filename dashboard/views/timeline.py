"""`/timeline`: kernels, copies, passes and call stacks per stream and thread, at the window's level of detail.

URL state: run, rank (int or "all"; none asked: all ranks, or the first rank
when the run has more than MANY_RANKS), sel (kernel keys, highlighted; others
grey), window (`<start_ns>-<end_ns>` on the run clock: the zoom, carried to
/kernels and /layers, which summarise that window).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.timeline import OVERLAY_GROUP, TimelineData, TimelineView, clamp_window, prepare_timeline
from dashboard.analysis.timeline import timeline_view as build_view
from dashboard.analysis.units import format_ns
from dashboard.collectors.gc_pause import gc_paused
from dashboard.figures.timeline import TimeAxis, timeline_figure_dict
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.run_views import kernel_ranks, run_origin_ns
from dashboard.views.state import ViewState, param

# Export name of each chart -> the page's component id.
CHARTS = {"timeline": "timeline-graph"}
_build_lock = threading.Lock()


@dataclass(frozen=True)
class State(ViewState):
    # None until resolved against the run (no rank asked); then ALL_RANKS or a rank the run has.
    rank: int | str | None = param(params.rank_or_all())
    window: tuple[int, int] | None = param(params.window())
    sel: tuple[str, ...] = param(params.keys(), ())

    def resolved(self, run: Run) -> Self:
        asked = None if self.rank is None else str(self.rank)
        chosen = params.initial_rank(asked, timeline_ranks(run))
        return self.replace(rank=params.ALL_RANKS if chosen is None else chosen)

    @property
    def rank_shown(self) -> int | None:
        """The rank drawn, None for every rank."""
        return self.rank if isinstance(self.rank, int) else None


@dataclass(frozen=True)
class Drawn:
    """One window of the timeline as drawn: the view, its figure (plotly.js's dict) and the axis's ns per unit."""

    view: TimelineView
    figure: dict[str, Any]
    divisor: float

    @property
    def window(self) -> tuple[int, int] | None:
        """The window shown (the asked one clamped to the run), None for the whole run."""
        return None if self.view.is_full else (self.view.start_ns, self.view.end_ns)


def _many_ranks(run: Run) -> bool:
    return len(kernel_ranks(run)) > params.MANY_RANKS


@per_run(maxsize=4)
def _prepared(run: Run, rank: int | None) -> TimelineData:
    if rank is not None:
        return one_rank_timeline(run, rank)
    return prepare_timeline(run.frame("kernels"), run.frame("memcpy"), run.frame("ranges"), run.frame("stack"))


def timeline_data(run: Run, rank: int | None = None) -> TimelineData:
    """The run indexed for timeline views: built once per run and process (~1-2 s for 1 M kernels).

    A run with more than MANY_RANKS ranks is indexed one rank at a time (the rank shown), not whole.
    """
    with _build_lock:  # two first requests for one run build it once
        return _prepared(run, rank if _many_ranks(run) else None)


def timeline_ranks(run: Run) -> tuple[int, ...]:
    """The ranks the rank menu offers (for many ranks, read from the tables, not from a whole-run index)."""
    return kernel_ranks(run) if _many_ranks(run) else tuple(timeline_data(run).ranks)


def title(run: Run) -> str:
    return f"Timeline of {run.id}"


@per_run(maxsize=64)
def _drawn(run: Run, window: tuple[int, int], rank: int | None, selected: tuple[str, ...]) -> Drawn:
    data = timeline_data(run, rank)
    with gc_paused():  # tens of thousands of short-lived objects: no collection mid-way
        view = build_view(data, window, rank, selected)
        figure = timeline_figure_dict(view, title(run))
    return Drawn(view, figure, TimeAxis(view).divisor)


def drawn(run: Run, state: State) -> Drawn:
    """The view and figure of a state, cached per (run, window clamped to the run, rank, selection)."""
    rank = state.rank_shown
    clamped = clamp_window(timeline_data(run, rank), state.window)
    return _drawn(run, clamped, rank, tuple(sorted(state.sel)))


def shown(run: Run, state: State) -> State:
    """The state as drawn: its window clamped to the run (None when that is the whole run)."""
    return state.replace(window=drawn(run, state).window)


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The page's one chart. A new Figure around the cached dict: callers may size it (the PNG export)."""
    return {"timeline": go.Figure(drawn(run, state).figure, _validate=False)}


def status_text(view: TimelineView) -> str:
    """What the figure shows and at which level of detail, in words."""
    lanes = view.lanes.filter(pl.col("group") != OVERLAY_GROUP)
    total = int(lanes.get_column("events").sum())
    aggregated = lanes.filter((pl.col("events") > 0) & ~pl.col("exact")).height
    parts = [f"{total:,} events in view"]
    if aggregated:
        width = (view.end_ns - view.start_ns) / view.buckets
        parts.append(f"{aggregated} busy lane{'s' if aggregated != 1 else ''} summarised in buckets of "
                     f"{format_ns(width)} (colour: the name holding most of the bucket; paler: less busy) — "
                     "zoom in to see single events")
    elif total:
        parts.append("every event drawn")
    if view.selected_keys:
        parts.append(f"{len(view.selected_keys)} selected kernel{'s' if len(view.selected_keys) != 1 else ''} "
                     "highlighted, others grey")
    return " · ".join(parts)


TIMELINE_TABLES = ("kernels", "memcpy", "ranges", "stack")


def one_rank_timeline(run: Run, rank: int) -> TimelineData:
    """The timeline index of one rank: only its rows are read (a filtered scan; in a partitioned run
    the other ranks' files are skipped by their statistics), on the run's clock, so a window reads
    the same on every page and for every rank."""
    tables = [run.scan(table).filter(pl.col("rank") == rank).collect() for table in TIMELINE_TABLES]
    data = prepare_timeline(*tables)
    return replace(data, start_ns=min(data.start_ns, run_origin_ns(run)))
