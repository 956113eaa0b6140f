"""`/history`: a series of runs as a trend; a click on a point opens the compare of that run with the one before.

URL state: runs (comma-separated run ids, as picked on the Runs page), else name
(every run of that name), else run (every run named like it), else the name with
the most runs. Runs are ordered oldest first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard.analysis.compare_history import predecessor, series_runs
from dashboard.figures.compare_history import run_from_click
from dashboard.layouts.page import chart, page_header, page_href
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.store import RunNotFound
from dashboard.views.history import history_chart
from dashboard.views.text import counted

dash.register_page(__name__, path="/history", name="History", order=8, title="History · dashboard")

ALL_RUNS = "__all__"


def compare_href(run_ids: list[str], run_id: str) -> str | None:
    """/compare of `run_id` (B) against the run before it in the series (A)."""
    before = predecessor(run_ids, run_id)
    return page_href("/compare", before, other=run_id) if before else None


def _names() -> tuple[list[dict[str, str]], str | None]:
    """Dropdown options (run names with their counts, then all runs) and the name with the most runs."""
    counts = Counter(info.name for info in current_store().list_runs())
    options = [{"label": f"{name} ({counted(count, 'run')})", "value": name} for name, count in counts.most_common()]
    options.append({"label": "all runs", "value": ALL_RUNS})
    return options, (counts.most_common(1)[0][0] if counts else None)


def _series(name: str | None, runs: str | None) -> list[str]:
    infos = current_store().list_runs()
    picked = [run_id for run_id in (runs or "").split(",") if run_id]
    return series_runs(infos, None if name == ALL_RUNS else name, picked)


def render(run_ids: list[str]) -> tuple[Any, list[Any]]:
    store = current_store()
    runs = []
    for run_id in run_ids:
        try:
            runs.append(store.open(run_id))
        except RunNotFound:
            continue
    ids = [run.id for run in runs]
    rows = [html.Tr([html.Td(position + 1), html.Td(run.id), html.Td(run.info.created.replace("T", " ")),
                     html.Td(html.A("compare with the run before", href=compare_href(ids, run.id),
                                    className="history-compare-link") if position else "first of the series")])
            for position, run in enumerate(runs)]
    table = dbc.Table([html.Thead(html.Tr([html.Th("#"), html.Th("run"), html.Th("created"), html.Th("compare")])),
                       html.Tbody(rows)], size="sm", striped=True, className="small", id="history-runs")
    return history_chart(tuple(runs)), [table]


def layout(runs: str | None = None, name: str | None = None, run: str | None = None, **_query: Any) -> html.Div:
    options, commonest = _names()
    if not runs and not name and run:
        try:
            name = current_store().open(run).info.name
        except RunNotFound:
            name = None
    chosen_name = name if runs is None else None
    if chosen_name is None and not runs:
        chosen_name = commonest
    run_ids = _series(chosen_name, runs)
    figure, table = render(run_ids)
    picked = f"{counted(len(run_ids), 'run')} picked on the Runs page" if runs else None
    return html.Div([
        page_header("History", None, "A series of runs as a trend; click a point to compare its run with the one "
                                     "before"),
        html.Div([
            html.Span("Series", className="fw-semibold me-2"),
            native_select("history-name", options, None if runs else chosen_name,
                          placeholder=picked or "pick a run name", min_width="360px"),
        ], className="d-flex align-items-center mb-2"),
        url_state_store("history", {"runs": runs or "", "name": chosen_name or ""}),
        dcc.Location(id="history-go", refresh=True),
        html.Div(chart("history-trend", figure, "history-trend"), className="chart-card"),
        html.Div(table, id="history-table", className="chart-card"),
        dcc.Store(id="history-run-ids", data=run_ids),
    ], id="history-page")


@callback(
    Output("history-trend", "figure"),
    Output("history-table", "children"),
    Output("history-run-ids", "data"),
    Output({"type": "url-state", "page": "history"}, "data"),
    Input("history-name", "value"),
    prevent_initial_call=True,
)
def pick_series(name: str | None) -> tuple[Any, ...]:
    run_ids = _series(name, None)
    figure, table = render(run_ids)
    return figure, table, run_ids, {"runs": "", "name": name or ""}


@callback(
    Output("history-go", "href"),
    Input("history-trend", "clickData"),
    State("history-run-ids", "data"),
    prevent_initial_call=True,
)
def open_compare(click: dict | None, run_ids: list[str]) -> str:
    run_id = run_from_click(click)
    href = compare_href(run_ids or [], run_id) if run_id else None
    if href is None:  # the first run has nothing before it
        raise PreventUpdate
    return href
