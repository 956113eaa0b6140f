"""Controls the chart pages share: rank picker, window chip, the kernel grid (Dash components).

What they show (rows, column definitions, texts) is built Dash-free in `views.kernel_table`.
"""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
from dash import html

from dashboard.layouts.select import native_select
from dashboard.views.kernel_table import WINDOW_RULES, csv_columns, window_text
from dashboard.views.params import ALL_RANKS


def rank_control(component_id: str, ranks: tuple[int, ...], rank: int | None) -> html.Div:
    options = [{"label": "all ranks", "value": ALL_RANKS}] + [{"label": f"rank {r}", "value": str(r)} for r in ranks]
    return html.Div([
        dbc.Label("Rank", html_for=component_id, className="me-2 mb-0 small text-muted"),
        native_select(component_id, options, ALL_RANKS if rank is None else str(rank), min_width="140px"),
    ], className="d-flex align-items-center me-4")


def window_chip(prefix: str, window: tuple[int, int] | None, origin_ns: int) -> html.Div:
    """The visible 'window: a–b [clear]' chip; hidden without a window."""
    # The outer Div carries the display style: Bootstrap's d-flex is !important and would override it.
    return html.Div(html.Div([
        dbc.Badge(window_text(window, origin_ns), id=f"{prefix}-window-text", color="warning", text_color="dark",
                  className="me-1 window-chip", title=WINDOW_RULES.get(prefix, "")),
        dbc.Button("clear", id=f"{prefix}-window-clear", size="sm", color="link", className="p-0"),
    ], className="d-flex align-items-center me-4"), id=f"{prefix}-window-chip",
        style={} if window else {"display": "none"})


def kernel_table(component_id: Any, rows: list[dict], column_defs: list[dict], file_name: str,
                 selectable: bool = True, height: int = 420, selected: list[str] | None = None) -> dag.AgGrid:
    """A sortable, filterable kernel table whose rows are keyed by selection key."""
    options: dict[str, Any] = {"animateRows": False, "enableCellTextSelection": True, "tooltipShowDelay": 300}
    if selectable:
        options["rowSelection"] = {"mode": "multiRow", "checkboxes": True, "headerCheckbox": False,
                                   "enableClickSelection": False}
        options["selectionColumnDef"] = {"pinned": "left", "width": 44, "minWidth": 44, "maxWidth": 44}
    return dag.AgGrid(
        id=component_id, rowData=rows, columnDefs=column_defs, getRowId="params.data.key",
        # Headers wrap rather than cut: they carry the definitions ("total time, sum over 2 ranks (ms)").
        defaultColDef={"sortable": True, "resizable": True, "filter": True, "minWidth": 100, "wrapHeaderText": True,
                       "autoHeaderHeight": True},
        dashGridOptions=options, className="ag-theme-alpine", style={"height": f"{height}px", "width": "100%"},
        csvExportParams={"fileName": f"{file_name}.csv", "columnKeys": csv_columns(column_defs)},
        **({"selectedRows": {"ids": selected}} if selectable and selected else {}),
    )
