"""`/timeline`: kernels, copies, CPU threads and API calls, passes and call stacks, at the window's level of detail.

URL state: run, rank (int or "all"; none asked: all ranks, or the first rank
when the run has more than MANY_RANKS), sel (kernel keys, highlighted; others
grey), window (`<start_ns>-<end_ns>` on the run clock: the zoom, carried to
/kernels and /layers, which summarise that window), find (a search; `re=1`:
a regular expression) and hit (the match shown, from 1), ev (the selected
event, `analysis.timeline_details.EventRef`), flows (auto / on / off: launch
arrows of the whole window), colour (kernel / category), pin and fold (track
ids drawn first / on one row).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Self

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.timeline import (
    FLOW_SCHEMA,
    FOCUS_SCHEMA,
    MATCH_SCHEMA,
    OVERLAY_GROUP,
    TIMELINE_TABLES,
    TimelineData,
    TimelineView,
    clamp_window,
    prepare_timeline,
)
from dashboard.analysis.timeline import timeline_view as build_view
from dashboard.analysis.timeline_details import EventRef, find_event
from dashboard.analysis.timeline_flows import event_links, launch_links, targets_starting, window_flows
from dashboard.analysis.timeline_index import bucket_edges
from dashboard.analysis.timeline_kept import run_timeline
from dashboard.analysis.timeline_search import MAX_PATTERN, SearchResult, search, search_index
from dashboard.analysis.units import format_ns
from dashboard.collectors.gc_pause import gc_paused
from dashboard.figures.timeline import TimeAxis, timeline_figure_dict
from dashboard.figures.timeline_colours import COLOUR_MODES
from dashboard.figures.timeline_overlays import HEADED_FLOWS
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.run_views import kernel_ranks, run_origin_ns
from dashboard.views.state import ViewState, param

# Export name of each chart -> the page's component id.
CHARTS = {"timeline": "timeline-graph"}
FLOW_MODES = ("auto", "on", "off")
# Above this many launch arrows in a window, `flows=auto` draws none (and says so): as many as can be drawn
# with heads. More, as plain lines, fanned into a haze over the lanes (720 on the demo's whole run) and took
# plotly ~40 ms more to draw and paint (the timeline figure alone, min of 7: 302 -> 261 ms without them).
AUTO_FLOWS = HEADED_FLOWS
COUNT_FLOWS_UNDER = 8_000  # kernels and copies starting in a window; above, `flows=auto` does not even count arrows
MAX_FLOWS = 20_000  # `flows=on` draws at most this many
DERIVE_AFTER_S = 1.0
_build_lock = threading.Lock()


@dataclass(frozen=True)
class State(ViewState):
    # None until resolved against the run (no rank asked); then ALL_RANKS or a rank the run has.
    rank: int | str | None = param(params.rank_or_all())
    window: tuple[int, int] | None = param(params.window())
    sel: tuple[str, ...] = param(params.keys(), ())
    find: str | None = param(params.text("find", MAX_PATTERN))
    regex: bool = param(params.flag("re"), False)
    hit: int | None = param(params.number("hit", low=1))
    ev: str | None = param(params.text("ev", 120))
    flows: str = param(params.choice("flows", FLOW_MODES, "auto"), "auto")
    colour: str = param(params.choice("colour", COLOUR_MODES, "kernel"), "kernel")
    pin: tuple[str, ...] = param(params.names("pin", 120), ())
    fold: tuple[str, ...] = param(params.names("fold", 120), ())

    def resolved(self, run: Run) -> Self:
        asked = None if self.rank is None else str(self.rank)
        chosen = params.initial_rank(asked, timeline_ranks(run))
        ev = self.ev if EventRef.parse(self.ev) is not None else None
        return self.replace(rank=params.ALL_RANKS if chosen is None else chosen, ev=ev,
                            hit=self.hit if self.find else None)

    @property
    def rank_shown(self) -> int | None:
        """The rank drawn, None for every rank."""
        return self.rank if isinstance(self.rank, int) else None

    @property
    def event(self) -> EventRef | None:
        return EventRef.parse(self.ev)


@dataclass(frozen=True)
class Drawn:
    """One window of the timeline as drawn: the view, its figure (plotly.js's dict) and the axis's ns per unit."""

    view: TimelineView
    figure: dict[str, Any]
    divisor: float
    found: SearchResult | None  # the search of the state, on the rank drawn
    flows_note: str  # what the launch arrows of the window are, in words

    @property
    def window(self) -> tuple[int, int] | None:
        """The window shown (the asked one clamped to the run), None for the whole run."""
        return None if self.view.is_full else (self.view.start_ns, self.view.end_ns)


def _many_ranks(run: Run) -> bool:
    return len(kernel_ranks(run)) > params.MANY_RANKS


@per_run(maxsize=4)
def _prepared(run: Run, rank: int | None) -> TimelineData:
    data = one_rank_timeline(run, rank) if rank is not None else run_timeline(run)
    # The search index and the launch pairs (~0.3 s each at 1 M kernels) are built in the background once
    # the first view has had the CPU (DERIVE_AFTER_S), so neither the first render nor the first search or
    # click waits for both; whoever needs one before it is ready builds it (or waits for the build).
    timer = threading.Timer(DERIVE_AFTER_S, _derive, args=(data,))
    timer.daemon = True
    timer.start()
    return data


def _derive(data: TimelineData) -> None:
    search_index(data)
    launch_links(data)


def timeline_data(run: Run, rank: int | None = None) -> TimelineData:
    """The run indexed for timeline views: built once per run and process (~2-3 s for 1 M kernels).

    A run with more than MANY_RANKS ranks is indexed one rank at a time (the rank shown), not whole.
    """
    with _build_lock:  # two first requests for one run build it once
        return _prepared(run, rank if _many_ranks(run) else None)


def timeline_ranks(run: Run) -> tuple[int, ...]:
    """The ranks the rank menu offers (for many ranks, read from the tables, not from a whole-run index)."""
    return kernel_ranks(run) if _many_ranks(run) else tuple(timeline_data(run).ranks)


def title(run: Run) -> str:
    return f"Timeline of {run.id}"


@per_run(maxsize=16)
def found(run: Run, rank: int | None, query: str, regex: bool) -> SearchResult:
    """The search of a state on the rank drawn (every rank for None), cached per query."""
    return search(timeline_data(run, rank), query, regex, rank)


def _lane_alias(data: TimelineData, shown: pl.DataFrame) -> dict[int, int]:
    """Lane -> the lane it is drawn on: a folded track's hidden rows draw on its first row."""
    visible = shown.select("track_id", "lane").unique("track_id", keep="first")
    hidden = data.lanes.filter(~pl.col("lane").is_in(shown.get_column("lane").to_list()))
    return dict(hidden.join(visible, on="track_id", how="inner", suffix="_shown").select("lane", "lane_shown")
                .iter_rows())


def _aliased(frame: pl.DataFrame, alias: dict[int, int], *columns: str) -> pl.DataFrame:
    if not alias:
        return frame
    return frame.with_columns(pl.col(c).replace(alias).cast(pl.Int32) for c in columns)


def _flows_note(mode: str, count: int, drawn: int, starting: int | None = None) -> str:
    if starting is not None:
        return (f"{starting:,} kernels and copies start in this window: more than {AUTO_FLOWS:,} launch arrows, "
                "so off by default (turn them on, or zoom in)")
    if count == 0:
        return "no launch arrows in this window (no API call with a correlation id launched its kernels)"
    if mode == "off":
        return f"{count:,} launch arrows in this window, turned off"
    if mode == "auto" and count > AUTO_FLOWS:
        return (f"{count:,} launch arrows in this window: more than {AUTO_FLOWS:,}, so off by default "
                "(turn them on, or zoom in)")
    if drawn < count:
        return f"{drawn:,} of {count:,} launch arrows in this window drawn (at most {MAX_FLOWS:,})"
    if drawn > HEADED_FLOWS:
        return (f"{count:,} launch arrows in this window (API call → kernel or copy), drawn as lines: "
                f"heads above {HEADED_FLOWS:,} would merge (zoom in, or select an event for its arrows)")
    return f"{count:,} launch arrows in this window (API call → kernel or copy)"


def _overlaid(data: TimelineData, view: TimelineView, state: State, result: SearchResult | None) -> tuple[
        TimelineView, str]:
    """The view with the search's matches, the selected event's outline and arrows, and the window's flows."""
    alias = _lane_alias(data, view.lanes)
    lanes = view.lanes.filter(pl.col("group") != OVERLAY_GROUP).get_column("lane").to_numpy()
    mode = state.flows
    limit = 0 if mode == "off" else (AUTO_FLOWS + 1 if mode == "auto" else MAX_FLOWS)
    # Arrows of hidden (folded) rows are drawn to their track's row: count them among the shown lanes.
    visible = set(lanes.tolist())
    folded = [lane for lane, target in alias.items() if target in visible]
    reachable = np.unique(np.concatenate([lanes, np.asarray(folded, dtype=lanes.dtype)])).astype(np.int64)
    starting = targets_starting(data, reachable, view.start_ns, view.end_ns)
    has_calls = bool(data.lanes.filter(pl.col("group") == "api").height)
    if not has_calls:
        flows, note = pl.DataFrame(schema=FLOW_SCHEMA), _flows_note(mode, 0, 0)
    elif mode == "auto" and starting > COUNT_FLOWS_UNDER:
        # Far too many to draw: say so without joining the launches (the first join of a big run is slow).
        flows, note = pl.DataFrame(schema=FLOW_SCHEMA), _flows_note(mode, 0, 0, starting)
    else:
        flows, count = window_flows(data, reachable, view.start_ns, view.end_ns, limit)
        if mode == "auto" and count > AUTO_FLOWS:
            flows = flows.clear()
        note = _flows_note(mode, count, flows.height)
    parts = [flows]
    focus = pl.DataFrame(schema=FOCUS_SCHEMA)
    row = find_event(data, state.event) if state.event is not None else None
    if row is not None:
        event = data.events.row(row, named=True)
        name = str(data.names.get_column("name")[event["code"]])
        focus = pl.DataFrame({"lane": [event["lane"]], "start_ns": [event["start_ns"]], "end_ns": [event["end_ns"]],
                              "name": [name]}, schema=FOCUS_SCHEMA)
        parts.append(event_links(data, row).flows)
    matches, label = pl.DataFrame(schema=MATCH_SCHEMA), None
    if result is not None:
        edges = bucket_edges(view.start_ns, view.end_ns, view.buckets)
        matches = pl.DataFrame({"bucket": np.arange(view.buckets), "start_ns": edges[:-1], "end_ns": edges[1:],
                                "matches": result.per_bucket(edges)}, schema=MATCH_SCHEMA)
        label = f"find: {result.count:,}"
    return replace(view, flows=_aliased(pl.concat(parts), alias, "from_lane", "to_lane"),
                   focus=_aliased(focus, alias, "lane"), matches=matches, search=label), note


@dataclass(frozen=True)
class _Key:
    """The parts of a state its figure depends on (hit does not: it moved the window and chose ev)."""

    window: tuple[int, int]
    rank: int | None
    sel: tuple[str, ...]
    find: str | None
    regex: bool
    ev: str | None
    flows: str
    colour: str
    pin: tuple[str, ...]
    fold: tuple[str, ...]


@per_run(maxsize=64)
def _drawn(run: Run, key: _Key) -> Drawn:
    data = timeline_data(run, key.rank)
    result = found(run, key.rank, key.find, key.regex) if key.find else None
    matched = result.codes.tolist() if result is not None else ()
    with gc_paused():  # tens of thousands of short-lived objects: no collection mid-way
        view = build_view(data, key.window, key.rank, key.sel, pinned=key.pin, folded=key.fold,
                          matched_codes=matched)
        view, note = _overlaid(data, view, State(ev=key.ev, flows=key.flows), result)
        figure = timeline_figure_dict(view, title(run), key.colour)
    return Drawn(view, figure, TimeAxis(view).divisor, result, note)


def drawn(run: Run, state: State) -> Drawn:
    """The view and figure of a state, cached per (run, window clamped to the run, and the rest of the state)."""
    rank = state.rank_shown
    clamped = clamp_window(timeline_data(run, rank), state.window)
    return _drawn(run, _Key(clamped, rank, tuple(sorted(state.sel)), state.find, state.regex, state.ev,
                            state.flows, state.colour, state.pin, state.fold))


def clear_drawn() -> None:
    """Forget every drawn window (benchmarks measure new windows with it); the index and searches stay."""
    _drawn.cache_clear()


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


def one_rank_timeline(run: Run, rank: int) -> TimelineData:
    """The timeline index of one rank: only its rows are read (a filtered scan; in a partitioned run
    the other ranks' files are skipped by their statistics), on the run's clock, so a window reads
    the same on every page and for every rank."""
    tables = [run.scan(table).filter(pl.col("rank") == rank).collect() for table in TIMELINE_TABLES]
    data = prepare_timeline(*tables)
    return replace(data, start_ns=min(data.start_ns, run_origin_ns(run)))


def lane_tracks(run: Run, rank: int | None) -> list[dict[str, Any]]:
    """The tracks the lane pickers offer, in display order: id, label, rows (depth rows of a thread's flame)."""
    lanes = timeline_data(run, rank).lanes.filter(pl.col("group") != OVERLAY_GROUP)
    if rank is not None:
        lanes = lanes.filter(pl.col("rank") == rank)
    tracks = lanes.group_by("track_id", maintain_order=True).agg(pl.col("track_label").first(), pl.len().alias("rows"))
    return [{"id": track, "label": label, "rows": rows} for track, label, rows in tracks.iter_rows()]
