"""A page table's "Download CSV": the rows as the grid shows them (filtered, sorted), raw numbers, built on the
server (`exports.tables.grid_csv`).

AG Grid's own CSV export writes a byte-order mark and, from version 31, each cell's formatted text: "1,605"
in quotes, "–" for a missing value, U+2212 minus signs. A spreadsheet then reads numbers as text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, State, callback, dcc

from dashboard.exports.tables import grid_csv


def _flat(column_defs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    flat: list[dict[str, Any]] = []
    for column in column_defs or []:
        flat += _flat(column["children"]) if "children" in column else [column]
    return flat


def csv_columns_of(column_defs: list[dict[str, Any]], keys: list[str] | None) -> list[tuple[str, str]]:
    """(field, header) of the columns the CSV holds: `keys` (the grid's csvExportParams.columnKeys) when
    given, else every column with a field."""
    columns = [(column["field"], column.get("headerName") or column["field"]) for column in _flat(column_defs)
               if column.get("field")]
    if keys:
        by_field = dict(columns)
        return [(key, by_field.get(key, key)) for key in keys]
    return columns


def register_grid_csv(button: Any, grid: Any, download: str, matched: bool = False,
                      keys: Callable[[list[dict[str, Any]]], list[str]] | None = None) -> None:
    """Wire `button` to download `grid`'s rows as CSV through the dcc.Download `download`. `matched`: `grid` is
    a pattern-matching id (ALL): the first grid it matches is the one (a grid shown only while something is
    selected). `keys`: the fields the CSV holds, from the grid's column definitions (default: its
    csvExportParams.columnKeys, else every column)."""
    @callback(Output(download, "data"), Input(button, "n_clicks"), State(grid, "virtualRowData"),
              State(grid, "rowData"), State(grid, "columnDefs"), State(grid, "csvExportParams"),
              prevent_initial_call=True)
    def send(clicks: Any, shown: Any, rows: Any, column_defs: Any, params: Any) -> dict[str, Any] | None:
        if matched:
            if not rows:
                return None
            shown, rows, column_defs, params = (value[0] if value else None
                                                for value in (shown, rows, column_defs, params))
        if not clicks:
            return None
        params = params or {}
        fields = keys(column_defs or []) if keys is not None else params.get("columnKeys")
        content = grid_csv(shown if shown is not None else rows or [], csv_columns_of(column_defs or [], fields))
        return dcc.send_bytes(content, params.get("fileName") or "table.csv", type="text/csv")


def csv_download(download: str) -> dcc.Download:
    """Where a table's CSV arrives (register_grid_csv sends it here)."""
    return dcc.Download(id=download)
