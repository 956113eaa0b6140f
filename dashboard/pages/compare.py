"""`/compare`: where kernel time moved between two runs, or two ranks of one run (state and charts:
views/compare.py). A and B may be any two runs sharing an evidence kind: the kernel charts show when both
have kernels, then a section per other shared kind (passes and GPU busy, device memory, CUDA memory,
planner, compiler; layouts/compare_sections).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard.figures.compare import layer_from_click
from dashboard.figures.kernels import keys_from_event
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.compare_compiler import compiler_body
from dashboard.layouts.compare_sections import more_sections, planner_body
from dashboard.layouts.controls import kernel_table, rank_control
from dashboard.layouts.grid_csv import csv_download, register_grid_csv
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.select import native_select, select_options, select_value
from dashboard.layouts.server_state import current_store, fired_ids
from dashboard.layouts.shell import PAGES_LOCATION, url_state_store
from dashboard.schema import EVIDENCE_LABELS
from dashboard.store import RunNotFound
from dashboard.views import compare as view
from dashboard.views import compare_sides as view_sides
from dashboard.views import run_views
from dashboard.views.compare_sides import CompareView, compare_view
from dashboard.views.kernel_table import NUMBER_FORMAT, csv_columns
from dashboard.views.params import ALL_RANKS, parse_rank

dash.register_page(__name__, path="/compare", name="Compare", order=7, title="Compare · dashboard")

PATH = "/compare"
EVIDENCE = "kernels"
URL_STATE = {"type": "url-state", "page": "compare"}
# What picks the two sides (A's rank, B's run and rank), and what a section callback reads of the drawn sides.
SIDE_INPUTS = [Input(f"compare-{name}", "value") for name in ("rank", "other", "other-rank")]
SIDES_DRAWN = [State("compare-run", "data"), State("compare-other", "value"), State(URL_STATE, "data")]
_NUMBER = {"type": "numericColumn", "filter": "agNumberColumnFilter", "minWidth": 120,
           "valueFormatter": NUMBER_FORMAT}


def column_defs(unit: str) -> list[dict]:
    return [
        {"field": "label", "headerName": "Kernel", "tooltipField": "group", "pinned": "left", "minWidth": 300,
         "filter": "agTextColumnFilter"},
        {"field": "delta", "headerName": f"B − A ({unit})", **_NUMBER},
        {"field": "ratio", "headerName": "B / A", **_NUMBER},
        {"field": "total_a", "headerName": f"A total ({unit})", **_NUMBER},
        {"field": "total_b", "headerName": f"B total ({unit})", **_NUMBER},
        {"field": "count_a", "headerName": "A launches", **_NUMBER},
        {"field": "count_b", "headerName": "B launches", **_NUMBER},
        {"field": "presence", "headerName": "found", "filter": "agTextColumnFilter"},
        {"field": "match", "headerName": "renamed: matched by", "tooltipField": "renamed_from", "minWidth": 260,
         "filter": "agTextColumnFilter"},
        {"field": "renamed_from", "headerName": "name in A (renamed)", "tooltipField": "renamed_from",
         "minWidth": 320, "filter": "agTextColumnFilter"},
        {"field": "group", "headerName": "full name", "tooltipField": "group", "minWidth": 480,
         "filter": "agTextColumnFilter"},
    ]


def _other_options(a_run: Any, current: str | None = None) -> list[dict[str, Any]]:
    """B's picker: the runs sharing an evidence kind with A, under a (disabled) heading per kind, newest first
    (`current`, the B shown, always among them: a dropdown drops a value it does not list)."""
    options: list[dict[str, Any]] = []
    for choice in view_sides.b_choices(current_store(), a_run, current):
        heading = f"── {EVIDENCE_LABELS.get(choice.kind, choice.kind)} ──"
        if not options or options[-1].get("group") != choice.kind:
            options.append({"label": heading, "value": f"kind:{choice.kind}", "disabled": True,
                            "group": choice.kind})
        options.append({"label": choice.label, "value": choice.run_id, "title": choice.run_id, "group": choice.kind})
    return [{key: value for key, value in option.items() if key != "group"} for option in options]


def _ask_for_b(chosen: Any, header: Any) -> html.Div:
    """No B in the URL and none to take by default (no other rank, no earlier run of this name): the picker
    and a line saying why nothing is compared yet. Picking a run loads the page for A and it."""
    options = _other_options(chosen)
    message = (f"Choose the run to compare with (B). No earlier run is named “{chosen.info.name}” and this run has "
               "one rank, so nothing is compared until you pick one." if options else
               "Nothing to compare with: no other run shares this run's evidence, and it has one rank. Ingest a "
               "second run (or a multi-rank trace) on the Runs page.")
    return html.Div([
        header, dcc.Store(id="compare-run", data=chosen.id),
        html.Div([html.Span("A (baseline)", className="fw-semibold me-2"), html.Span(chosen.id, className="me-4"),
                  html.Span("B", className="fw-semibold me-2"),
                  native_select("compare-pick-other", options, None, placeholder="Choose B…", min_width="420px")],
                 className="d-flex flex-wrap align-items-center gap-1 mb-2"),
        dbc.Alert(message, color="info", id="compare-choose-b", className="missing-evidence"),
    ], id="compare-page")


def _resolve_a(run_id: str | None) -> tuple[Any, Any]:
    """A: the URL's run whatever evidence it has (memory or planner runs compare too), else the newest with kernels."""
    if run_id:
        try:
            return current_store().open(run_id), None
        except RunNotFound:
            pass
    return resolve_run(run_id, EVIDENCE, PATH)


def _kernel_style(store: Any, a: Any, b: Any) -> dict[str, str]:
    return {} if view.both_have_kernels(store, a, b) else {"display": "none"}


def _controls_style(kernel_style: dict[str, str]) -> dict[str, str]:
    return kernel_style or {"display": "flex", "alignItems": "center"}


def _sections(store: Any, a: Any, b: Any, groups: tuple[Any, Any] = (None, None),
              compiles: tuple[Any, Any, Any] = (None, None, None)) -> list[Any]:
    return more_sections(store.open(a.run_id), store.open(b.run_id), a, b, groups, compiles)


def _other_rank_options(run_id: str) -> list[dict[str, str]]:
    ranks = run_views.kernel_ranks(current_store().open(run_id))
    return [{"label": "all ranks", "value": ALL_RANKS}] + [{"label": f"rank {r}", "value": str(r)} for r in ranks]


def _url_state(compared: CompareView, state: view.State) -> dict[str, Any]:
    """The URL state with the sides as chosen (B filled in when the URL left it to the defaults)."""
    return state.replace(rank=compared.a.rank, other=compared.b.run_id, other_rank=compared.b.rank).url_state()


def _picked_sides(state: view.State, run: Any, rank_value: Any, other: Any, other_rank: Any,
                  fired: frozenset[str]) -> view.State:
    """`state` with the sides the controls pick: A's rank, B's run and B's rank."""
    return state.replace(
        rank=parse_rank(rank_value, run_views.kernel_ranks(run)), other=other if isinstance(other, str) else None,
        # A new B run starts at all of its ranks; a rank of the old run may not exist there.
        other_rank=None if "compare-other" in fired else view.State.from_query({"other_rank": other_rank}).other_rank)


def render(compared: CompareView, state: view.State) -> dict[str, Any]:
    rows, unit = view.table_rows(compared)
    return {**view.page_kernel_figures(current_store(), compared, state), "rows": rows, "columns": column_defs(unit),
            "summary": view.summary_text(compared), "sides": f"A = {compared.a.label}   ·   B = {compared.b.label}"}


def layout(run: str | None = None, **query: Any) -> html.Div:
    chosen, notice = _resolve_a(run)
    header = page_header("Compare", chosen, "Where time and memory moved between two runs, or two ranks of one run")
    if chosen is None:
        return html.Div([header, notice], id="compare-page")
    store = current_store()
    ranks = run_views.kernel_ranks(chosen)
    state = view.State.from_query(query, chosen)
    sides = view.sides(store, chosen, state)
    if sides is None:
        return _ask_for_b(chosen, header)
    compared = compare_view(store, *sides)
    a, b = sides
    shown = render(compared, state)
    top_choices = sorted({*view.TOP_CHOICES, state.top})
    controls = html.Div([
        html.Span("A (baseline)", className="fw-semibold me-2"),
        rank_control("compare-rank", ranks, a.rank),
        html.Span("B", className="fw-semibold me-2"),
        native_select("compare-other", _other_options(chosen, b.run_id), b.run_id, min_width="420px",
                      class_name="me-2"),
        native_select("compare-other-rank", _other_rank_options(b.run_id), ALL_RANKS if b.rank is None else str(b.rank),
                      min_width="130px", class_name="me-4"),
        html.Div([  # kernel chart controls: hidden with the kernel charts when a side has no kernels
            native_select("compare-top", [{"label": f"top {n}", "value": n} for n in top_choices], state.top,
                          min_width="110px", class_name="me-3"),
            dbc.Button("clear selection", id="compare-clear-selection", size="sm", color="secondary", outline=True),
        ], id="compare-kernel-controls", style=_controls_style(_kernel_style(store, a, b))),
    ], className="d-flex flex-wrap align-items-center gap-1 mb-2")
    return html.Div([
        header,
        dcc.Store(id="compare-run", data=chosen.id),
        dcc.Store(id="compare-sel", data=list(state.sel)),
        dcc.Store(id="compare-layer", data=list(state.chosen_layer) if state.chosen_layer else None),
        url_state_store("compare", _url_state(compared, state)),
        controls,
        html.Div(shown["sides"], id="compare-sides", className="small mb-1"),
        html.Div([
            html.Div(shown["summary"], id="compare-summary", className="small text-muted mb-2"),
            dbc.Row([
                dbc.Col(html.Div(chart("compare-delta", shown["compare-delta"], f"{chosen.id}-compare-delta"),
                                 className="chart-card"), lg=7),
                dbc.Col(html.Div(chart("compare-scatter", shown["compare-scatter"], f"{chosen.id}-compare-scatter"),
                                 className="chart-card"), lg=5),
            ], className="g-3"),
        ], id="compare-kernel-section", style=_kernel_style(store, a, b)),
        # Passes, busy, memory, planner between the kernel headline charts and the per-layer / per-kernel detail.
        html.Div(_sections(store, a, b, (state.group, state.other_group),
                           (state.compile_a, state.compile_b, state.ir_pass)), id="compare-more"),
        html.Div([
            html.Div(chart("compare-layers", shown["compare-layers"], f"{chosen.id}-compare-layers"),
                     className="chart-card"),
            html.Div([
                html.Div([html.H6("Every kernel, largest change first", className="mb-0 me-3"),
                          dbc.Button("Download CSV", id="compare-csv", size="sm", color="primary", outline=True),
                          csv_download("compare-csv-download")],
                         className="d-flex align-items-center mb-2"),
                AfterCharts(kernel_table("compare-table", shown["rows"], shown["columns"], f"{chosen.id}-compare",
                                         selectable=False), min_height=420),
            ], className="chart-card"),
        ], id="compare-kernel-detail", style=_kernel_style(store, a, b)),
    ], id="compare-page")


@callback(
    Output("compare-delta", "figure"),
    Output("compare-scatter", "figure"),
    Output("compare-table", "rowData"),
    Output("compare-table", "columnDefs"),
    Output("compare-summary", "children"),
    Output("compare-sides", "children"),
    Output("compare-other-rank", "options"),
    Output("compare-other-rank", "value"),
    Output("compare-sel", "data"),
    Output("compare-layers", "figure"),
    Output("compare-layer", "data"),
    Output(URL_STATE, "data"),
    *SIDE_INPUTS, Input("compare-top", "value"),
    Input("compare-delta", "clickData"), Input("compare-scatter", "selectedData"),
    Input("compare-clear-selection", "n_clicks"), Input("compare-layers", "clickData"),
    *[State(f"compare-{name}", "data") for name in ("sel", "layer", "run")], State(URL_STATE, "data"),
    prevent_initial_call=True,
)
def update_compare(rank_value: Any, other: Any, other_rank: Any, top_value: Any, bar_click: dict | None,
                   scatter_selection: dict | None, _clear: Any, layer_click: dict | None,
                   selected: list[str] | None, layer_value: list[str] | None, run_id: str,
                   url_state: dict | None) -> tuple[Any, ...]:
    store = current_store()
    run = store.open(run_id)
    fired = fired_ids()
    layer = tuple(layer_value) if layer_value else None
    state = _picked_sides(view.State.from_query(url_state or {}), run, rank_value, other, other_rank, fired).replace(
        top=view.State.from_query({"top": top_value}).top, sel=tuple(selected or ()),
        layer=layer[0] if layer else None, pass_=layer[1] if layer else None)
    if "compare-other" in fired:  # another B run: its own compiles
        state = state.replace(compile_a=None, compile_b=None, ir_pass=None)
    sides = view.sides(store, run, state)
    if sides is None:
        raise PreventUpdate
    chosen = list(state.sel)
    if "compare-clear-selection" in fired:
        chosen = []
    if "compare-delta" in fired:
        clicked = keys_from_event(bar_click)
        if clicked and all(k in chosen for k in clicked):  # a second click on a selected bar clears it
            chosen = [k for k in chosen if k not in clicked]
        else:
            chosen = chosen + [k for k in clicked if k not in chosen]
    if "compare-scatter" in fired:
        chosen = keys_from_event(scatter_selection)
    if "compare-layers" in fired:
        clicked_layer = layer_from_click(layer_click)
        layer = None if clicked_layer == state.chosen_layer else clicked_layer  # a second click clears it
        state = state.replace(layer=layer[0] if layer else None, pass_=layer[1] if layer else None)
    state = state.replace(sel=tuple(dict.fromkeys(chosen)))
    compared = compare_view(store, *sides)
    shown = render(compared, state)
    b = compared.b
    return (shown["compare-delta"], shown["compare-scatter"], shown["rows"], shown["columns"], shown["summary"],
            shown["sides"], _other_rank_options(b.run_id), ALL_RANKS if b.rank is None else str(b.rank),
            list(state.sel), shown["compare-layers"], list(state.chosen_layer) if state.chosen_layer else None,
            _url_state(compared, state))


@callback(
    Output("compare-more", "children"),
    Output("compare-kernel-section", "style"),
    Output("compare-kernel-detail", "style"),
    Output("compare-kernel-controls", "style"),
    *SIDE_INPUTS, State("compare-run", "data"),
    prevent_initial_call=True,
)
def update_sections(rank_value: Any, other: Any, other_rank: Any, run_id: str) -> tuple[Any, ...]:
    store = current_store()
    run = store.open(run_id)
    sides = view.sides(store, run, _picked_sides(view.State(), run, rank_value, other, other_rank, fired_ids()))
    if sides is None:
        raise PreventUpdate
    style = _kernel_style(store, *sides)
    return _sections(store, *sides), style, style, _controls_style(style)


@callback(
    Output("compare-planner-body", "children"),
    Output(URL_STATE, "data", allow_duplicate=True),
    Input("compare-group-a", "value"), Input("compare-group-b", "value"),
    *SIDES_DRAWN,
    prevent_initial_call=True,
)
def update_planner(group_a: str, group_b: str, run_id: str, other: str, url_state: dict | None) -> tuple[Any, ...]:
    store = current_store()
    body = planner_body(store.open(run_id), store.open(other), group_a, group_b, run_id, other)
    return body, view.State.from_query(url_state or {}).replace(group=group_a, other_group=group_b).url_state()


@callback(
    Output("compare-compiler-body", "children"),
    Output("compare-ir-pass", "options"),
    Output("compare-ir-pass", "value"),
    Output(URL_STATE, "data", allow_duplicate=True),
    *[Input(f"compare-{name}", "value") for name in ("compile-a", "compile-b", "ir-pass")],
    *SIDES_DRAWN,
    prevent_initial_call=True,
)
def update_compiler(compile_a: Any, compile_b: Any, ir_pass: Any, run_id: str, other: str,
                    url_state: dict | None) -> tuple[Any, ...]:
    store = current_store()
    # Another compile aligns other passes: the diff goes back to the first differing one.
    wanted_pass = ir_pass if "compare-ir-pass" in fired_ids() else None
    body, chosen = compiler_body(store.open(run_id), store.open(other), (compile_a, compile_b, wanted_pass))
    state = view.State.from_query({**(url_state or {}), **{key: chosen.get(key) or "" for key in
                                                           ("compile_a", "compile_b", "ir_pass")}})
    return body, select_options(chosen["pass_options"]), select_value(chosen.get("ir_pass")), state.url_state()


@callback(Output(PAGES_LOCATION, "search", allow_duplicate=True), Input("compare-pick-other", "value"),
          State("compare-run", "data"), prevent_initial_call=True)
def pick_b(other: str | None, run_id: str) -> str:
    """B picked on a page that compared nothing yet: load the page for A and B (the router re-renders it)."""
    if not other or other.startswith("kind:"):
        raise PreventUpdate
    return "?" + urlencode({"run": run_id, "other": other})


register_grid_csv("compare-csv", "compare-table", "compare-csv-download", keys=csv_columns)
