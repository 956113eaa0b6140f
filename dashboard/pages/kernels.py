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
from dashboard.analysis import run_views, summary_views
from dashboard.analysis.breakdown import breakdown_text
from dashboard.analysis.gpu_busy import BUSY_DEFINITION
from dashboard.analysis.insights import run_breakdown
from dashboard.analysis.selection import format_keys, format_window, parse_keys, parse_window
from dashboard.analysis.units import format_ns
from dashboard.figures.kernels import duration_scatter_figure, keys_from_event, selected_points, top_kernels_figure
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.context import current_store, fired_ids
from dashboard.layouts.kernel_views import (
    busy_text,
    csv_columns,
    kernel_column_defs,
    kernel_rows,
    kernel_table,
    parse_rank,
    rank_control,
    window_chip,
    window_text,
)
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run

dash.register_page(__name__, path="/kernels", name="Kernels", order=1, title="Kernels · dashboard")

PATH = "/kernels"
EVIDENCE = "kernels"
TOP_CHOICES = (10, 20, 30, 50, 100)
DEFAULT_TOP = 20
GROUP_CHOICES = {"name": "kernel", "op": "launching op", "layer": "layer"}
SELECTION_TRIGGERS = frozenset({"kernels-bar", "kernels-scatter", "kernels-table", "kernels-clear-selection"})


def _top(value: Any) -> int:
    try:
        top = int(value)
    except (TypeError, ValueError):
        return DEFAULT_TOP
    return min(max(top, 1), 200)


def _group(value: Any) -> str:
    return value if value in GROUP_CHOICES else "name"


def totals_text(view: run_views.KernelView, group: str, selected: list[str], busy: str = "") -> str:
    share = f" · selection: {len(selected)} kernel{'s' if len(selected) != 1 else ''}" if selected else ""
    busy_part = f" · {busy}" if busy else ""
    source = f" · numbers {view.source}" if view.source else ""
    return (f"{view.launches:,} launches · {format_ns(view.gpu_time_ns)} of kernel time{busy_part} · "
            f"{view.summary.height} {GROUP_CHOICES[group]}s{share}{source}")


def _spread_ranks(view: run_views.KernelView) -> int:
    """How many ranks the table's sums add up (rank_spread counts a rank without the kernel as 0)."""
    if view.spread is None or view.spread.height == 0:
        return 1
    return int(view.spread.get_column("ranks").list.len().max())  # type: ignore[arg-type]


def highlighted_rows(view: run_views.KernelView, group: str, selected: list[str]) -> list[str]:
    """Row keys to highlight: the kernels themselves, or the ops / layers that launched them."""
    return selected if group == "name" else kernel_analysis.groups_touching(view.pairs, selected)


def render(run: Run, rank: int | None, window: tuple[int, int] | None, group: str, top: int,
           selected: list[str], only_selected: bool = False) -> dict[str, Any]:
    """Everything the page shows for one state (the layout and the callback share it)."""
    view = run_views.kernel_view(run, rank, window, group)  # cached per (run, rank, window, group)
    highlighted = highlighted_rows(view, group, selected)
    rows, units = kernel_rows(view.summary, view.spread)
    if only_selected and highlighted:
        chosen = set(highlighted)
        rows = [row for row in rows if row["key"] in chosen]
    return {
        "bar": top_kernels_figure(view.summary, top, highlighted, view.spread, group),
        "scatter": duration_scatter_figure(view.summary, highlighted, group),
        "rows": rows,
        "columns": kernel_column_defs(group, units, view.spread is not None, _spread_ranks(view)),
        "table_selection": {"ids": highlighted},
        "totals": totals_text(view, group, selected, busy_text(run_views.gpu_busy_view(run, rank, window))),
    }


def restyle_selection(run: Run, rank: int | None, window: tuple[int, int] | None, group: str, top: int,
                      selected: list[str]) -> dict[str, Any]:
    """A selection change only re-styles: patch `selectedpoints` instead of resending the charts."""
    view = run_views.kernel_view(run, rank, window, group)
    highlighted = highlighted_rows(view, group, selected)
    keys = view.summary.get_column("key").to_list()
    bar, scatter = Patch(), Patch()
    bar["data"][0]["selectedpoints"] = selected_points(keys[:top], highlighted)
    scatter["data"][0]["selectedpoints"] = selected_points(keys, highlighted)
    return {"bar": bar, "scatter": scatter, "table_selection": {"ids": highlighted},
            "totals": totals_text(view, group, selected, busy_text(run_views.gpu_busy_view(run, rank, window)))}


def _state(rank: int | None, group: str, top: int, selected: list[str], window: tuple[int, int] | None,
           only: bool) -> dict[str, Any]:
    """The URL view state; defaults are written as "" (= absent), so a plain visit leaves the URL alone."""
    return {"rank": "" if rank is None else rank, "group": "" if group == "name" else group,
            "top": "" if top == DEFAULT_TOP else top, "sel": format_keys(selected),
            "window": format_window(*window) if window else "", "only": "1" if only else ""}


def _unselected(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key != "sel"}


def layout(run: str | None = None, rank: str | None = None, sel: str | None = None, window: str | None = None,
           group: str | None = None, top: str | None = None, only: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Kernels", chosen, "Where GPU time goes: kernels by total time, launches and duration")
    if chosen is None:
        return html.Div([header, notice], id="kernels-page")
    ranks = run_views.kernel_ranks(chosen)
    state_rank, state_group, state_top = parse_rank(rank, ranks), _group(group), _top(top)
    state_window, selected, state_only = parse_window(window), parse_keys(sel), only == "1"
    view = render(chosen, state_rank, state_window, state_group, state_top, selected, state_only)
    origin = run_views.run_origin_ns(chosen)
    controls = html.Div([
        rank_control("kernels-rank", ranks, state_rank),
        html.Div([
            dbc.Label("Group by", className="me-2 mb-0 small text-muted"),
            dbc.RadioItems(id="kernels-group", options=[{"label": v, "value": k} for k, v in GROUP_CHOICES.items()],
                           value=state_group, inline=True, className="mb-0"),
        ], className="d-flex align-items-center me-4"),
        html.Div([
            dbc.Label("Bars", html_for="kernels-top", className="me-2 mb-0 small text-muted"),
            dcc.Dropdown(id="kernels-top", options=[{"label": f"top {n}", "value": n} for n in TOP_CHOICES],
                         value=state_top if state_top in TOP_CHOICES else DEFAULT_TOP, clearable=False,
                         searchable=False, style={"minWidth": "110px"}),
        ], className="d-flex align-items-center me-4"),
        window_chip("kernels", state_window, origin),
        html.Div([
            dbc.Button("clear selection", id="kernels-clear-selection", size="sm", color="secondary",
                       outline=True),
        ], className="d-flex align-items-center"),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    graphs = dbc.Row([
        dbc.Col(html.Div(chart("kernels-bar", view["bar"], f"{chosen.id}-kernels-top"), className="chart-card"),
                lg=7),
        dbc.Col(html.Div(chart("kernels-scatter", view["scatter"], f"{chosen.id}-kernels-scatter"),
                         className="chart-card"), lg=5),
    ], className="g-3")
    table = html.Div([
        html.Div([
            html.H6("All kernels", className="mb-0 me-3", id="kernels-table-title"),
            dbc.Switch(id="kernels-only-selected", label="only the selection", value=state_only,
                       className="mb-0 me-3 small"),
            dbc.Button("Download CSV", id="kernels-csv", size="sm", color="primary", outline=True),
            html.Small("Tick rows to select kernels; click a bar or lasso points on the scatter to do the same.",
                       className="text-muted ms-3"),
        ], className="d-flex align-items-center mb-2"),
        # Drawn after the charts: the grid's start would otherwise hold them back (see AfterCharts).
        AfterCharts(kernel_table("kernels-table", view["rows"], view["columns"], f"{chosen.id}-kernels",
                                 selected=view["table_selection"]["ids"]), min_height=420),
    ], className="chart-card")
    return html.Div([
        header,
        dcc.Store(id="kernels-run", data=chosen.id),
        dcc.Store(id="kernels-sel", data=selected),
        dcc.Store(id="kernels-window", data=format_window(*state_window) if state_window else None),
        url_state_store("kernels", _state(state_rank, state_group, state_top, selected, state_window, state_only)),
        controls,
        html.Div(view["totals"], id="kernels-totals", className="small text-muted"),
        html.Div(f"GPU busy: {BUSY_DEFINITION}.", id="kernels-busy-definition", className="small text-muted"),
        html.Div(["GPU time breakdown, whole run: ", _breakdown_line(chosen), " · ",
                  dcc.Link("Insights →", href=f"/insights?run={chosen.id}")],
                 id="kernels-breakdown", className="small text-muted mb-2"),
        graphs,
        table,
    ], id="kernels-page")


def _breakdown_line(run: Run) -> str:
    """The breakdown's headline, except at many ranks with summaries: it merges every kernel's interval,
    which opening this page never reads there (analysis/summary_views.py)."""
    ranks = summary_views.summary_ranks(run)
    if ranks is not None and len(ranks) > summary_views.SUMMARY_MIN_RANKS:
        return f"per rank on Insights ({len(ranks)} ranks: it reads every kernel's interval, this page only summaries)"
    return breakdown_text(run_breakdown(run))


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
    Input("kernels-rank", "value"),
    Input("kernels-group", "value"),
    Input("kernels-top", "value"),
    Input("kernels-only-selected", "value"),
    Input("kernels-window-clear", "n_clicks"),
    Input("kernels-clear-selection", "n_clicks"),
    Input("kernels-bar", "clickData"),
    Input("kernels-scatter", "selectedData"),
    Input("kernels-table", "selectedRows"),
    State("kernels-sel", "data"),
    State("kernels-window", "data"),
    State("kernels-run", "data"),
    State({"type": "url-state", "page": "kernels"}, "data"),
    prevent_initial_call=True,
)
def update_kernels(rank_value: Any, group_value: Any, top_value: Any, only: bool, _clear_window: Any,
                   _clear_selection: Any, bar_click: dict | None, scatter_selection: dict | None,
                   table_rows: list[dict] | None, selected: list[str] | None, window_value: str | None,
                   run_id: str, drawn: dict[str, Any] | None) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    ranks = run_views.kernel_ranks(run)
    rank, group, top = parse_rank(rank_value, ranks), _group(group_value), _top(top_value)
    window = parse_window(window_value)
    selected = list(selected or [])
    fired = fired_ids()
    if "kernels-window-clear" in fired:
        window = None
    pairs = run_views.kernel_view(run, rank, window, group).pairs
    # Controls are compared with what is drawn, not read from the fired inputs alone: the renderer
    # drops the answer to a call that a newer call overtakes (a rank picked while the grid echoes
    # its selection), and the newer call may name only the grid.
    view_changed = _unselected(_state(rank, group, top, [], window, bool(only))) != _unselected(drawn or {})
    table_selection_unchanged = False
    if "kernels-table" in fired:  # first: it is compared with the selection the grid was given
        row_keys = sorted(row.get("key") for row in table_rows or [] if row.get("key"))
        shown = selected if group == "name" else kernel_analysis.groups_touching(pairs, selected)
        if row_keys != sorted(shown):
            selected = kernel_analysis.keys_for_groups(pairs, row_keys)
            table_selection_unchanged = True  # the grid already shows what the user picked there
        elif fired == {"kernels-table"} and not view_changed:
            raise PreventUpdate  # the grid echoing the selection this callback just set
    if fired & {"kernels-clear-selection", "kernels-bar", "kernels-scatter"}:
        table_selection_unchanged = False
    if "kernels-clear-selection" in fired:
        selected = []
    if "kernels-bar" in fired:
        selected = _toggle(selected, kernel_analysis.keys_for_groups(pairs, keys_from_event(bar_click)))
    if "kernels-scatter" in fired:
        selected = kernel_analysis.keys_for_groups(pairs, keys_from_event(scatter_selection))
    state = _state(rank, group, top, selected, window, bool(only))
    if fired <= SELECTION_TRIGGERS and not only and not view_changed:
        patch = restyle_selection(run, rank, window, group, top, selected)
        return (patch["bar"], patch["scatter"], no_update, no_update,
                no_update if table_selection_unchanged else patch["table_selection"], patch["totals"], selected,
                no_update, no_update, no_update, state)
    view = render(run, rank, window, group, top, selected, bool(only))
    return (
        view["bar"], view["scatter"], view["rows"], view["columns"],
        no_update if table_selection_unchanged else view["table_selection"],
        view["totals"], selected, format_window(*window) if window else None,
        {} if window else {"display": "none"}, window_text(window, run_views.run_origin_ns(run)), state,
    )


@callback(Output("kernels-table", "exportDataAsCsv"), Output("kernels-table", "csvExportParams"),
          Input("kernels-csv", "n_clicks"), State("kernels-table", "columnDefs"),
          State("kernels-table", "csvExportParams"), prevent_initial_call=True)
def export_kernels_csv(_clicks: Any, columns: list[dict] | None,
                       params: dict[str, Any] | None) -> tuple[bool, dict[str, Any]]:
    # The columns follow the grouping, so the CSV's columns (full names, no chart labels) are named now.
    return True, {**(params or {}), "columnKeys": csv_columns(columns or [])}
