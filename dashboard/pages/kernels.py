"""`/kernels`: Where GPU time goes: kernels by total time, launches and duration.

URL state: run, rank (int or "all"), sel (kernel keys), window (from the
timeline brush), group (name / op / layer), top (bars shown), only (1 = the
table lists only the selection).
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, Patch, State, callback, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis import kernels as kernel_analysis
from dashboard.analysis.gpu_busy import BUSY_DEFINITION
from dashboard.figures.kernels import keys_from_event
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.controls import kernel_table, rank_control, window_chip
from dashboard.layouts.grid_csv import csv_download, register_grid_csv
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store, fired_ids
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run
from dashboard.views import kernels as view
from dashboard.views import run_views
from dashboard.views.kernel_table import csv_columns, window_text
from dashboard.views.params import format_window, parse_rank

dash.register_page(__name__, path="/kernels", name="Kernels", order=1, title="Kernels · dashboard")

PATH = "/kernels"
EVIDENCE = "kernels"
SELECTION_TRIGGERS = frozenset({"kernels-bar", "kernels-scatter", "kernels-table", "kernels-clear-selection"})


def _unselected(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key != "sel"}


@run_page("kernels", "Kernels", "Where GPU time goes: kernels by total time, launches and duration", EVIDENCE, PATH)
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, chosen)
    figures = view.figures(chosen, state)
    rows, columns = view.table(chosen, state)
    origin = run_views.run_origin_ns(chosen)
    controls = html.Div([
        rank_control("kernels-rank", run_views.kernel_ranks(chosen), state.rank),
        html.Div([
            dbc.Label("Group by", className="me-2 mb-0 small text-muted"),
            dbc.RadioItems(id="kernels-group",
                           options=[{"label": v, "value": k} for k, v in view.GROUP_CHOICES.items()],
                           value=state.group, inline=True, className="mb-0"),
        ], className="d-flex align-items-center me-4"),
        html.Div([
            dbc.Label("Bars", html_for="kernels-top", className="me-2 mb-0 small text-muted"),
            native_select("kernels-top", [{"label": f"top {n}", "value": n} for n in view.TOP_CHOICES],
                          state.top if state.top in view.TOP_CHOICES else view.DEFAULT_TOP, min_width="110px"),
        ], className="d-flex align-items-center me-4"),
        window_chip("kernels", state.window, origin),
        html.Div([
            dbc.Button("clear selection", id="kernels-clear-selection", size="sm", color="secondary",
                       outline=True),
        ], className="d-flex align-items-center"),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    graphs = dbc.Row([
        dbc.Col(html.Div(chart("kernels-bar", figures["top-kernels"], f"{chosen.id}-kernels-top"),
                         className="chart-card"), lg=7),
        dbc.Col(html.Div(chart("kernels-scatter", figures["duration-vs-launches"], f"{chosen.id}-kernels-scatter"),
                         className="chart-card"), lg=5),
    ], className="g-3")
    table = html.Div([
        html.Div([
            html.H6("All kernels", className="mb-0 me-3", id="kernels-table-title"),
            dbc.Switch(id="kernels-only-selected", label="only the selection", value=state.only,
                       className="mb-0 me-3 small"),
            dbc.Button("Download CSV", id="kernels-csv", size="sm", color="primary", outline=True),
            csv_download("kernels-csv-download"),
            html.Small("Tick rows to select kernels; click a bar or lasso points on the scatter to do the same.",
                       className="text-muted ms-3"),
        ], className="d-flex align-items-center mb-2"),
        # Drawn after the charts: the grid's start would otherwise hold them back (see AfterCharts).
        AfterCharts(kernel_table("kernels-table", rows, columns, f"{chosen.id}-kernels",
                                 selected=view.highlighted(chosen, state)), min_height=420),
    ], className="chart-card")
    return html.Div([
        header,
        dcc.Store(id="kernels-run", data=chosen.id),
        dcc.Store(id="kernels-sel", data=list(state.sel)),
        dcc.Store(id="kernels-window", data=format_window(*state.window) if state.window else None),
        url_state_store("kernels", state.url_state()),
        controls,
        html.Div(view.totals_text(chosen, state), id="kernels-totals", className="small text-muted"),
        html.Div(f"GPU busy: {BUSY_DEFINITION}.", id="kernels-busy-definition", className="small text-muted"),
        html.Div(["GPU time breakdown, whole run: ", view.breakdown_line(chosen), " · ",
                  dcc.Link("Insights →", href=f"/insights?run={chosen.id}")],
                 id="kernels-breakdown", className="small text-muted mb-2"),
        graphs,
        table,
    ], id="kernels-page")


def _toggle(selected: list[str], keys: list[str]) -> list[str]:
    """Clicking a bar adds its kernels, or removes them when all are already selected."""
    if keys and all(k in selected for k in keys):
        return [k for k in selected if k not in keys]
    return selected + [k for k in keys if k not in selected]


@callback(
    Output("kernels-bar", "figure"),
    Output("kernels-scatter", "figure"),
    Output("kernels-table", "rowData"),
    Output("kernels-table", "columnDefs"),
    Output("kernels-table", "selectedRows"),
    Output("kernels-totals", "children"),
    Output("kernels-sel", "data"),
    Output("kernels-window", "data"),
    Output("kernels-window-chip", "style"),
    Output("kernels-window-text", "children"),
    Output({"type": "url-state", "page": "kernels"}, "data"),
    # controls, then chart and grid events
    *[Input(f"kernels-{name}", "value") for name in ("rank", "group", "top", "only-selected")],
    Input("kernels-window-clear", "n_clicks"), Input("kernels-clear-selection", "n_clicks"),
    Input("kernels-bar", "clickData"), Input("kernels-scatter", "selectedData"), Input("kernels-table", "selectedRows"),
    *[State(f"kernels-{name}", "data") for name in ("sel", "window", "run")],
    State({"type": "url-state", "page": "kernels"}, "data"),
    prevent_initial_call=True,
)
def update_kernels(rank_value: Any, group_value: Any, top_value: Any, only: bool, _clear_window: Any,
                   _clear_selection: Any, bar_click: dict | None, scatter_selection: dict | None,
                   table_rows: list[dict] | None, selected: list[str] | None, window_value: str | None,
                   run_id: str, drawn: dict[str, Any] | None) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    fired = fired_ids()
    state = view.State(rank=parse_rank(rank_value, run_views.kernel_ranks(run)),
                       group=view.State.from_query({"group": group_value}).group,
                       top=view.State.from_query({"top": top_value}).top,
                       sel=tuple(selected or ()), window=view.State.from_query({"window": window_value}).window,
                       only=bool(only))
    if "kernels-window-clear" in fired:
        state = state.replace(window=None)
    pairs = view.view(run, state).pairs
    # Controls are compared with what is drawn, not read from the fired inputs alone: the renderer
    # drops the answer to a call that a newer call overtakes (a rank picked while the grid echoes
    # its selection), and the newer call may name only the grid.
    view_changed = _unselected(state.url_state()) != _unselected(drawn or {})
    chosen = list(state.sel)
    table_selection_unchanged = False
    if "kernels-table" in fired:  # first: it is compared with the selection the grid was given
        row_keys = sorted(row.get("key") for row in table_rows or [] if row.get("key"))
        if row_keys != sorted(view.highlighted(run, state)):
            chosen = kernel_analysis.keys_for_groups(pairs, row_keys)
            table_selection_unchanged = True  # the grid already shows what the user picked there
        elif fired == {"kernels-table"} and not view_changed:
            raise PreventUpdate  # the grid echoing the selection this callback just set
    if fired & {"kernels-clear-selection", "kernels-bar", "kernels-scatter"}:
        table_selection_unchanged = False
    if "kernels-clear-selection" in fired:
        chosen = []
    if "kernels-bar" in fired:
        chosen = _toggle(chosen, kernel_analysis.keys_for_groups(pairs, keys_from_event(bar_click)))
    if "kernels-scatter" in fired:
        chosen = kernel_analysis.keys_for_groups(pairs, keys_from_event(scatter_selection))
    state = state.replace(sel=tuple(dict.fromkeys(chosen)))
    table_selection = no_update if table_selection_unchanged else {"ids": view.highlighted(run, state)}
    if fired <= SELECTION_TRIGGERS and not state.only and not view_changed:
        points = view.selection_points(run, state)
        bar, scatter = Patch(), Patch()
        bar["data"][0]["selectedpoints"] = points["top-kernels"]
        scatter["data"][0]["selectedpoints"] = points["duration-vs-launches"]
        return (bar, scatter, no_update, no_update, table_selection, view.totals_text(run, state), list(state.sel),
                no_update, no_update, no_update, state.url_state())
    figures = view.figures(run, state)
    rows, columns = view.table(run, state)
    return (
        figures["top-kernels"], figures["duration-vs-launches"], rows, columns, table_selection,
        view.totals_text(run, state), list(state.sel), format_window(*state.window) if state.window else None,
        {} if state.window else {"display": "none"}, window_text(state.window, run_views.run_origin_ns(run)),
        state.url_state(),
    )


# The columns follow the grouping: the CSV's (full names, no chart labels) are taken when it is asked for.
register_grid_csv("kernels-csv", "kernels-table", "kernels-csv-download", keys=csv_columns)
