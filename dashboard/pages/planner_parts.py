"""The pieces of `/planner`: cached per-run data and views, and the components that show them.

No callbacks here (they live in `planner_callbacks`) and no page registration,
so Dash's page loader never executes this module a second time.

Expensive views are cached per (run, group[, memory | partition]): the channel
graph's elements, the liveness timelines and the live-memory charts are drawn
once without any selection; a selection is then applied as a small change
(classes on the few graph elements concerned, set in the browser; layout shapes
sent as plotly Patches), which keeps a tap on a 2000-op graph interactive.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
import plotly.graph_objects as go
import polars as pl
from dash import dcc, html

from dashboard.analysis import planner_liveness as liveness
from dashboard.analysis import planner_view as view
from dashboard.analysis.units import format_bytes
from dashboard.exports.png import safe_file_stem
from dashboard.figures.planner import (
    CHANNEL_GRAPH_LAYOUT,
    CHANNEL_GRAPH_STYLESHEET,
    DOT_GRAPH_LAYOUT,
    DOT_GRAPH_STYLESHEET,
    channel_graph_elements,
    dot_graph_elements,
    live_memory_figure,
    liveness_timeline,
)
from dashboard.figures.planner_big_graph import BIG_GRAPH_STYLESHEET, flat_partitions, is_big
from dashboard.figures.planner_selection import graph_selection, selection_shapes
from dashboard.layouts.context import current_store
from dashboard.layouts.page import chart
from dashboard.pages.planner_graphviz import graphviz_body, graphviz_drawing, missing_notice
from dashboard.pages.planner_tables import buffer_table, channel_tables
from dashboard.schema import empty

GRAPH_ID = "planner-graph"
DOT_GRAPH_ID = "planner-dot-graph"
TIMELINE_IDS = {"SMEM": "planner-smem-timeline", "TMEM": "planner-tmem-timeline"}
LIVE_IDS = {"SMEM": "planner-smem-live", "TMEM": "planner-tmem-live"}
LIVE_BUFFER_BUTTON = "planner-live-buffer"  # pattern-matching id type of the "live here" buttons
GRAPH_HEIGHT = 760
SELECTION_PANEL_HEIGHT = 150
TIMELINE_VIEW_HEIGHT = 440  # the scroll box around a timeline; the figure itself grows with its buffers
PLANNER_TABLES = ("ws_buffers", "ws_ops", "ws_channels", "dot_nodes", "dot_edges")


@dataclass(frozen=True)
class PlannerData:
    """One run's planner tables and what the group picker offers."""

    run_id: str
    buffers: pl.DataFrame
    ops: pl.DataFrame
    channels: pl.DataFrame
    dot_nodes: pl.DataFrame
    dot_edges: pl.DataFrame
    summary: pl.DataFrame  # liveness.group_summary: one row per planner group
    choices: tuple[view.GroupChoice, ...]
    notes: dict[str, list[str]]  # per group: what the collector says is missing from its dumps


@lru_cache(maxsize=16)
def planner_data(run_id: str) -> PlannerData:
    run = current_store().open(run_id)
    frames = {table: run.frame(table) if run.has(table) else empty(table) for table in PLANNER_TABLES}
    summary = liveness.group_summary(frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"])
    # A debug log read with its IR dumps keeps the planner's groups under the compiler collector's name.
    groups_info = (run.info.metadata.get("triton_ws", {}).get("groups", [])
                   or run.info.metadata.get("triton_ir", {}).get("planner", {}).get("groups", []))
    kernels = {info["group"]: info["kernel"] for info in groups_info if info.get("kernel")}
    notes = {info["group"]: list(info.get("notes") or []) for info in groups_info}
    choices = view.group_choices(frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"], frames["dot_nodes"],
                                 summary, kernels)
    return PlannerData(run_id, frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"], frames["dot_nodes"],
                       frames["dot_edges"], summary, tuple(choices), notes)


@lru_cache(maxsize=64)
def base_timeline(run_id: str, group: str, memory: str) -> go.Figure:
    """The liveness timeline without a selection (never mutate: callers copy or patch)."""
    figure = liveness_timeline(planner_data(run_id).buffers, group, memory)
    # Selection is drawn by the page (colours), not by plotly's own point selection.
    figure.update_layout(clickmode="event")  # margins and legend: the figure's own (axis repeated on top)
    return figure


@lru_cache(maxsize=64)
def base_live(run_id: str, group: str, memory: str) -> go.Figure:
    figure = live_memory_figure(planner_data(run_id).buffers, group, memory)
    figure.update_layout(height=280, margin={"t": 64},
                         legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"})
    return figure


@lru_cache(maxsize=64)
def graph_elements(run_id: str, group: str, partition: int | None) -> list[dict[str, Any]]:
    """The channel graph (one partition and its boundary, or all); big graphs get flat partition boxes."""
    data = planner_data(run_id)
    ops, channels = view.partition_view(data.ops, data.channels, group, partition)
    elements = channel_graph_elements(ops, channels, group)
    return flat_partitions(elements) if is_big_graph(run_id, group) else elements


@lru_cache(maxsize=64)
def is_big_graph(run_id: str, group: str) -> bool:
    """Whether the group's whole graph is drawn the fast way (decided once per group, filters included)."""
    data = planner_data(run_id)
    return is_big(channel_graph_elements(data.ops, data.channels, group))


def graph_stylesheet(run_id: str, group: str) -> list[dict[str, Any]]:
    """The channel graph's stylesheet; big graphs skip labels too small to read at the current zoom."""
    return list(CHANNEL_GRAPH_STYLESHEET) + (BIG_GRAPH_STYLESHEET if is_big_graph(run_id, group) else [])


def file_stem(run_id: str, group: str) -> str:
    return safe_file_stem(f"{run_id}-{group}")


# --- the view of one selection ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SelectionView:
    """What a selected buffer and a marked op change in the views."""

    buffer: view.BufferSelection | None
    mark: view.OpMark | None
    graph: dict[str, Any]  # planner_selection.graph_selection: applied to the graph in the browser
    marked_op: int | None


def selection_view(data: PlannerData, group: str, buffer_ref: tuple[str, int] | None,
                   op_ref: int | str | None) -> SelectionView:
    buffer = view.buffer_selection(data.buffers, data.channels, data.ops, group, buffer_ref)
    mark = view.mark_op(data.buffers, data.channels, data.ops, group, op_ref)
    graph = graph_selection(buffer.uids if buffer else (), buffer.nodes if buffer else (),
                            mark.nodes if mark else (), fade=not is_big_graph(data.run_id, group))
    return SelectionView(buffer, mark, graph, mark.op_id if mark else None)


def timeline_changes(run_id: str, group: str, memory: str, selection: SelectionView) -> dict[str, Any]:
    """The shapes of one liveness timeline for a selection (empty figures get none)."""
    base = base_timeline(run_id, group, memory)
    if not base.data or base.data[0].type != "bar":
        return {}
    chosen = selection.buffer.buffer_index if selection.buffer and selection.buffer.memory == memory else None
    return {"shapes": selection_shapes(base, buffer_index=chosen, marked_op=selection.marked_op)}


def live_changes(run_id: str, group: str, memory: str, selection: SelectionView) -> dict[str, Any]:
    base = base_live(run_id, group, memory)
    if not base.data:
        return {}
    return {"shapes": selection_shapes(base, marked_op=selection.marked_op, label=False)}


def chart_marks(run_id: str, group: str, selection: SelectionView) -> dict[str, dict[str, Any]]:
    """Per chart id: the shapes a selection draws (charts with nothing to mark are left out)."""
    marks = {}
    for memory in view.MEMORIES:
        for chart_id, changes in ((TIMELINE_IDS[memory], timeline_changes(run_id, group, memory, selection)),
                                  (LIVE_IDS[memory], live_changes(run_id, group, memory, selection))):
            if changes:
                marks[chart_id] = changes
    return marks


def apply_changes(base: go.Figure, changes: dict[str, Any]) -> go.Figure:
    """A copy of `base` with `timeline_changes` / `live_changes` applied (the page's first render)."""
    figure = go.Figure(base)
    if changes:
        figure.update_layout(shapes=changes["shapes"])
    return figure


# --- components ---------------------------------------------------------------------------------------------------

def _size_text(memory: str, row: dict[str, Any]) -> str:
    if memory == "SMEM":
        return format_bytes(row["bytes"]) if row.get("bytes") is not None else "size unknown"
    return f"{row['rows']}x{row['cols']} ({row['cols']} columns)" if row.get("cols") is not None else "size unknown"


def _op_text(row: dict[str, Any]) -> str:
    where = f"op {row['op_id']}" if row.get("op_id") is not None else row["node"]
    return f"{where} {row['op']}" + (f" ({row['role']})" if row.get("role") else "")


def _buffer_button(row: dict[str, Any], selected: tuple[str, int] | None) -> dbc.Button:
    key = view.buffer_key(row["memory"], row["buffer_index"])
    chosen = selected == (row["memory"], row["buffer_index"])
    return dbc.Button(f"{row['name']} · {_size_text(row['memory'], row)}",
                      id={"type": LIVE_BUFFER_BUTTON, "key": key}, size="sm",
                      color="success" if row["memory"] == "SMEM" else "danger", outline=not chosen,
                      className="me-1 mb-1 planner-live-buffer", title=f"select {row['memory']} buffer {key}")


def _totals_text(totals: dict[str, dict[str, int]]) -> str:
    smem, tmem = totals["SMEM"], totals["TMEM"]
    return (f"SMEM: {_count(smem['count'], 'buffer')}, {format_bytes(smem['size'])} of "
            f"{format_bytes(smem['capacity'])} · TMEM: {_count(tmem['count'], 'allocation')}, "
            f"{tmem['size']} of {tmem['capacity']} columns")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def selection_panel(selection: SelectionView) -> list[Any]:
    """What is selected, in words: the buffer with its channels and ops; the marked op and what is live there."""
    parts: list[Any] = []
    buffer = selection.buffer
    selected = (buffer.memory, buffer.buffer_index) if buffer else None
    if buffer:
        row = buffer.row
        ops_text = "; ".join(_op_text(op) for op in buffer.ops) or "none in the graph"
        parts.append(html.Div([
            html.Span(f"{buffer.memory} buffer ", className="text-muted"),
            html.B(row["name"], id="planner-selected-buffer"),
            html.Span(f" #{buffer.buffer_index} · {_size_text(buffer.memory, row)} · "
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
            lines.append(html.Div(f"live at op {mark.op_id}: {_totals_text(view.live_totals(mark.live))}",
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


def group_facts(data: PlannerData, group: str) -> html.Div:
    """Peaks against capacity and what the dumps lack, for one group."""
    rows = data.summary.filter(pl.col("group") == group)
    items: list[Any] = []
    if rows.height:
        row = rows.row(0, named=True)
        smem = ("no SMEM liveness graph" if row["peak_smem_bytes"] is None else
                f"peak live SMEM {format_bytes(row['peak_smem_bytes'])} at op {row['peak_smem_op']} "
                f"of {format_bytes(liveness.SMEM_CAPACITY_BYTES)}")
        tmem = ("no TMEM allocations" if row["peak_tmem_cols"] is None else
                f"peak TMEM {row['peak_tmem_cols']} of {liveness.TMEM_COLUMNS} columns at op {row['peak_tmem_op']}")
        items += [
            dbc.Badge(smem, color={True: "success", False: "danger"}.get(row["smem_fits"], "secondary"),
                      className="me-2"),
            dbc.Badge(tmem, color={True: "success", False: "danger"}.get(row["tmem_fits"], "secondary"),
                      className="me-2"),
            html.Small(f"{row['ops']} key ops · {row['channels']} channels · {row['partitions']} partitions",
                       className="text-muted"),
        ]
    notes = [html.Li(note) for note in data.notes.get(group, [])]
    return html.Div([html.Div(items), html.Ul(notes, className="small text-muted mb-0 mt-1") if notes else None],
                    id="planner-facts", className="mb-2")


def partition_options(data: PlannerData, group: str) -> list[dict[str, Any]]:
    return [{"label": f"partition {p}", "value": p} for p in liveness.partitions_of(data.ops, group)]


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


def planner_body(data: PlannerData, group: str, state: dict[str, Any]) -> list[Any]:
    """Everything below the group picker for one planner group, drawn for a selection state."""
    run_id, stem = data.run_id, file_stem(data.run_id, group)
    partition = view.parse_partition(state.get("partition"))
    selection = selection_view(data, group, view.parse_buffer_key(state.get("buffer")), view.parse_op(state.get("op")))
    timelines = []
    for memory in view.MEMORIES:
        figure = apply_changes(base_timeline(run_id, group, memory),
                               timeline_changes(run_id, group, memory, selection))
        timelines.append(html.Div(
            html.Div(chart(TIMELINE_IDS[memory], figure, f"{stem}-{memory.lower()}-liveness"),
                     style={"maxHeight": f"{TIMELINE_VIEW_HEIGHT}px", "overflowY": "auto"}),
            className="chart-card"))
    lives = [dbc.Col(html.Div(chart(LIVE_IDS[memory], apply_changes(base_live(run_id, group, memory),
                                                                      live_changes(run_id, group, memory, selection)),
                                    f"{stem}-live-{memory.lower()}"), className="chart-card"), lg=6)
             for memory in view.MEMORIES]
    controls = html.Div([
        html.Div([
            dbc.Label("Partition", html_for="planner-partition", className="me-2 mb-0 small text-muted"),
            dcc.Dropdown(id="planner-partition", options=partition_options(data, group), value=partition,
                         placeholder="all partitions", clearable=True, searchable=False, style={"minWidth": "170px"}),
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
        cyto.Cytoscape(id=GRAPH_ID, elements=graph_elements(run_id, group, partition), layout=CHANNEL_GRAPH_LAYOUT,
                       stylesheet=graph_stylesheet(run_id, group), minZoom=0.02, maxZoom=4, autoungrabify=True,
                       autounselectify=True,
                       boxSelectionEnabled=False, style={"height": f"{GRAPH_HEIGHT}px", "width": "100%",
                                                         "border": "1px solid #dee2e6", "borderRadius": "6px"}),
        _graph_legend(),
    ], className="chart-card")
    selected_key = state.get("buffer") if selection.buffer else None
    return [
        group_facts(data, group),
        controls,
        dcc.Store(id="planner-file-stem", data=stem),
        dcc.Store(id="planner-export-pending", data=False),
        dcc.Store(id="planner-tap"),
        dcc.Store(id="planner-graph-selection", data=selection.graph),
        dcc.Store(id="planner-graph-applied"),
        dbc.Row([dbc.Col(timelines, lg=5), dbc.Col(graph, lg=7)], className="g-3"),
        dbc.Row(lives, className="g-3"),
        dbc.Row([dbc.Col(buffer_table(data.buffers, group, memory, stem, selected_key), lg=6)
                 for memory in view.MEMORIES], className="g-3"),
        *channel_tables(data.ops, data.channels, group, stem),
    ]


def dot_body(data: PlannerData, group: str) -> list[Any]:
    """A plain DOT graph as Graphviz draws it; without Graphviz, a notice and the built-in layout."""
    drawn = graphviz_drawing(data.run_id, group)
    if drawn.drawing is not None:
        return graphviz_body(data.run_id, group, drawn)
    return [missing_notice(drawn.problem or "Graphviz drew nothing"), *builtin_dot_body(data, group)]


def builtin_dot_body(data: PlannerData, group: str) -> list[Any]:
    """A plain DOT graph drawn by cytoscape: clusters as compound nodes, laid out top to bottom."""
    stem = file_stem(data.run_id, group)
    elements = dot_graph_elements(data.dot_nodes, data.dot_edges, group)
    return [
        html.Div([
            html.Small("A plain DOT graph (not a planner dump): shown as drawn, without liveness.",
                       className="text-muted me-3"),
            dbc.Button("Graph as PNG", id="planner-dot-png", size="sm", color="primary", outline=True),
        ], className="d-flex align-items-center mb-2"),
        dcc.Store(id="planner-file-stem", data=stem),
        html.Div(cyto.Cytoscape(id=DOT_GRAPH_ID, elements=elements, layout=DOT_GRAPH_LAYOUT,
                                stylesheet=DOT_GRAPH_STYLESHEET, minZoom=0.05, maxZoom=4,
                                style={"height": f"{GRAPH_HEIGHT}px", "width": "100%"}), className="chart-card"),
    ]


def group_body(data: PlannerData, choice: view.GroupChoice | None, state: dict[str, Any]) -> list[Any]:
    if choice is None:
        return [dbc.Alert("This run has planner tables but no group in them.", color="info")]
    if choice.kind == "dot":
        return dot_body(data, choice.group)
    return planner_body(data, choice.group, state)


def view_state(group: str | None, partition: int | None = None, buffer: str | None = None,
               op: int | str | None = None) -> dict[str, Any]:
    """The page's URL state; empty values are dropped from the address bar."""
    return {"group": group or "", "partition": "" if partition is None else partition,
            "buffer": buffer or "", "op": "" if op is None else op}
