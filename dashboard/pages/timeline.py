"""`/timeline`: kernels, copies, passes and call stacks per stream and thread.

URL state (views/timeline.py): run, rank (int or "all"; none asked: all ranks, or the first
rank above MANY_RANKS ranks), sel (kernel keys, highlighted; others grey), window
(`<start_ns>-<end_ns>` on the run clock: the zoom, carried to /kernels and /layers, which
summarise that window).

Zooming (drag), panning, a box selection or a double-click re-queries the
server with the new window, which answers with a figure at the right level
of detail: buckets when zoomed out, single events when zoomed in.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.layouts.controls import rank_control
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.server_state import current_store, fired_ids
from dashboard.layouts.shell import URL_STATE, url_state_store
from dashboard.store import Run
from dashboard.views import timeline as view
from dashboard.views.chart_events import x_range_from_relayout
from dashboard.views.kernel_table import window_text
from dashboard.views.params import ALL_RANKS, parse_keys

dash.register_page(__name__, path="/timeline", name="Timeline", order=3, title="Timeline · dashboard")

PATH = "/timeline"
EVIDENCE = "kernels"
DRAG_MODES = ("zoom", "pan", "select")


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


@run_page("timeline", "Timeline", "Kernels, copies, passes and call stacks per stream and thread", EVIDENCE, PATH)
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    asked = view.State.from_query(query, chosen)
    drawn = view.drawn(chosen, asked)
    state = view.shown(chosen, asked)
    origin = drawn.view.run_start_ns
    controls = html.Div([
        rank_control("timeline-rank", view.timeline_ranks(chosen), state.rank_shown),
        window_chip(state.window, origin),
        dbc.Button("whole run", id="timeline-reset", size="sm", color="secondary", outline=True, className="me-2"),
        dbc.Button("clear selection", id="timeline-clear-selection", size="sm", color="secondary", outline=True,
                   style={} if state.sel else {"display": "none"}),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    hint = html.Small(
        "Drag across the chart to zoom into a window (it carries to Kernels and Layers), shift-drag or the pan "
        "tool to move, double-click for the whole run. Click a kernel bar to highlight every launch of it.",
        className="text-muted d-block mb-2")
    return html.Div([
        header,
        # What the chart's events need to become a state (the run clock of its axis) and what is drawn.
        dcc.Store(id="timeline-state", data={"run": chosen.id, "window": list(state.window) if state.window else None,
                                             "rank": state.rank_shown, "sel": list(state.sel),
                                             "origin_ns": origin, "divisor": drawn.divisor}),
        url_state_store("timeline", state.url_state()),
        controls,
        hint,
        html.Div(view.status_text(drawn.view), id="timeline-status", className="small text-muted mb-2"),
        html.Div(_graph(drawn.figure, chosen.id), className="chart-card"),
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
    rank = view.State.from_query({"rank": rank_value}, run).rank_shown
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
    asked = view.State(rank=ALL_RANKS if rank is None else rank, window=window,
                       sel=tuple(dict.fromkeys(selected)))
    drawn = view.drawn(run, asked)
    shown = view.shown(run, asked)
    new_state = {**state, "window": list(shown.window) if shown.window else None, "rank": rank,
                 "sel": list(shown.sel), "divisor": drawn.divisor}
    figure = drawn.figure
    if state.get("dragmode") in DRAG_MODES:  # the cached figure is shared: copy before changing it
        figure = {**figure, "layout": {**figure["layout"], "dragmode": state["dragmode"]}}
    return (figure, new_state, shown.url_state(), view.status_text(drawn.view),
            {} if shown.window else {"display": "none"}, window_label(shown.window, drawn.view.run_start_ns),
            {} if shown.sel else {"display": "none"})
