"""The Dash pieces of `/planner`: the body of a planner group or a plain DOT graph, panels and grids.

No callbacks here (they live in `pages.planner`); what is drawn comes from
`views.planner` (figures, graph elements, the selection) and
`views.planner_tables` (rows, columns, texts).
"""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
from dash import dcc, html

from dashboard.analysis import planner_view as analysis
from dashboard.figures.planner import CHANNEL_GRAPH_LAYOUT, DOT_GRAPH_LAYOUT, DOT_GRAPH_STYLESHEET, dot_graph_elements
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.graph_preview import previewed_graph
from dashboard.layouts.grid_csv import csv_download
from dashboard.layouts.page import chart
from dashboard.layouts.planner_graphviz import graphviz_body, missing_notice
from dashboard.layouts.select import native_select
from dashboard.store import Run
from dashboard.views import planner as view
from dashboard.views import planner_tables as tables

GRAPH_ID = "planner-graph"
DOT_GRAPH_ID = "planner-dot-graph"
TIMELINE_IDS = {memory: view.CHARTS[view.timeline_chart(memory)] for memory in view.MEMORIES}
LIVE_IDS = {memory: view.CHARTS[view.live_chart(memory)] for memory in view.MEMORIES}
TABLE_IDS = {"SMEM": "planner-smem-table", "TMEM": "planner-tmem-table"}
LIVE_BUFFER_BUTTON = "planner-live-buffer"  # pattern-matching id type of the "live here" buttons
GRAPH_HEIGHT = 760
SELECTION_PANEL_HEIGHT = 150
TIMELINE_VIEW_HEIGHT = 440  # the scroll box around a timeline; the figure itself grows with its buffers


# --- grids ---------------------------------------------------------------------------------------------------------

def _grid(component_id: str, table: tables.Table, file_name: str, *, row_id: str | None = None,
          selectable: bool = False, selected: list[str] | None = None, height: int = 300) -> AfterCharts:
    """A planner table, drawn after the page's charts (see AfterCharts)."""
    rows, columns = table
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
                  csv_download(f"{csv_id}-download"),
                  html.Small(hint, className="text-muted ms-3")], className="d-flex align-items-center mb-2"),
        grid,
    ], className="chart-card")


def buffer_table(run: Run, group: str, memory: str, stem: str, selected: str | None) -> html.Div:
    title = "SMEM Buffer Summary" if memory == "SMEM" else "TMEM Allocation Summary"
    ids = [selected] if selected and selected.startswith(memory) else None
    grid = _grid(TABLE_IDS[memory], tables.buffer_table(run, group, memory), f"{stem}-{memory.lower()}-buffers",
                 row_id="key", selectable=True, selected=ids)
    return _table_card(title, grid, f"planner-{memory.lower()}-csv", "click a row to select the buffer")


def channel_tables(run: Run, group: str, stem: str) -> list[html.Div]:
    return [
        _table_card("Channels", _grid("planner-channel-table", tables.channel_table(run, group), f"{stem}-channels"),
                    "planner-channel-csv"),
        _table_card("Partitions", _grid("planner-partition-table", tables.partition_table(run, group),
                                        f"{stem}-partitions", height=220), "planner-partition-csv"),
    ]


# --- panels --------------------------------------------------------------------------------------------------------

def _buffer_button(row: dict[str, Any], selected: tuple[str, int] | None) -> dbc.Button:
    key = analysis.buffer_key(row["memory"], row["buffer_index"])
    chosen = selected == (row["memory"], row["buffer_index"])
    return dbc.Button(f"{row['name']} · {tables.size_text(row['memory'], row)}",
                      id={"type": LIVE_BUFFER_BUTTON, "key": key}, size="sm",
                      color="success" if row["memory"] == "SMEM" else "danger", outline=not chosen,
                      className="me-1 mb-1 planner-live-buffer", title=f"select {row['memory']} buffer {key}")


def selection_panel(selection: view.SelectionView) -> list[Any]:
    """What is selected, in words: the buffer with its channels and ops; the marked op and what is live there."""
    parts: list[Any] = []
    buffer = selection.buffer
    selected = (buffer.memory, buffer.buffer_index) if buffer else None
    if buffer:
        row = buffer.row
        ops_text = "; ".join(tables.op_text(op) for op in buffer.ops) or "none in the graph"
        parts.append(html.Div([
            html.Span(f"{buffer.memory} buffer ", className="text-muted"),
            html.B(row["name"], id="planner-selected-buffer"),
            html.Span(f" #{buffer.buffer_index} · {tables.size_text(buffer.memory, row)} · "
                      f"live [{row['start_op']}-{row['end_op']}) · "
                      f"channels {', '.join(f'ch{u}' for u in buffer.uids) or 'none'}"),
            html.Div(f"ops: {ops_text}", className="small text-muted"),
        ], className="mb-2"))
    mark = selection.mark
    if mark:
        lines: list[Any] = [html.Div([html.Span("marked ", className="text-muted"),
                                      html.B(mark.label, id="planner-marked-op")])]
        if mark.op_id is None:
            lines.append(html.Div("This dump has no operation ids (made without the planner's debug flag), so the "
                                  "op cannot be placed on the timelines.", className="small text-muted"))
        else:
            lines.append(html.Div(f"live at op {mark.op_id}: {tables.totals_text(analysis.live_totals(mark.live))}",
                                  className="small", id="planner-live-totals"))
            lines.append(html.Div([_buffer_button(row, selected) for row in mark.live.iter_rows(named=True)],
                                  id="planner-live-list", className="mt-1"))
        if mark.touched.height:
            lines.append(html.Div("its channels use: " + ", ".join(
                f"{row['memory']} {row['name']}" for row in mark.touched.iter_rows(named=True)),
                className="small text-muted"))
        parts.append(html.Div(lines))
    if not parts:
        parts.append(html.Span("Click a bar on a timeline or a row of a buffer table to select a buffer; "
                               "tap an op in the graph to mark it on the timelines; tap a partition box or pick "
                               "one above to filter the graph.", className="text-muted small"))
    return parts


def group_facts(run: Run, group: str) -> html.Div:
    """Peaks against capacity and what the dumps lack, for one group."""
    facts = tables.group_facts(run, group)
    items: list[Any] = []
    if facts is not None:
        (smem, smem_fits), (tmem, tmem_fits), (counts, _) = facts
        items += [
            dbc.Badge(smem, color={True: "success", False: "danger"}.get(smem_fits, "secondary"), className="me-2"),
            dbc.Badge(tmem, color={True: "success", False: "danger"}.get(tmem_fits, "secondary"), className="me-2"),
            html.Small(counts, className="text-muted"),
        ]
    notes = [html.Li(note) for note in view.planner_data(run).notes.get(group, [])]
    return html.Div([html.Div(items), html.Ul(notes, className="small text-muted mb-0 mt-1") if notes else None],
                    id="planner-facts", className="mb-2")


def partition_options(run: Run, group: str) -> list[dict[str, Any]]:
    return [{"label": f"partition {p}", "value": p} for p in view.partitions(run, group)]


def _graph_legend() -> html.Div:
    swatch = "d-inline-block me-1 align-middle"
    return html.Div([
        html.Span([html.Span(className=swatch, style={"width": 18, "height": 3, "background": "#2ca02c"}),
                   "SMEM channel"], className="me-3"),
        html.Span([html.Span(className=swatch, style={"width": 18, "height": 3, "background": "#d62728"}),
                   "TMEM channel"], className="me-3"),
        html.Span([html.Span(className=swatch, style={"width": 18, "height": 5, "background": "#495057"}),
                   "bold: MMA operand D"], className="me-3"),
        html.Span("dashed border: op also declared in another partition", className="me-3"),
        html.Span("scroll to zoom, drag to pan"),
    ], className="small text-muted mt-1")


# --- bodies --------------------------------------------------------------------------------------------------------

def planner_body(run: Run, state: view.State) -> list[Any]:
    """Everything below the group picker for one planner group, drawn for a selection state."""
    group = state.group or ""
    stem = view.file_stem(run.id, group)
    selection = view.selection_view(run, state)
    figures = view.page_figures(run, state)
    timelines = [html.Div(html.Div(chart(TIMELINE_IDS[memory], figures[view.timeline_chart(memory)],
                                         f"{stem}-{memory.lower()}-liveness"),
                                   style={"maxHeight": f"{TIMELINE_VIEW_HEIGHT}px", "overflowY": "auto"}),
                          className="chart-card") for memory in view.MEMORIES]
    lives = [dbc.Col(html.Div(chart(LIVE_IDS[memory], figures[view.live_chart(memory)],
                                    f"{stem}-live-{memory.lower()}"), className="chart-card"), lg=6)
             for memory in view.MEMORIES]
    controls = html.Div([
        html.Div([
            dbc.Label("Partition", html_for="planner-partition", className="me-2 mb-0 small text-muted"),
            native_select("planner-partition", partition_options(run, group), state.partition,
                          none_label="all partitions", min_width="170px"),
        ], className="d-flex align-items-center me-3"),
        dbc.Button("Clear selection", id="planner-clear", size="sm", color="secondary", outline=True,
                   className="me-2"),
        dbc.Button("Graph as PNG", id="planner-graph-png", size="sm", color="primary", outline=True,
                   className="me-2"),
        dbc.Button("Export all (PNG)", id="planner-export-all", size="sm", color="primary", className="me-2",
                   title="SMEM timeline, TMEM timeline and channel graph stacked in one image"),
        html.Small(id="planner-export-status", className="text-muted"),
    ], className="d-flex flex-wrap align-items-center mb-2")
    graph = html.Div([
        # A fixed height: the graph must not move when the panel's text changes under a tap.
        html.Div(selection_panel(selection), id="planner-selection", className="planner-selection mb-2",
                 style={"height": f"{SELECTION_PANEL_HEIGHT}px", "overflowY": "auto"}),
        # Painted at once from its drawing list; Cytoscape takes over once the charts are drawn.
        previewed_graph(
            cyto.Cytoscape(id=GRAPH_ID, elements=view.graph_elements(run, group, state.partition),
                           layout=CHANNEL_GRAPH_LAYOUT, stylesheet=view.graph_stylesheet(run, group), minZoom=0.02,
                           maxZoom=4, autoungrabify=True, autounselectify=True, boxSelectionEnabled=False,
                           style={"height": f"{GRAPH_HEIGHT}px", "width": "100%", "border": "1px solid #dee2e6",
                                  "borderRadius": "6px"}),
            view.graph_preview(run, group, state.partition, selection.graph),
            padding=CHANNEL_GRAPH_LAYOUT["padding"], height=GRAPH_HEIGHT),
        _graph_legend(),
    ], className="chart-card")
    selected_key = analysis.buffer_key(*state.buffer) if state.buffer and selection.buffer else None
    return [
        group_facts(run, group),
        controls,
        dcc.Store(id="planner-file-stem", data=stem),
        dcc.Store(id="planner-export-pending", data=False),
        dcc.Store(id="planner-tap"),
        dcc.Store(id="planner-graph-selection", data=selection.graph),
        dcc.Store(id="planner-graph-applied"),
        dbc.Row([dbc.Col(timelines, lg=5), dbc.Col(graph, lg=7)], className="g-3"),
        dbc.Row(lives, className="g-3"),
        dbc.Row([dbc.Col(buffer_table(run, group, memory, stem, selected_key), lg=6)
                 for memory in view.MEMORIES], className="g-3"),
        *channel_tables(run, group, stem),
    ]


def dot_body(run: Run, group: str) -> list[Any]:
    """A plain DOT graph as Graphviz draws it; without Graphviz, a notice and the built-in layout."""
    drawn = view.graphviz_drawing(run, group)
    if drawn.drawing is not None:
        return graphviz_body(run.id, group, drawn)
    return [missing_notice(drawn.problem or "Graphviz drew nothing"), *builtin_dot_body(run, group)]


def builtin_dot_body(run: Run, group: str) -> list[Any]:
    """A plain DOT graph drawn by cytoscape: clusters as compound nodes, laid out top to bottom."""
    data = view.planner_data(run)
    elements = dot_graph_elements(data.dot_nodes, data.dot_edges, group)
    return [
        html.Div([
            html.Small("A plain DOT graph (not a planner dump): shown as drawn, without liveness.",
                       className="text-muted me-3"),
            dbc.Button("Graph as PNG", id="planner-dot-png", size="sm", color="primary", outline=True),
        ], className="d-flex align-items-center mb-2"),
        dcc.Store(id="planner-file-stem", data=view.file_stem(run.id, group)),
        html.Div(cyto.Cytoscape(id=DOT_GRAPH_ID, elements=elements, layout=DOT_GRAPH_LAYOUT,
                                stylesheet=DOT_GRAPH_STYLESHEET, minZoom=0.05, maxZoom=4,
                                style={"height": f"{GRAPH_HEIGHT}px", "width": "100%"}), className="chart-card"),
    ]


def group_body(run: Run, state: view.State) -> list[Any]:
    """Below the group picker: the group's views for a (resolved) state."""
    picked = view.choice(run, state)
    if picked is None:
        return [dbc.Alert("This run has planner tables but no group in them.", color="info")]
    if picked.kind == "dot":
        return dot_body(run, picked.group)
    return planner_body(run, state)
