"""`/memory`: Device memory per operation: DRAM, L1, L1_SMALL, TRACE.

Runs with CUDA allocator memory (and no Tenstorrent memory) get the view of
`memory_cuda` instead, with its own URL state (views.memory_cuda).

URL state (views.memory.State): run, rank, ops (`a-b`: a brushed op range;
filters the table, statistics and growth bars), op (the clicked op: its detail
and a line on every track), optype (comma-separated op types: highlighted on
every track, filter the table), program (comma-separated: filter the table and
growth bars), unit (`device` for device totals; per bank by default), peaks
(`profiler` for the profiler's view of the peaks; the true peak by default).

Callbacks are thin: an event becomes a new State (`views.memory_events`), and
only the parts that depend on what changed are sent back (the curves as a
Patch of `views.memory_curves.curves_changes`).
"""

from __future__ import annotations

import json
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.layouts import memory_cuda
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.memory import (
    CURVES_ID,
    GROWTH_ID,
    PEAK_BUTTON,
    TABLE_ID,
    detail_panel,
    dropdown,
    granularity_note,
    ops_table,
    peak_cards,
    radio,
    stats_panel,
)
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.select import multi_picker_summary
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run
from dashboard.views import memory as view
from dashboard.views import memory_curves
from dashboard.views import memory_data as analysis
from dashboard.views import memory_events as events

dash.register_page(__name__, path="/memory", name="Memory", order=4, title="Memory · dashboard")

PATH = "/memory"
EVIDENCE = "memory"
URL_STATE = {"type": "url-state", "page": "memory"}
OPTYPE_PLACEHOLDER, PROGRAM_PLACEHOLDER = "highlight op types…", "all programs"
multi_picker_summary("memory-optype", OPTYPE_PLACEHOLDER)
multi_picker_summary("memory-program", PROGRAM_PLACEHOLDER)
PEAK_HELP = ("True peak: the highest of all snapshots, including the ones taken just before deallocate and "
             "get_device ops. Memory stays held until a deallocate runs, so this is the real high-water mark. "
             "Profiler's view: the memory profiler's JSON leaves those ops out, so its peak skips their "
             "snapshots; it can only be lower, and its culprit is the previous op it kept.")
_EVENTS = {
    f"{CURVES_ID}.selectedData": "select", f"{CURVES_ID}.relayoutData": "relayout",
    f"{CURVES_ID}.clickData": "click", f"{GROWTH_ID}.clickData": "growth", f"{TABLE_ID}.cellClicked": "cell",
    "memory-optype.value": "optype", "memory-program.value": "program", "memory-unit.value": "unit",
    "memory-peaks.value": "peaks", "memory-range-clear.n_clicks": "clear-range",
    "memory-op-clear.n_clicks": "clear-op",
}
CONTROL_KINDS = ("optype", "program", "unit", "peaks")  # the inputs at positions CONTROL_ARGS below
CONTROL_ARGS = slice(5, 9)


def layout(run: str | None = None, **query: Any) -> html.Div:
    cuda = memory_cuda.cuda_run(run)  # CUDA allocator memory: its own view, picked by the run's evidence
    if cuda is not None:
        return memory_cuda.layout(cuda, query)
    return tenstorrent_layout(run, **query)


@run_page("memory", "Memory", "Device memory per operation: DRAM, L1, L1_SMALL, TRACE", EVIDENCE, PATH)
def tenstorrent_layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, chosen)
    data = view.data_for(chosen, state)
    figures = view.page_figures(chosen, state)
    if not figures:
        return html.Div([header, dbc.Alert(
            f"Run “{chosen.id}” has memory snapshots, but no buffer type has any capacity (every "
            "MemoryView reported 0 bytes per bank): there is nothing to draw.", color="info")], id="memory-page")
    controls = html.Div([
        radio("memory-unit", "Sizes", analysis.UNITS, state.unit),
        radio("memory-peaks", "Peaks", analysis.PEAK_VIEWS, state.peaks, PEAK_HELP),
        dropdown("memory-optype", "Op type", data.op_types, state.optypes, OPTYPE_PLACEHOLDER, "260px"),
        dropdown("memory-program", "Program", data.programs, state.programs, PROGRAM_PLACEHOLDER, "200px"),
        html.Div([
            dbc.Badge(id="memory-range-text", color="warning", text_color="dark", className="me-1"),
            dbc.Button("clear", id="memory-range-clear", size="sm", color="link", className="p-0"),
        ], id="memory-range-chip", className="d-flex align-items-center me-3",
            style={} if state.ops else {"display": "none"}),
        dbc.Button("clear op", id="memory-op-clear", size="sm", color="secondary", outline=True),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    hint = html.Small(
        "Drag across the curves to brush an op range (it filters the table, statistics and growth bars); use the "
        "zoom tool to zoom in at full detail, double-click to reset. Click a point, a bar or a row to open an op. "
        "Grey bands: const-eval programs (weights prepared on the device).", className="text-muted d-block mb-2")
    hint = granularity_note(chosen) or hint
    return html.Div([
        header,
        dcc.Store(id="memory-run", data=chosen.id),
        dcc.Store(id="memory-view", data=state.store()),
        dcc.Store(id="memory-table-version", data=0),
        dcc.Store(id="memory-table-purged"),
        dcc.Download(id="memory-csv-download"),
        url_state_store("memory", state.url_state()),
        controls,
        hint,
        dbc.Row(peak_cards(data, state), id="memory-peak-cards", className="g-2 mb-1"),
        html.Div(chart(CURVES_ID, figures["memory-curves"], f"{chosen.id}-memory-curves"), className="chart-card"),
        dbc.Row([
            dbc.Col(html.Div(chart(GROWTH_ID, figures["top-growth"], f"{chosen.id}-memory-growth"),
                             className="chart-card"), lg=6),
            dbc.Col([
                html.Div(stats_panel(data, state), id="memory-stats", className="chart-card p-3"),
                html.Div(detail_panel(data, state), id="memory-detail", className="chart-card p-3"),
            ], lg=6),
        ], className="g-3"),
        html.Div([
            html.Div([
                html.H6("Ops", className="mb-0 me-3"),
                html.Small(view.table_text(chosen, state), id="memory-table-count", className="text-muted me-3"),
                dbc.Button("Download CSV", id="memory-csv", size="sm", color="primary", outline=True),
                html.Small("Δ: what the op left behind (the next snapshot minus its own). Click a header to "
                           "sort; deallocate / get_device ops are not listed.", className="text-muted ms-3"),
            ], className="d-flex align-items-center flex-wrap mb-2"),
            AfterCharts(ops_table(data, state), min_height=420),  # drawn after the curves
        ], className="chart-card"),
    ], id="memory-page")


# ---- callbacks ----------------------------------------------------------------------------------

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


def _patch(changes: list[memory_curves.Change]) -> Patch:
    patch = Patch()
    for path, value in changes:
        target = patch
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return patch


def _curves(run: Any, state: view.State, before: view.State, kinds: frozenset[str], version: int) -> Any:
    if (state.unit, state.peaks) != (before.unit, before.peaks):
        return view.curves_figure(run, state)
    # A zoom cleared by a button (not by the chart itself) must reset the chart's axes too.
    reset = before.zoom is not None and state.zoom is None and "relayout" not in kinds
    return _patch(memory_curves.curves_changes(view.data_for(run, state), view.base_for(run, state), state, before,
                                               reset_token=f"reset-{version}" if reset else None))


def _changed(state: view.State, before: view.State, *fields: str) -> bool:
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
    stored, version, run_id = args[-3:]
    run = current_store().open(run_id)
    before = state = view.State.from_store(stored, run)
    data = view.data_for(run, state)
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
    return respond(run, before, state, frozenset(kinds), version or 0)


def respond(run: Any, before: view.State, state: view.State, kinds: frozenset[str], version: int) -> tuple[Any, ...]:
    """The outputs of `update_memory` for a state change: only what depends on what changed."""
    data = view.data_for(run, state)
    per_unit = _changed(state, before, "unit")
    table_changed = _changed(state, before, "ops", "optypes", "programs", "unit")
    return (
        _curves(run, state, before, kinds, version),
        view.growth_figure(run, state) if _changed(state, before, "ops", "programs", "op", "unit") else no_update,
        stats_panel(data, state) if _changed(state, before, "ops", "unit") else no_update,
        detail_panel(data, state) if _changed(state, before, "op", "unit") else no_update,
        peak_cards(data, state) if _changed(state, before, "unit", "peaks") else no_update,
        state.store(),
        state.url_state(),
        {} if state.ops else {"display": "none"},
        f"ops {state.ops[0]:,}–{state.ops[1]:,}" if state.ops else "",
        view.table_text(run, state) if table_changed else no_update,
        version + 1 if table_changed else no_update,
        view.table_columns(data, state.unit) if per_unit else no_update,
        view.selected_row_style(state.op) if _changed(state, before, "op") else no_update,
        list(state.optypes) if "growth" in kinds and _changed(state, before, "optypes") else no_update,
    )


@callback(
    Output(TABLE_ID, "getRowsResponse"),
    Input(TABLE_ID, "getRowsRequest"),
    State("memory-view", "data"),
    State("memory-run", "data"),
)
def table_rows(request: dict | None, stored: dict | None, run_id: str) -> dict[str, Any]:
    """One block of the ops table, in the order the grid asks for."""
    if not request:
        raise PreventUpdate
    run = current_store().open(run_id)
    return view.rows_block(run, view.State.from_store(stored, run), request)


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
def download_csv(_clicks: Any, stored: dict | None, run_id: str) -> dict[str, Any]:
    """Every op of the current table (not only the loaded blocks), sizes in bytes."""
    run = current_store().open(run_id)
    content, filename = view.table_csv(run, view.State.from_store(stored, run))
    return {"content": content, "filename": filename, "type": "text/csv"}
