"""Callbacks of `/memory`: cross-filtering, the infinite-scroll table, CSV download.

Thin: the event becomes a new `ViewState` (`memory_events.after_event`), and only
the parts that depend on what changed are sent back (the curves as a Patch).
"""

from __future__ import annotations

import json
from typing import Any

from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis import memory_events as events
from dashboard.analysis import memory_view as view
from dashboard.analysis.memory_view import MemoryData, ViewState
from dashboard.pages.memory_parts import (
    CURVES_ID,
    GROWTH_ID,
    PEAK_BUTTON,
    TABLE_ID,
    curves_figure,
    curves_patch,
    detail_panel,
    growth_figure,
    memory_data,
    peak_cards,
    selected_row_style,
    stats_panel,
    table_columns,
)

URL_STATE = {"type": "url-state", "page": "memory"}
_EVENTS = {
    f"{CURVES_ID}.selectedData": "select", f"{CURVES_ID}.relayoutData": "relayout",
    f"{CURVES_ID}.clickData": "click", f"{GROWTH_ID}.clickData": "growth", f"{TABLE_ID}.cellClicked": "cell",
    "memory-optype.value": "optype", "memory-program.value": "program", "memory-unit.value": "unit",
    "memory-peaks.value": "peaks", "memory-range-clear.n_clicks": "clear-range",
    "memory-op-clear.n_clicks": "clear-op",
}


CONTROL_KINDS = ("optype", "program", "unit", "peaks")  # the inputs at positions CONTROL_ARGS below
CONTROL_ARGS = slice(5, 9)


def _events() -> list[tuple[str, Any]]:
    """(kind, payload) of every input that fired, in order; a peak card's button gives its buffer type.

    Dash merges changes made while a call is queued into one call (a unit picked while the
    chart's relayout event is on its way): each of them is applied, not only the first.
    """
    fired: list[tuple[str, Any]] = []
    for trigger in ctx.triggered:
        prop_id = str(trigger.get("prop_id"))
        component = prop_id.rsplit(".", 1)[0]
        if component.startswith("{"):
            button = json.loads(component)
            if button.get("type") == PEAK_BUTTON and trigger.get("value"):  # not just the cards redrawn
                fired.append(("peak", button.get("bt")))
        elif (kind := _EVENTS.get(prop_id)) is not None:
            fired.append((kind, trigger.get("value")))
    return fired


def _curves(data: MemoryData, state: ViewState, before: ViewState, run_id: str, kinds: frozenset[str],
            version: int) -> Any:
    if (state.unit, state.peaks) != (before.unit, before.peaks):
        return curves_figure(data, state, run_id)
    # A zoom cleared by a button (not by the chart itself) must reset the chart's axes too.
    reset = before.zoom is not None and state.zoom is None and "relayout" not in kinds
    return curves_patch(data, state, before, run_id, reset_token=f"reset-{version}" if reset else None)


def _changed(state: ViewState, before: ViewState, *fields: str) -> bool:
    return any(getattr(state, name) != getattr(before, name) for name in fields)


@callback(
    Output(CURVES_ID, "figure"),
    Output(GROWTH_ID, "figure"),
    Output("memory-stats", "children"),
    Output("memory-detail", "children"),
    Output("memory-peak-cards", "children"),
    Output("memory-view", "data"),
    Output(URL_STATE, "data"),
    Output("memory-range-chip", "style"),
    Output("memory-range-text", "children"),
    Output("memory-table-count", "children"),
    Output("memory-table-version", "data"),
    Output(TABLE_ID, "columnDefs"),
    Output(TABLE_ID, "getRowStyle"),
    Output("memory-optype", "value"),
    Input(CURVES_ID, "selectedData"),
    Input(CURVES_ID, "relayoutData"),
    Input(CURVES_ID, "clickData"),
    Input(GROWTH_ID, "clickData"),
    Input(TABLE_ID, "cellClicked"),
    Input("memory-optype", "value"),
    Input("memory-program", "value"),
    Input("memory-unit", "value"),
    Input("memory-peaks", "value"),
    Input("memory-range-clear", "n_clicks"),
    Input("memory-op-clear", "n_clicks"),
    Input({"type": PEAK_BUTTON, "bt": ALL}, "n_clicks"),
    State("memory-view", "data"),
    State("memory-table-version", "data"),
    State("memory-run", "data"),
    prevent_initial_call=True,
)
def update_memory(*args: Any) -> tuple[Any, ...]:
    stored, version, run = args[-3:]
    data = memory_data(run["run"], run["rank"])
    before = state = view.parse_state(stored or {}, data)
    kinds: set[str] = set()
    # The controls' values first, fired or not: the renderer drops the answer to a call that a newer
    # call of this callback overtakes, and that newer call may name only a chart event.
    controls = list(zip(CONTROL_KINDS, args[CONTROL_ARGS], strict=True))
    for kind, payload in controls + [event for event in _events() if event[0] not in CONTROL_KINDS]:
        after = events.after_event(data, state, kind, payload)
        if after is not None and after != state:
            state = after
            kinds.add(kind)
    if state == before:
        raise PreventUpdate
    return respond(data, before, state, frozenset(kinds), run["run"], version or 0)


def respond(data: MemoryData, before: ViewState, state: ViewState, kinds: frozenset[str], run_id: str,
            version: int) -> tuple[Any, ...]:
    """The outputs of `update_memory` for a state change: only what depends on what changed."""
    per_unit = _changed(state, before, "unit")
    table_changed = _changed(state, before, "ops", "optypes", "programs", "unit")
    return (
        _curves(data, state, before, run_id, kinds, version),
        growth_figure(data, state) if _changed(state, before, "ops", "programs", "op", "unit") else no_update,
        stats_panel(data, state) if _changed(state, before, "ops", "unit") else no_update,
        detail_panel(data, state) if _changed(state, before, "op", "unit") else no_update,
        peak_cards(data, state) if _changed(state, before, "unit", "peaks") else no_update,
        state.store(),
        state.url(),
        {} if state.ops else {"display": "none"},
        f"ops {state.ops[0]:,}–{state.ops[1]:,}" if state.ops else "",
        view.describe(state, view.table_for(data, state).height) if table_changed else no_update,
        version + 1 if table_changed else no_update,
        table_columns(data, state.unit) if per_unit else no_update,
        selected_row_style(state.op) if _changed(state, before, "op") else no_update,
        list(state.optypes) if "growth" in kinds and _changed(state, before, "optypes") else no_update,
    )


@callback(
    Output(TABLE_ID, "getRowsResponse"),
    Input(TABLE_ID, "getRowsRequest"),
    State("memory-view", "data"),
    State("memory-run", "data"),
)
def table_rows(request: dict | None, stored: dict | None, run: dict) -> dict[str, Any]:
    """One block of the ops table, in the order the grid asks for."""
    if not request:
        raise PreventUpdate
    data = memory_data(run["run"], run["rank"])
    return rows_response(data, view.parse_state(stored or {}, data), request)


def rows_response(data: MemoryData, state: ViewState, request: dict[str, Any]) -> dict[str, Any]:
    frame = view.table_for(data, state, view.sort_key(request.get("sortModel")))
    return {"rowData": view.table_block(frame, request.get("startRow"), request.get("endRow")),
            "rowCount": frame.height}


# A new filter: drop the grid's loaded blocks, so it asks again (and reads the new view state).
clientside_callback(
    """
    function(version) {
        if (version && window.dash_ag_grid) {
            dash_ag_grid.getApiAsync("memory-table").then(function(api) { api.purgeInfiniteCache(); });
        }
        return dash_clientside.no_update;
    }
    """,
    Output("memory-table-purged", "data"),
    Input("memory-table-version", "data"),
    prevent_initial_call=True,
)


@callback(
    Output("memory-csv-download", "data"),
    Input("memory-csv", "n_clicks"),
    State("memory-view", "data"),
    State("memory-run", "data"),
    prevent_initial_call=True,
)
def download_csv(_clicks: Any, stored: dict | None, run: dict) -> dict[str, Any]:
    """Every op of the current table (not only the loaded blocks), sizes in bytes."""
    data = memory_data(run["run"], run["rank"])
    state = view.parse_state(stored or {}, data)
    suffix = f"-ops-{view.format_range(state.ops)}" if state.ops else ""
    return {"content": view.table_csv(view.table_for(data, state), state.per_bank),
            "filename": f"{run['run']}-memory{suffix}.csv", "type": "text/csv"}

