"""A compact table of what a run holds, shown on pages whose views are still thin."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import html

from dashboard.store import Run


def run_summary(run: Run, tables: tuple[str, ...]) -> dbc.Card:
    rows = [html.Tr([html.Td(table), html.Td(f"{run.info.row_counts.get(table, 0):,}", className="text-end")])
            for table in tables if run.info.row_counts.get(table, 0)]
    body = [html.H6("What this run holds", className="card-title"),
            dbc.Table([html.Thead(html.Tr([html.Th("table"), html.Th("rows", className="text-end")])),
                       html.Tbody(rows)], size="sm", className="mb-0 run-summary")]
    return dbc.Card(dbc.CardBody(body), className="mb-3")
