"""The planner page's tables: the dumps' own buffer summaries, channels and partitions (dash-ag-grid, CSV)."""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
import polars as pl
from dash import html

from dashboard.analysis import planner_liveness as liveness
from dashboard.layouts.after_charts import AfterCharts

TABLE_IDS = {"SMEM": "planner-smem-table", "TMEM": "planner-tmem-table"}


def _grid(component_id: str, rows: list[dict], columns: list[dict], file_name: str, *, row_id: str | None = None,
          selectable: bool = False, selected: list[str] | None = None, height: int = 300) -> AfterCharts:
    """A planner table, drawn after the page's charts (see AfterCharts)."""
    options: dict[str, Any] = {"animateRows": False, "enableCellTextSelection": True}
    if selectable:
        options["rowSelection"] = {"mode": "singleRow", "checkboxes": False, "enableClickSelection": True}
    extra: dict[str, Any] = {"getRowId": f"params.data.{row_id}"} if row_id else {}
    if selectable and selected:
        extra["selectedRows"] = {"ids": selected}
    grid = dag.AgGrid(id=component_id, rowData=rows, columnDefs=columns,
                      defaultColDef={"sortable": True, "resizable": True, "filter": True, "minWidth": 90, "flex": 1,
                                     "wrapHeaderText": True, "autoHeaderHeight": True},
                      dashGridOptions=options, className="ag-theme-alpine",
                      style={"height": f"{height}px", "width": "100%"},
                      csvExportParams={"fileName": f"{file_name}.csv", "allColumns": True}, **extra)
    return AfterCharts(grid, min_height=height)


def _table_card(title: str, grid: AfterCharts, csv_id: str, hint: str = "") -> html.Div:
    return html.Div([
        html.Div([html.H6(title, className="mb-0 me-3"),
                  dbc.Button("Download CSV", id=csv_id, size="sm", color="primary", outline=True),
                  html.Small(hint, className="text-muted ms-3")], className="d-flex align-items-center mb-2"),
        grid,
    ], className="chart-card")


def _number(field: str, header: str, width: int = 90) -> dict[str, Any]:
    return {"field": field, "headerName": header, "type": "numericColumn", "filter": "agNumberColumnFilter",
            "minWidth": width}


def buffer_table(buffers: pl.DataFrame, group: str, memory: str, stem: str, selected: str | None) -> html.Div:
    """The dump's own summary table (SMEM Buffer Summary / TMEM Allocation Summary), one row per buffer."""
    rows = liveness.buffer_summary(buffers, group, memory).with_columns(
        key=pl.format(f"{memory}-{{}}", pl.col("buffer_index")))
    columns = [{"field": "name", "headerName": "Name", "pinned": "left", "minWidth": 110}]
    if memory == "SMEM":
        columns += [_number("buffer_id", "BufferID", 110), _number("size", "Size (bytes)", 110)]
    else:
        columns += [{"field": "size", "headerName": "Size (rows x cols)"}]
    columns += [_number("channel_count", "Channels", 110), {"field": "channels", "headerName": "channel ids"},
                {"field": "liveness", "headerName": "Liveness", "minWidth": 110}, _number("length", "ops live")]
    if memory == "TMEM":
        columns.append(_number("operand_d", "OperandD", 110))
    columns.append(_number("buffer_index", "#"))
    title = "SMEM Buffer Summary" if memory == "SMEM" else "TMEM Allocation Summary"
    ids = [selected] if selected and selected.startswith(memory) else None
    return _table_card(title, _grid(TABLE_IDS[memory], rows.to_dicts(), columns, f"{stem}-{memory.lower()}-buffers",
                                    row_id="key", selectable=True, selected=ids),
                       f"planner-{memory.lower()}-csv", "click a row to select the buffer")


def _joined(column: str) -> pl.Expr:
    return pl.col(column).list.eval(pl.element().cast(pl.String)).list.join(", ")


def channel_tables(ops: pl.DataFrame, channels: pl.DataFrame, group: str, stem: str) -> list[html.Div]:
    table = liveness.channel_table(channels, ops, group).with_columns(
        src_partitions=_joined("src_partitions"), dst_partitions=_joined("dst_partitions"))
    channel_columns = [_number("uid", "ch"), {"field": "memory", "headerName": "memory"},
                       {"field": "name", "headerName": "buffer"}, _number("buffer_id", "B"),
                       _number("src_op", "from op"), {"field": "src_name", "headerName": "producer"},
                       {"field": "src_partitions", "headerName": "from partition"},
                       _number("dst_op", "to op"), {"field": "dst_name", "headerName": "consumer"},
                       {"field": "dst_partitions", "headerName": "to partition"},
                       {"field": "operand_d", "headerName": "operand D"}]
    partitions = liveness.partition_summary(ops, channels, group)
    partition_columns = [_number("partition", "partition"), _number("ops", "key ops"),
                         _number("smem_out", "SMEM produced"), _number("smem_in", "SMEM consumed"),
                         _number("tmem_out", "TMEM produced"), _number("tmem_in", "TMEM consumed")]
    return [
        _table_card("Channels", _grid("planner-channel-table", table.drop("group").to_dicts(), channel_columns,
                                      f"{stem}-channels"), "planner-channel-csv"),
        _table_card("Partitions", _grid("planner-partition-table", partitions.to_dicts(), partition_columns,
                                        f"{stem}-partitions", height=220), "planner-partition-csv"),
    ]
