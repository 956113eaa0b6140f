"""`/timeline`: kernels, copies, CPU threads and API calls, passes and call stacks per stream and thread.

URL state: see views/timeline.py (run, rank, sel, window, find, re, hit, ev, flows, colour, pin, fold).

Keys and the wheel move the chart in the browser without a server call
(assets/timeline-keys.js); when the motion stops, the settled window comes
back here through the `timeline-relayout` store, as a drag (zoom), a pan, a box
selection or a double-click does, and the server answers with the figure at
the new window's level of detail: buckets when zoomed out, single events when
zoomed in. A click on a bar selects its event: the details pane opens beside
the chart and its launch arrows are drawn.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, clientside_callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis.kernel_keys import kernel_key
from dashboard.layouts.controls import rank_control
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import URL_STATE, url_state_store
from dashboard.layouts.timeline_controls import (
    KEYS_HINT,
    details_pane,
    lane_options,
    lane_pickers,
    pane_body,
    search_bar,
    view_choices,
)
from dashboard.store import Run
from dashboard.views import timeline as view
from dashboard.views.chart_events import x_range_from_relayout
from dashboard.views.kernel_table import window_text
from dashboard.views.params import ALL_RANKS
from dashboard.views.timeline_details import clicked_event
from dashboard.views.timeline_details import details_pane as pane_of
from dashboard.views.timeline_find import jump, search_text

dash.register_page(__name__, path="/timeline", name="Timeline", order=3, title="Timeline · dashboard")

PATH = "/timeline"
EVIDENCE = "kernels"
DRAG_MODES = ("zoom", "pan", "select")
# Buttons (and Enter in the find box): how many presses a view has taken in is kept with the state drawn,
# so a press whose answer the renderer dropped (a newer call of this callback overtook it: keys settling
# while a button is pressed) is taken in by the next call, as the rank and the other controls' values are.
BUTTONS = ("timeline-window-clear", "timeline-reset", "timeline-clear-selection", "timeline-details-close",
           "timeline-highlight", "timeline-prev", "timeline-next", "timeline-find-submit")


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


def _store(run: Run, state: view.State, drawn: view.Drawn, dragmode: str | None = None,
           presses: dict[str, int] | None = None) -> dict[str, Any]:
    """What the chart's events need to become a state (the run clock of its axis), the state drawn and the
    button presses it took in."""
    # The origin as text: epoch nanoseconds (~1.8e18) lose their last digits as a JavaScript number.
    data = {"run": run.id, "query": state.to_query(), "rank": state.rank_shown,
            "origin_ns": str(drawn.view.run_start_ns), "divisor": drawn.divisor, "presses": presses or {}}
    return {**data, "dragmode": dragmode} if dragmode else data


@run_page("timeline", "Timeline", "Kernels, copies, CPU threads and API calls, passes and call stacks", EVIDENCE, PATH)
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
    tools = html.Div([search_bar(state.find, state.regex, search_text(drawn.found, state.hit)),
                      view_choices(state.colour, state.flows)],
                     className="d-flex flex-wrap align-items-center gap-2 mb-2")
    return html.Div([
        header,
        dcc.Store(id="timeline-state", data=_store(chosen, state, drawn)),
        dcc.Store(id="timeline-relayout"),  # chart motions that ask the server: drags, and keys once settled
        dcc.Store(id="timeline-arrived"),
        url_state_store("timeline", state.url_state()),
        controls,
        tools,
        lane_pickers(view.lane_tracks(chosen, state.rank_shown), state.pin, state.fold),
        html.Small(KEYS_HINT, className="text-muted d-block mb-2"),
        html.Div(view.status_text(drawn.view), id="timeline-status", className="small text-muted"),
        html.Div(drawn.flows_note, id="timeline-flows-note", className="small text-muted mb-2"),
        html.Div([html.Div(_graph(drawn.figure, chosen.id), className="chart-card timeline-chart"),
                  details_pane(pane_of(chosen, state))], className="timeline-body"),
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


def _chart_events(props: set[str], relayout: dict | None, selection: dict | None, click: dict | None,
                  store: dict[str, Any], state: view.State) -> tuple[view.State, dict[str, Any], bool]:
    """(state, store, whether a new view was asked) after the chart's fired events."""
    asked = False
    origin = int(store["origin_ns"])
    if "relayout" in props and (relayout or {}).get("dragmode") in DRAG_MODES:
        # The user switched tools (zoom / pan / box select): remember it for the figures to come.
        store = {**store, "dragmode": relayout["dragmode"]}  # type: ignore[index]
    elif "relayout" in props:
        zoom = window_from_relayout(relayout, origin, store["divisor"])
        if zoom is not None:
            state, asked = state.replace(window=None if zoom == "all" else zoom), True
    if "selectedData" in props:
        box = window_from_selection(selection, origin, store["divisor"])
        if box is not None:
            state, asked = state.replace(window=box), True
            store = {**store, "dragmode": "select"}  # a box selection is made in select mode
    if "clickData" in props:
        points = (click or {}).get("points") or []
        ref = clicked_event(points[0] if points else None, origin)
        if ref is not None:
            state, asked = state.replace(ev=ref.text()), True
    return state, store, asked


def _values(state: view.State, values: dict[str, Any]) -> view.State:
    """The state with the controls' values, which are the truth for what they set (None: not sent)."""
    find = state.find if values["find"] is None else (values["find"].strip() or None)
    regex = state.regex if values["regex"] is None else bool(values["regex"])
    if (find, regex) != (state.find, state.regex):  # a new search: no match shown yet
        state = state.replace(find=find, regex=regex, hit=None)
    for key in ("colour", "flows"):
        if values[key] is not None and values[key] != getattr(state, key):
            state = state.replace(**{key: values[key]})
    for key in ("pin", "fold"):
        if values[key] is not None and tuple(values[key]) != getattr(state, key):
            state = state.replace(**{key: tuple(values[key])})
    return state


def _buttons(state: view.State, run: Run, pressed: dict[str, int]) -> view.State:
    """The state after the button presses not taken in yet (`pressed`: button -> presses)."""
    if pressed.get("timeline-window-clear") or pressed.get("timeline-reset"):
        state = state.replace(window=None)
    if pressed.get("timeline-clear-selection"):
        state = state.replace(sel=())
    if pressed.get("timeline-details-close"):
        state = state.replace(ev=None)
    if pressed.get("timeline-highlight", 0) % 2 and state.event is not None and state.event.kind == "kernel":
        pane = pane_of(run, state)
        if pane is not None:
            key = kernel_key(pane.name)
            state = state.replace(sel=tuple(k for k in state.sel if k != key) if key in state.sel
                                  else (*state.sel, key))
    # Next / previous / Enter, each as many times as pressed.
    steps = pressed.get("timeline-next", 0) + pressed.get("timeline-find-submit", 0) - pressed.get("timeline-prev", 0)
    for _ in range(abs(steps)):
        state = jump(run, state, 1 if steps > 0 else -1)
    return state


clientside_callback(
    # Relayouts the keys module made (assets/timeline-keys.js) are redrawn in the browser only; it sends
    # the settled window itself. Of the chart's other relayouts, those that ask for something (a new
    # x range, autorange, another drag mode) go on to the server; a resize (autosize) does not.
    r"""function(relayout) {
        const keys = window.dashboardTimeline;
        const asks = Object.keys(relayout || {}).some(function (key) {
            return /^xaxis2?\.(range|autorange)/.test(key) || key === "dragmode";
        });
        if (!asks || (keys && keys.ownRelayout(relayout))) { return window.dash_clientside.no_update; }
        return relayout;
    }""",
    Output("timeline-relayout", "data"), Input("timeline-graph", "relayoutData"), prevent_initial_call=True)

clientside_callback(
    # A new figure landed: if the keys moved the chart since they asked for it, keep the user's window.
    """function(figure) {
        if (window.dashboardTimeline) { window.dashboardTimeline.arrived(figure); }
        return window.dash_clientside.no_update;
    }""",
    Output("timeline-arrived", "data"), Input("timeline-graph", "figure"), prevent_initial_call=True)


@callback(
    Output("timeline-graph", "figure"),
    Output("timeline-state", "data"),
    Output({"type": URL_STATE, "page": "timeline"}, "data"),
    Output("timeline-status", "children"),
    Output("timeline-window-chip", "style"),
    Output("timeline-window-text", "children"),
    Output("timeline-clear-selection", "style"),
    Output("timeline-find-answer", "children"),
    Output("timeline-flows-note", "children"),
    Output("timeline-details-body", "children"),
    Output("timeline-details", "style"),
    Output("timeline-pin", "options"),
    Output("timeline-fold", "options"),
    Input("timeline-relayout", "data"),
    Input("timeline-graph", "selectedData"),
    Input("timeline-graph", "clickData"),
    Input("timeline-rank", "value"),
    Input("timeline-window-clear", "n_clicks"),
    Input("timeline-reset", "n_clicks"),
    Input("timeline-clear-selection", "n_clicks"),
    Input("timeline-find", "value"),
    Input("timeline-find", "n_submit"),
    Input("timeline-regex", "value"),
    Input("timeline-prev", "n_clicks"),
    Input("timeline-next", "n_clicks"),
    Input("timeline-colour", "value"),
    Input("timeline-flows", "value"),
    Input("timeline-pin", "value"),
    Input("timeline-fold", "value"),
    Input("timeline-details-close", "n_clicks"),
    Input("timeline-highlight", "n_clicks"),
    State("timeline-state", "data"),
    prevent_initial_call=True,
)
def update_timeline(relayout: dict | None, selection: dict | None, click: dict | None, rank_value: Any,
                    clear_window: int | None, reset: int | None, clear_selection: int | None, find: str | None,
                    submit: int | None, regex: bool | None, prev: int | None, next_: int | None, colour: str | None,
                    flows: str | None, pin: list[str] | None, fold: list[str] | None, close: int | None,
                    highlight: int | None, store: dict[str, Any]) -> tuple[Any, ...]:
    run = current_store().open(store["run"])
    drawn_state = view.State.from_query(store.get("query") or {}, run)
    rank = view.State.from_query({"rank": rank_value}, run).rank_shown
    old_dragmode = store.get("dragmode")
    props = {prop for prop in ctx.triggered_prop_ids if prop.startswith("timeline-")}
    presses = dict(zip(BUTTONS, (clear_window, reset, clear_selection, close, highlight, prev, next_, submit),
                       strict=True))
    taken = store.get("presses") or {}
    pressed = {button: (count or 0) - taken.get(button, 0) for button, count in presses.items()
               if (count or 0) > taken.get(button, 0)}
    # The rank and the controls' values are compared with what is drawn, not taken from the fired inputs
    # alone: the renderer drops the answer to a call that a newer call of this callback overtakes (a rank
    # picked while the chart's relayout event is on its way), and the newer call may name only that event.
    state = _values(drawn_state.replace(rank=ALL_RANKS if rank is None else rank),
                    {"find": find, "regex": regex, "colour": colour, "flows": flows, "pin": pin, "fold": fold})
    asked_something = rank != store.get("rank") or state != drawn_state.replace(
        rank=ALL_RANKS if rank is None else rank) or bool(pressed)
    state = _buttons(state, run, pressed)
    chart_props = {prop.rsplit(".", 1)[-1] for prop in props
                   if prop.startswith(("timeline-graph.", "timeline-relayout."))}
    chart_props = {"relayout" if prop == "data" else prop for prop in chart_props}
    if chart_props:
        state, store, asked_by_chart = _chart_events(chart_props, relayout, selection, click, store, state)
        asked_something = asked_something or asked_by_chart
    if not asked_something:
        if store.get("dragmode") != old_dragmode:
            return (no_update, store, *[no_update] * 11)
        raise PreventUpdate
    state = view.State.from_query(state.to_query(), run)  # checked against the run as a URL would be
    drawn = view.drawn(run, state)
    shown = view.shown(run, state)
    figure = drawn.figure
    if store.get("dragmode") in DRAG_MODES:  # the cached figure is shared: copy before changing it
        figure = {**figure, "layout": {**figure["layout"], "dragmode": store["dragmode"]}}
    pane = pane_of(run, shown)
    pin_options, fold_options = lane_options(view.lane_tracks(run, shown.rank_shown))
    taken = {**taken, **{button: count or 0 for button, count in presses.items() if count is not None}}
    return (figure, _store(run, shown, drawn, store.get("dragmode"), taken), shown.url_state(),
            view.status_text(drawn.view), {} if shown.window else {"display": "none"},
            window_label(shown.window, drawn.view.run_start_ns), {} if shown.sel else {"display": "none"},
            search_text(drawn.found, shown.hit), drawn.flows_note, pane_body(pane),
            {} if pane is not None else {"display": "none"},
            pin_options, fold_options)
