"""`/planner`: Triton warp-specialization memory planner: SMEM/TMEM liveness and channels.

URL state (views.planner.State): run, group (one kernel compile, or one plain
DOT graph), buffer (`SMEM-3` / `TMEM-0`: a selected buffer), op (a marked
operation id, or a node id for dumps without op ids), partition (filters the
channel graph).

Selecting a buffer (a timeline bar, a table row, a channel edge, a "live here"
button) highlights its channels and their ops in the graph; tapping an op marks
its id on both timelines and the live-memory charts and lists what is live
there; tapping a partition box (or the dropdown) filters the graph.

The callbacks are thin: they turn what was clicked into a new State, ask
`views.planner` what it means, and send small changes back: which graph
elements to highlight (applied in the browser, layouts.planner_scripts), the
charts' selection shapes (plotly Patches of `layout.shapes` only), grid
selections and the selection panel.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis import planner_view as analysis
from dashboard.layouts.grid_csv import register_grid_csv
from dashboard.layouts.page import run_page
from dashboard.layouts.planner import (
    DOT_GRAPH_ID,
    GRAPH_ID,
    LIVE_BUFFER_BUTTON,
    LIVE_IDS,
    TABLE_IDS,
    TIMELINE_IDS,
    group_body,
    selection_panel,
)
from dashboard.layouts.planner_graphviz import DETAILS_ID, PICKED_ID, details
from dashboard.layouts.planner_scripts import (
    APPLY_SELECTION_JS,
    EXPORT_STACK_JS,
    EXPORT_START_JS,
    TAP_JS,
    graph_png_js,
)
from dashboard.layouts.select import native_select, select_value
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run
from dashboard.views import planner as view

dash.register_page(__name__, path="/planner", name="Planner", order=5, title="Planner · dashboard")

PATH = "/planner"
EVIDENCE = "planner"
URL_STATE = {"type": "url-state", "page": "planner"}
CHART_NAMES = tuple(view.CHARTS)  # the order of the chart outputs of update_selection
Buffer = tuple[str, int]


@run_page("planner", "Planner", "Warp-specialization planner: SMEM/TMEM liveness and channels", EVIDENCE, PATH)
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, chosen)
    picker = html.Div([
        html.Small("Group", className="text-muted me-2"),
        native_select("planner-group", [{"label": choice.label, "value": choice.group}
                                        for choice in view.planner_data(chosen).choices],
                      state.group, min_width="520px"),
    ], className="d-flex align-items-center mb-2")
    return html.Div([
        header,
        dcc.Store(id="planner-run", data=chosen.id),
        url_state_store("planner", state.url_state()),
        picker,
        html.Div(group_body(chosen, state), id="planner-body"),
    ], id="planner-page")


@callback(
    Output("planner-body", "children"),
    Output(URL_STATE, "data", allow_duplicate=True),
    Input("planner-group", "value"),
    State("planner-run", "data"),
    prevent_initial_call=True,
)
def change_group(group: str | None, run_id: str) -> tuple[Any, dict[str, str]]:
    """A new group: redraw everything below the picker; the old selection belonged to the old group."""
    run = current_store().open(run_id)
    state = view.State(group=group).resolved(run)
    return group_body(run, state), state.url_state()


clientside_callback(TAP_JS, Output("planner-tap", "data"), Input(GRAPH_ID, "tapNode"), Input(GRAPH_ID, "tapEdge"),
                    prevent_initial_call=True)


def _clicked_buffer(memory: str, click: dict | None) -> Buffer | None:
    points = (click or {}).get("points") or []
    index = points[0].get("customdata") if points else None
    return (memory, int(index)) if isinstance(index, int | float) else None


def _clicked_op(click: dict | None) -> int | None:
    points = (click or {}).get("points") or []
    x = points[0].get("x") if points else None
    return int(x) if isinstance(x, int | float) else None


def _key_buffer(key: Any) -> Buffer | None:
    return view.State.from_query({"buffer": key}).buffer


def _toggle(current: Buffer | None, picked: Buffer | None) -> Buffer | None:
    return None if picked == current else picked


def _what_changed(run: Run, state: view.State, trigger: Any, partition_value: Any, tap: dict | None,
                  clicks: dict[str, Any], live_buttons: list[Any]) -> view.State:
    """The state after what the user just did; PreventUpdate when it changes nothing."""
    if trigger == "planner-partition":
        return state.replace(partition=view.State.from_query({"partition": partition_value}).partition)
    if trigger == "planner-clear":
        return state.replace(buffer=None, op=None)
    if trigger == "planner-tap":
        if not tap:
            raise PreventUpdate
        if tap.get("kind") == "edge":
            return state.replace(buffer=view.buffer_of_channel(run, state.group or "", int(tap["uid"])) or state.buffer)
        tapped_partition = view.partition_of_node(tap.get("id"))
        if tapped_partition is not None:  # a partition box: filter to it, or back to all on a second tap
            return state.replace(partition=None if tapped_partition == state.partition else tapped_partition)
        return state.replace(op=tap.get("op_id") if tap.get("op_id") is not None else tap.get("node"))
    for memory in view.MEMORIES:
        if trigger == TIMELINE_IDS[memory]:
            return state.replace(buffer=_toggle(state.buffer, _clicked_buffer(memory, clicks[trigger])))
        if trigger == LIVE_IDS[memory]:
            clicked = _clicked_op(clicks[trigger])
            return state.replace(op=clicked if clicked is not None else state.op)
        if trigger == TABLE_IDS[memory]:
            rows = clicks[trigger]
            picked = _key_buffer(rows[0].get("key")) if rows else None
            # The grids echo the selection this callback sets (and clears in the other grid).
            if picked == state.buffer or (picked is None and (state.buffer is None or state.buffer[0] != memory)):
                raise PreventUpdate
            return state.replace(buffer=picked)
    if isinstance(trigger, dict) and trigger.get("type") == LIVE_BUFFER_BUTTON:
        if not any(live_buttons or []):
            raise PreventUpdate  # buttons just drawn, not clicked
        return state.replace(buffer=_toggle(state.buffer, _key_buffer(trigger.get("key"))))
    raise PreventUpdate


def _shapes_patch(changes: dict[str, Any]) -> Patch:
    """Only `layout.shapes` changes: plotly redraws the shapes, not the bars (annotations would redraw axes)."""
    patch = Patch()
    patch["layout"]["shapes"] = changes["shapes"]
    return patch


@callback(
    Output(URL_STATE, "data"),
    Output("planner-partition", "value"),
    Output(GRAPH_ID, "elements"),
    Output("planner-graph-selection", "data"),
    *(Output(view.CHARTS[name], "figure") for name in CHART_NAMES),
    Output(TABLE_IDS["SMEM"], "selectedRows"),
    Output(TABLE_IDS["TMEM"], "selectedRows"),
    Output("planner-selection", "children"),
    Input("planner-partition", "value"),
    Input("planner-tap", "data"),
    Input(TIMELINE_IDS["SMEM"], "clickData"),
    Input(TIMELINE_IDS["TMEM"], "clickData"),
    Input(LIVE_IDS["SMEM"], "clickData"),
    Input(LIVE_IDS["TMEM"], "clickData"),
    Input(TABLE_IDS["SMEM"], "selectedRows"),
    Input(TABLE_IDS["TMEM"], "selectedRows"),
    Input("planner-clear", "n_clicks"),
    Input({"type": LIVE_BUFFER_BUTTON, "key": ALL}, "n_clicks"),
    State(URL_STATE, "data"),
    State("planner-run", "data"),
    prevent_initial_call=True,
)
def update_selection(partition_value: Any, tap: dict | None, smem_click: dict | None, tmem_click: dict | None,
                     smem_live_click: dict | None, tmem_live_click: dict | None, smem_rows: list[dict] | None,
                     tmem_rows: list[dict] | None, _clear: Any, live_buttons: list[Any], stored: dict | None,
                     run_id: str) -> tuple[Any, ...]:
    before = view.State.from_query(stored)  # the store holds a state the layout already checked
    if not before.group:
        raise PreventUpdate
    run = current_store().open(run_id)
    clicks = {TIMELINE_IDS["SMEM"]: smem_click, TIMELINE_IDS["TMEM"]: tmem_click,
              LIVE_IDS["SMEM"]: smem_live_click, LIVE_IDS["TMEM"]: tmem_live_click,
              TABLE_IDS["SMEM"]: smem_rows, TABLE_IDS["TMEM"]: tmem_rows}
    # Every input of a merged call is applied in turn (Dash merges changes made while a call is queued).
    # The partition control comes first whenever it differs from the state, fired or not: the renderer
    # drops the answer to a call that a newer call overtakes, and the newer call may name only a click.
    triggers = [trigger for trigger in ctx.triggered_prop_ids.values() if trigger != "planner-partition"]
    if view.State.from_query({"partition": partition_value}).partition != before.partition:
        triggers.insert(0, "planner-partition")
    state = before
    applied: list[Any] = []
    for trigger in triggers:
        try:
            state = _what_changed(run, state, trigger, partition_value, tap, clicks, live_buttons)
        except PreventUpdate:
            continue
        applied.append(trigger)
    if not applied:
        raise PreventUpdate
    selection = view.selection_view(run, state)
    if state.buffer and selection.buffer is None:
        state = state.replace(buffer=None)
    filtered = state.partition != before.partition
    elements = view.graph_elements(run, state.group, state.partition) if filtered else no_update
    figures: list[Any] = [no_update] * len(CHART_NAMES)
    graph: Any = no_update
    if not filtered:
        graph = selection.graph
        # Only charts whose marks moved are patched: every figure update re-plots the whole chart.
        old = view.chart_marks(run, state.group or "", view.selection_view(run, before))
        new = view.chart_marks(run, state.group or "", selection)
        figures = [_shapes_patch(new[name]) if name in new and new[name] != old.get(name) else no_update
                   for name in CHART_NAMES]
    tables: list[Any] = [no_update, no_update]
    if state.buffer != before.buffer:
        new_key = analysis.buffer_key(*state.buffer) if state.buffer else None
        for position, memory in enumerate(view.MEMORIES):
            if TABLE_IDS[memory] not in applied:
                # An empty list (not {"ids": []}) is what makes a grid let go of its selection.
                tables[position] = {"ids": [new_key]} if state.buffer and state.buffer[0] == memory else []
    partition_output = select_value(state.partition) if "planner-tap" in applied and filtered else no_update
    return (state.url_state(), partition_output, elements, graph, *figures, *tables, selection_panel(selection))


clientside_callback(APPLY_SELECTION_JS, Output("planner-graph-applied", "data"),
                    Input("planner-graph-selection", "data"), Input(GRAPH_ID, "elements"))

for _grid, _button in ((TABLE_IDS["SMEM"], "planner-smem-csv"), (TABLE_IDS["TMEM"], "planner-tmem-csv"),
                       ("planner-channel-table", "planner-channel-csv"),
                       ("planner-partition-table", "planner-partition-csv")):
    register_grid_csv(_button, _grid, f"{_button}-download")

for _graph, _button, _suffix in ((GRAPH_ID, "planner-graph-png", "channel-graph"),
                                (DOT_GRAPH_ID, "planner-dot-png", "graph")):
    clientside_callback(graph_png_js(_graph, _suffix), Output(_graph, "generateImage"), Input(_button, "n_clicks"),
                        State("planner-file-stem", "data"), prevent_initial_call=True)

clientside_callback(
    EXPORT_START_JS,
    Output(GRAPH_ID, "generateImage", allow_duplicate=True),
    Output(GRAPH_ID, "imageData"),  # cleared first, so an unchanged graph still reports its new image
    Output("planner-export-pending", "data"),
    Output("planner-export-status", "children"),
    Input("planner-export-all", "n_clicks"),
    prevent_initial_call=True,
)
clientside_callback(
    EXPORT_STACK_JS,
    Output("planner-export-status", "children", allow_duplicate=True),
    Output("planner-export-pending", "data", allow_duplicate=True),
    Input(GRAPH_ID, "imageData"),
    State("planner-export-pending", "data"),
    State("planner-file-stem", "data"),
    prevent_initial_call=True,
)


@callback(
    Output(DETAILS_ID, "children"),
    Input(PICKED_ID, "data"),
    State("planner-dot-group", "data"),
    prevent_initial_call=True,
)
def show_picked(picked: dict | None, where: dict | None) -> list[Any]:
    """A node, cluster or edge clicked in a Graphviz drawing: its attributes."""
    if not picked or not where or not isinstance(picked.get("name"), str):
        raise PreventUpdate
    run = current_store().open(where["run"])
    kind = picked.get("kind") if picked.get("kind") in ("node", "cluster", "edge") else "node"
    return details(view.picked_details(run, where["group"], kind, picked["name"]), kind, picked["name"])
