"""`/timeline`: kernels, copies, passes and call stacks per stream and thread.

URL state: run, rank (int or "all"), sel (kernel keys, highlighted; others
grey), window (`<start_ns>-<end_ns>` on the run clock: the zoom, carried to
/kernels and /layers, which summarise that window).

Zooming (drag), panning, a box selection or a double-click re-queries the
server with the new window, which answers with a figure at the right level
of detail: buckets when zoomed out, single events when zoomed in.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import dash
import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis.ranks_view import one_rank_timeline
from dashboard.analysis.run_views import kernel_ranks
from dashboard.analysis.selection import format_keys, format_window, parse_keys, parse_window, x_range_from_relayout
from dashboard.analysis.timeline import (
    OVERLAY_GROUP,
    TimelineData,
    TimelineView,
    clamp_window,
    prepare_timeline,
    timeline_view,
)
from dashboard.analysis.units import format_ns
from dashboard.figures.timeline import TimeAxis, timeline_figure_dict
from dashboard.gc_pause import gc_paused
from dashboard.layouts.context import current_store, fired_ids
from dashboard.layouts.controls import rank_control
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.shell import URL_STATE, url_state_store
from dashboard.store import Run
from dashboard.views.kernel_table import window_text
from dashboard.views.params import ALL_RANKS, MANY_RANKS, initial_rank, parse_rank

dash.register_page(__name__, path="/timeline", name="Timeline", order=3, title="Timeline · dashboard")

PATH = "/timeline"
EVIDENCE = "kernels"
DRAG_MODES = ("zoom", "pan", "select")
_build_lock = threading.Lock()


@lru_cache(maxsize=4)
def _prepared(run_id: str, created: str, rank: int | None) -> TimelineData:
    run = current_store().open(run_id)
    if rank is not None:
        return one_rank_timeline(run, rank)
    return prepare_timeline(run.frame("kernels"), run.frame("memcpy"), run.frame("ranges"), run.frame("stack"))


def _many_ranks(run: Run) -> bool:
    return len(kernel_ranks(run)) > MANY_RANKS


def timeline_data(run: Run, rank: int | None = None) -> TimelineData:
    """The run indexed for timeline views: built once per run and process (~1-2 s for 1 M kernels).

    A run with more than MANY_RANKS ranks is indexed one rank at a time (the rank shown), not whole.
    """
    with _build_lock:  # two first requests for one run build it once
        return _prepared(run.id, run.info.created, rank if _many_ranks(run) else None)


def timeline_ranks(run: Run) -> tuple[int, ...]:
    """The ranks the rank menu offers (for many ranks, read from the tables, not from a whole-run index)."""
    return kernel_ranks(run) if _many_ranks(run) else tuple(timeline_data(run).ranks)


@lru_cache(maxsize=64)
def _cached_view(run_id: str, created: str, window: tuple[int, int], rank: int | None,
                 selected: tuple[str, ...]) -> tuple[TimelineView, dict[str, Any], float]:
    run = current_store().open(run_id)
    data = timeline_data(run, rank)
    with gc_paused():  # tens of thousands of short-lived objects: no collection mid-way
        view = timeline_view(data, window, rank, selected)
        figure = timeline_figure_dict(view, f"Timeline of {run.id}")
    return view, figure, TimeAxis(view).divisor


def render(run: Run, window: tuple[int, int] | None, rank: int | None,
           selected: list[str]) -> tuple[TimelineView, dict[str, Any], float]:
    """The view, its figure and the figure's ns-per-axis-unit, cached per (run, window, rank, selection)."""
    clamped = clamp_window(timeline_data(run, rank), window)
    return _cached_view(run.id, run.info.created, clamped, rank, tuple(sorted(selected)))


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


def window_label(window: tuple[int, int] | None, origin_ns: int) -> str:
    """The window chip's text, worded as on /kernels and /layers (`views.kernel_table.window_text`)."""
    return window_text(window, origin_ns)


def window_chip(window: tuple[int, int] | None, origin_ns: int) -> html.Div:
    """The 'window: a–b [clear]' chip (ids as on /kernels); hidden without a window."""
    return html.Div(html.Div([
        dbc.Badge(window_label(window, origin_ns), id="timeline-window-text", color="warning", text_color="dark",
                  className="me-1 window-chip",
                  title="The zoomed window; Kernels and Layers summarise it when you open them from the navbar"),
        dbc.Button("clear", id="timeline-window-clear", size="sm", color="link", className="p-0"),
    ], className="d-flex align-items-center me-4"), id="timeline-window-chip",
        style={} if window else {"display": "none"})


def _url_state(window: tuple[int, int] | None, rank: int | None, selected: list[str]) -> dict[str, Any]:
    return {"window": format_window(*window) if window else "", "rank": ALL_RANKS if rank is None else rank,
            "sel": format_keys(selected)}


def _window_of(view: TimelineView) -> tuple[int, int] | None:
    return None if view.is_full else (view.start_ns, view.end_ns)


def layout(run: str | None = None, rank: str | None = None, sel: str | None = None, window: str | None = None,
           **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Timeline", chosen, "Kernels, copies, passes and call stacks per stream and thread")
    if chosen is None:
        return html.Div([header, notice], id="timeline-page")
    ranks = timeline_ranks(chosen)
    state_rank, selected = initial_rank(rank, ranks), parse_keys(sel)
    data = timeline_data(chosen, state_rank)
    view, figure, divisor = render(chosen, parse_window(window), state_rank, selected)
    state_window = _window_of(view)
    controls = html.Div([
        rank_control("timeline-rank", ranks, state_rank),
        window_chip(state_window, data.start_ns),
        dbc.Button("whole run", id="timeline-reset", size="sm", color="secondary", outline=True, className="me-2"),
        dbc.Button("clear selection", id="timeline-clear-selection", size="sm", color="secondary", outline=True,
                   style={} if selected else {"display": "none"}),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    hint = html.Small(
        "Drag across the chart to zoom into a window (it carries to Kernels and Layers), shift-drag or the pan "
        "tool to move, double-click for the whole run. Click a kernel bar to highlight every launch of it.",
        className="text-muted d-block mb-2")
    return html.Div([
        header,
        dcc.Store(id="timeline-state", data={"run": chosen.id, "window": list(state_window) if state_window else None,
                                             "rank": state_rank, "sel": selected,
                                             "origin_ns": view.run_start_ns, "divisor": divisor}),
        url_state_store("timeline", _url_state(state_window, state_rank, selected)),
        controls,
        hint,
        html.Div(status_text(view), id="timeline-status", className="small text-muted mb-2"),
        html.Div(_graph(figure, chosen.id), className="chart-card"),
    ], id="timeline-page")


def _graph(figure: dict[str, Any], run_id: str) -> Any:
    graph = chart("timeline-graph", figure, f"{run_id}-timeline")
    graph.config = {**graph.config, "modeBarButtonsToRemove": ["lasso2d", "autoScale2d"], "doubleClick": "autosize",
                    "scrollZoom": False}
    return graph


def window_from_relayout(relayout: dict[str, Any] | None, origin_ns: int,
                         divisor: float) -> tuple[int, int] | str | None:
    """The window a relayout event asks for: (start_ns, end_ns), "all" for autorange, None if unrelated."""
    extent = x_range_from_relayout(relayout)
    if extent is None or extent == "all":
        return extent
    start, end = extent
    return _on_run_clock(start, origin_ns, divisor), _on_run_clock(end, origin_ns, divisor)


def _on_run_clock(axis_value: float, origin_ns: int, divisor: float) -> int:
    # Integer addition: epoch-nanosecond origins (~1.8e18) are beyond float64's exact integers.
    return origin_ns + round(axis_value * divisor)


def window_from_selection(selection: dict[str, Any] | None, origin_ns: int, divisor: float) -> tuple[int, int] | None:
    """The x extent of a box selection, on the run clock."""
    x_range = ((selection or {}).get("range") or {}).get("x")
    if not x_range or len(x_range) != 2:
        return None
    start, end = sorted(float(v) for v in x_range)
    return _on_run_clock(start, origin_ns, divisor), _on_run_clock(end, origin_ns, divisor)


def clicked_kernel(click: dict[str, Any] | None) -> str | None:
    """The kernel key of a clicked kernel bar (kernel bars carry their key as `text`)."""
    points = (click or {}).get("points") or []
    keys = parse_keys(str(points[0].get("text", ""))) if points else []
    return keys[0] if keys else None


def _chart_events(props: set[str], relayout: dict | None, selection: dict | None, click: dict | None,
                  state: dict[str, Any], window: tuple[int, int] | None,
                  selected: list[str]) -> tuple[tuple[int, int] | None, list[str], dict[str, Any], bool]:
    """(window, selection, state, whether a new view was asked) after the chart's fired events."""
    asked = False
    if "relayoutData" in props and (relayout or {}).get("dragmode") in DRAG_MODES:
        # The user switched tools (zoom / pan / box select): remember it for the figures to come.
        state = {**state, "dragmode": relayout["dragmode"]}  # type: ignore[index]
    elif "relayoutData" in props:
        zoom = window_from_relayout(relayout, state["origin_ns"], state["divisor"])
        if zoom is not None:
            window, asked = (None if zoom == "all" else zoom), True
    if "selectedData" in props:
        box = window_from_selection(selection, state["origin_ns"], state["divisor"])
        if box is not None:
            window, asked = box, True
            state = {**state, "dragmode": "select"}  # a box selection is made in select mode
    if "clickData" in props:
        key = clicked_kernel(click)
        if key is not None:
            selected = [k for k in selected if k != key] if key in selected else [*selected, key]
            asked = True
    return window, selected, state, asked


@callback(
    Output("timeline-graph", "figure"),
    Output("timeline-state", "data"),
    Output({"type": URL_STATE, "page": "timeline"}, "data"),
    Output("timeline-status", "children"),
    Output("timeline-window-chip", "style"),
    Output("timeline-window-text", "children"),
    Output("timeline-clear-selection", "style"),
    Input("timeline-graph", "relayoutData"),
    Input("timeline-graph", "selectedData"),
    Input("timeline-graph", "clickData"),
    Input("timeline-rank", "value"),
    Input("timeline-window-clear", "n_clicks"),
    Input("timeline-reset", "n_clicks"),
    Input("timeline-clear-selection", "n_clicks"),
    State("timeline-state", "data"),
    prevent_initial_call=True,
)
def update_timeline(relayout: dict | None, selection: dict | None, click: dict | None, rank_value: Any,
                    _clear_window: Any, _reset: Any, _clear_selection: Any, state: dict[str, Any]) -> tuple[Any, ...]:
    run = current_store().open(state["run"])
    window = tuple(state["window"]) if state.get("window") else None
    rank = parse_rank(rank_value, timeline_ranks(run))
    data = timeline_data(run, rank)
    old_dragmode = state.get("dragmode")
    selected = list(state.get("sel") or [])
    fired = fired_ids()
    # The rank is compared with what is drawn, not taken from the fired inputs alone: the renderer
    # drops the answer to a call that a newer call of this callback overtakes (a rank picked while
    # the chart's relayout event is on its way), and the newer call may name only that event.
    asked_something = rank != state.get("rank") or bool(
        fired & {"timeline-window-clear", "timeline-reset", "timeline-clear-selection"})
    if fired & {"timeline-window-clear", "timeline-reset"}:
        window = None
    if "timeline-clear-selection" in fired:
        selected = []
    if "timeline-graph" in fired:
        props = {prop.rsplit(".", 1)[-1] for prop in ctx.triggered_prop_ids if prop.startswith("timeline-graph.")}
        window, selected, state, asked_by_chart = _chart_events(props, relayout, selection, click,
                                                                state, window, selected)
        asked_something = asked_something or asked_by_chart
    if not asked_something:
        if state.get("dragmode") != old_dragmode:
            return (no_update, state, *[no_update] * 5)
        raise PreventUpdate
    view, figure, divisor = render(run, window, rank, selected)
    shown = _window_of(view)
    new_state = {**state, "window": list(shown) if shown else None, "rank": rank, "sel": selected,
                 "divisor": divisor}
    if state.get("dragmode") in DRAG_MODES:  # the cached figure is shared: copy before changing it
        figure = {**figure, "layout": {**figure["layout"], "dragmode": state["dragmode"]}}
    return (figure, new_state, _url_state(shown, rank, selected), status_text(view),
            {} if shown else {"display": "none"}, window_label(shown, data.start_ns),
            {} if selected else {"display": "none"})

