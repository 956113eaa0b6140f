"""Pieces of `/memory`: the cached run data, the curves figure (whole or as a Patch), panels, the grid.

The curves figure is built once per (run, rank, unit, peak view) and cached as a
plain dict. A view change reuses it: the range band and selected-op line are
shapes, the highlighted ops fill one marker trace per track kept for them, and an
x-zoom swaps the curve traces for the zoomed window at full detail. The
callbacks send those pieces as a plotly Patch, not the whole figure again.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
import polars as pl
from dash import Patch, html

from dashboard.analysis import memory_view as view
from dashboard.analysis.memory_view import MemoryData, ViewState
from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.memory import (
    mark_shapes,
    memory_curves_figure,
    top_growth_figure,
    track_curves,
    track_points,
)
from dashboard.layouts.context import current_store

CURVES_ID, GROWTH_ID, TABLE_ID = "memory-curves", "memory-growth", "memory-table"
PEAK_BUTTON = "memory-peak-op"
_build_lock = threading.Lock()


# ---- run data -----------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def _ranks(run_id: str, created: str) -> tuple[int, ...]:
    return tuple(view.ranks_of(current_store().open(run_id).frame("op_memory").select("rank")))


def run_ranks(run_id: str) -> tuple[int, ...]:
    run = current_store().open(run_id)
    return _ranks(run.id, run.info.created)


@lru_cache(maxsize=4)
def _prepared(run_id: str, created: str, rank: int) -> MemoryData:
    run = current_store().open(run_id)
    meta = run.frame("op_meta") if run.has("op_meta") else None
    data = view.prepare(run.frame("op_memory"), meta, rank)
    # Warm what the first page load asks for: the whole-run table, statistics and growth.
    view.op_table(data, view.DEFAULT_UNIT)
    view.range_view(data, None)
    view.growth_view(data, None, ())
    return data


def memory_data(run_id: str, rank: int) -> MemoryData:
    """One rank of a run, prepared once per process (~1 s for 100 k ops; instant afterwards)."""
    run = current_store().open(run_id)
    with _build_lock:  # two first requests for one run prepare it once
        return _prepared(run.id, run.info.created, rank)


def track_units(data: MemoryData, unit: str) -> dict[str, tuple[float, str]]:
    """Per drawn buffer type, (divisor, label) as on its track: `MiB/bank`, `GiB (device)`."""
    suffix = "/bank" if unit == "bank" else " (device)"
    return {bt: (lambda d: (d[0], d[1] + suffix))(bytes_unit_for(float(curve["capacity"].max() or 0)))
            for bt, curve in data.curves[unit].items()}


# ---- the curves figure --------------------------------------------------------------------------

@lru_cache(maxsize=8)
def _base_figure(data: MemoryData, unit: str, peaks: str, title: str) -> dict[str, Any]:
    figure = memory_curves_figure(
        data.op_memory, per_bank=unit == "bank", rank=data.rank, peak_rows=data.peaks[peaks],
        highlight_slots=True, max_points=view.MAX_CURVE_POINTS, title=title)
    # Fragmentation lines share their buffer type's legend group (and colour): no entries of their own.
    figure.update_traces(showlegend=False, selector=lambda trace: (trace.name or "").endswith("fragmentation"))
    figure.update_xaxes(tickformat=",d")
    figure.update_layout(dragmode="select", selectdirection="h", clickmode="event", uirevision=f"{unit}-{peaks}",
                         legend={"orientation": "h", "y": 1.03, "yanchor": "bottom", "x": 1, "xanchor": "right"},
                         margin={"t": 130})
    return figure.to_plotly_json()


def base_figure(data: MemoryData, state: ViewState, run_id: str) -> dict[str, Any]:
    title = f"Device memory before each op · {run_id}"
    return _base_figure(data, state.unit, state.peaks, title)


def _band(state: ViewState) -> tuple[int, int] | None:
    """The brushed range as a band, unless it is the zoomed window itself (it would tint everything)."""
    return state.ops if state.ops is not None and state.ops != state.zoom else None


def _shapes(base: dict[str, Any], state: ViewState) -> list[dict]:
    meta = base["layout"]["meta"]
    return list(base["layout"].get("shapes", ())) + mark_shapes(meta["rows"], _band(state), state.op)


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Patch values: numeric arrays stay numpy (Dash sends them base64-packed), others become lists."""
    return {key: value.tolist() if getattr(value, "dtype", None) is not None and value.dtype.kind == "O" else value
            for key, value in values.items()}


def _highlight_traces(data: MemoryData, base: dict[str, Any], state: ViewState) -> dict[int, dict[str, Any]]:
    rows = view.highlight_rows(data, state.unit, state.optypes, state.programs, state.zoom)
    updates = {}
    for position, track in enumerate(base["layout"]["meta"]["tracks"]):
        frame = rows.get(track["buffer_type"])
        if frame is None or track.get("highlight") is None:
            continue
        points = track_points(frame, "allocated", track["divisor"], view.MAX_HIGHLIGHT_POINTS)
        updates[track["highlight"]] = {**_plain(points), "showlegend": position == 0 and frame.height > 0}
    return updates


def _curve_traces(data: MemoryData, base: dict[str, Any], state: ViewState) -> dict[int, dict[str, Any]]:
    """The curve traces for the zoomed window at full detail, or the whole-run ones without a zoom."""
    meta = base["layout"]["meta"]
    indices = [track[c] for track in meta["tracks"] for c in ("allocated", "free", "largest_free")]
    indices += list(meta["fragmentation"].values())
    if state.zoom is None:
        return {i: {key: base["data"][i][key] for key in ("x", "y", "customdata") if key in base["data"][i]}
                for i in indices}
    rows = view.window_rows(data, state.unit, state.zoom)
    updates = {}
    for track in meta["tracks"]:
        curves = track_curves(rows[track["buffer_type"]], track["divisor"], view.MAX_ZOOM_POINTS)
        for column, points in curves.items():
            updates[track[column]] = _plain(points)
    for bt, index in meta["fragmentation"].items():
        updates[index] = _plain(track_points(rows[bt], "fragmentation", 0.01, view.MAX_ZOOM_POINTS,
                                             by="fragmentation"))
    return updates


def _x_range(base: dict[str, Any], state: ViewState) -> dict[str, Any]:
    rows = base["layout"]["meta"]["rows"]
    axes = ["xaxis"] + [f"xaxis{row}" for row in range(2, rows + 1)]
    if state.zoom is None:
        return {axis: {"autorange": True} for axis in axes}
    return {axis: {"range": [state.zoom[0] - 0.5, state.zoom[1] + 0.5], "autorange": False} for axis in axes}


def curves_figure(data: MemoryData, state: ViewState, run_id: str) -> dict[str, Any]:
    """The whole figure for a state (first load, or a new unit / peak view)."""
    base = base_figure(data, state, run_id)
    traces = list(base["data"])
    for index, values in _highlight_traces(data, base, state).items():
        traces[index] = {**traces[index], **values}
    if state.zoom is not None:
        for index, values in _curve_traces(data, base, state).items():
            traces[index] = {**traces[index], **values}
    layout = {**base["layout"], "shapes": _shapes(base, state)}
    for axis, settings in _x_range(base, state).items():
        layout[axis] = {**layout.get(axis, {}), **settings}
    return {**base, "data": traces, "layout": layout}


def curves_patch(data: MemoryData, state: ViewState, before: ViewState, run_id: str,
                 reset_token: str | None = None) -> Patch:
    """Only what changed between two states of one figure (same unit and peak view).

    `reset_token` also resets the x axes: plotly keeps a user's zoom across updates
    while `uirevision` stays the same, so a new one hands the axes back to the figure.
    """
    base = base_figure(data, state, run_id)
    patch = Patch()
    if reset_token is not None:
        patch["layout"]["uirevision"] = f"{state.unit}-{state.peaks}-{reset_token}"
        for axis, settings in _x_range(base, state).items():
            for key, value in settings.items():
                patch["layout"][axis][key] = value
    if (_band(state), state.op) != (_band(before), before.op):
        patch["layout"]["shapes"] = _shapes(base, state)
    if (state.optypes, state.programs) != (before.optypes, before.programs) or (
            state.optypes and state.zoom != before.zoom):
        for index, values in _highlight_traces(data, base, state).items():
            for key, value in values.items():
                patch["data"][index][key] = value
    if state.zoom != before.zoom:
        for index, values in _curve_traces(data, base, state).items():
            for key, value in values.items():
                patch["data"][index][key] = value
    return patch


def growth_figure(data: MemoryData, state: ViewState) -> Any:
    growth = view.growth_view(data, state.ops, state.programs)
    where = f"ops {state.ops[0]:,}–{state.ops[1]:,}" if state.ops else "whole run"
    if state.programs:
        where += " · " + ", ".join(state.programs)
    figure = top_growth_figure(growth, per_bank=state.per_bank, selected_op=state.op,
                               title=f"Top {view.TOP_GROWTH} ops by memory left behind ({where})")
    figure.update_layout(clickmode="event")
    return figure


# ---- panels -------------------------------------------------------------------------------------

def _size(value: Any, banks: Any, per_bank: bool, signed: bool = False) -> str:
    if value is None:
        return "–"
    amount = value if per_bank else value * (banks or 1)
    text = format_bytes(amount, 4)
    return f"+{text}" if signed and amount > 0 else text


def _op_name(mlir_op: Any, op_index: Any, loc: Any = None) -> list[Any]:
    if op_index is None:
        return [html.Span("(before the first op)", className="text-muted")]
    parts: list[Any] = [html.Span(f"#{op_index} ", className="text-muted"), html.Code(mlir_op or "?")]
    if loc:
        parts.append(html.Span(f" ({loc})", className="text-muted small"))
    return parts


def peak_cards(data: MemoryData, state: ViewState) -> list[Any]:
    """One card per buffer type: the peak, the snapshot it was seen at, and the op that caused it."""
    peaks = data.peaks[state.peaks]
    cards = []
    for bt in data.buffer_types:
        found = peaks.filter(pl.col("buffer_type") == bt)
        if found.is_empty():
            continue
        p = found.row(0, named=True)
        value = _size(p["allocated_per_bank"], p["banks"], state.per_bank)
        unit = "per bank" if state.per_bank else "device total"
        culprit = p["culprit_op_index"]
        body = [
            html.Div([html.Span(f"{bt} peak", className="text-muted small me-2"),
                      html.Span(f"{p['utilisation']:.0%} of capacity", className="small text-muted")]),
            html.Div([html.Span(value, className="fs-5 fw-semibold"), html.Small(f" {unit}", className="text-muted")],
                     className=f"memory-peak-value peak-{bt}"),
            html.Div(["snapshot before ", *_op_name(p["next_mlir_op"], p["peak_op_index"], p["next_loc"])],
                     className="small"),
            html.Div(["allocated by ", *_op_name(p["culprit_mlir_op"], culprit, p["culprit_loc"]),
                      html.Span(f" {_size(p['culprit_delta_per_bank'], p['banks'], state.per_bank, True)}",
                                className="small text-danger")],
                     className="small memory-peak-culprit"),
        ]
        if culprit is not None:
            body.append(dbc.Button("show this op", id={"type": PEAK_BUTTON, "bt": bt}, size="sm", color="link",
                                   className="p-0 mt-1"))
        cards.append(dbc.Col(dbc.Card(dbc.CardBody(body, className="py-2"), className="h-100 memory-peak-card"),
                             md=12 // max(len(data.buffer_types), 1), className="mb-2"))
    return cards


def stats_panel(data: MemoryData, state: ViewState) -> list[Any]:
    """The brushed range's statistics per buffer type (the whole run without a range)."""
    stats = view.range_view(data, state.ops)
    if stats.is_empty():
        return [html.P("No ops in this range.", className="text-muted mb-0")]
    first = stats.row(0, named=True)
    title = (f"Ops {state.ops[0]:,}–{state.ops[1]:,}" if state.ops else "Whole run")
    head = html.Tr([html.Th(""), html.Th("start → end"), html.Th("peak (op)"), html.Th("grew"), html.Th("freed"),
                    html.Th("max frag.")])
    body = []
    for row in stats.iter_rows(named=True):
        banks = row["banks"]
        body.append(html.Tr([
            html.Th(row["buffer_type"]),
            html.Td(f"{_size(row['start_per_bank'], banks, state.per_bank)} → "
                    f"{_size(row['end_per_bank'], banks, state.per_bank)}"),
            html.Td(f"{_size(row['peak_per_bank'], banks, state.per_bank)} (#{row['peak_op_index']})"),
            html.Td(_size(row["growth_per_bank"], banks, state.per_bank)),
            html.Td(_size(row["freed_per_bank"], banks, state.per_bank)),
            html.Td(f"{(row['max_fragmentation'] or 0):.0%}"),
        ]))
    return [
        html.Div([html.H6(title, className="mb-0 me-2", id="memory-stats-title"),
                  html.Small(f"{first['ops']:,} ops · {first['deallocates']:,} deallocates · "
                             f"{'per bank' if state.per_bank else 'device total'}", className="text-muted")],
                 className="d-flex align-items-baseline flex-wrap mb-1"),
        dbc.Table([html.Thead(head), html.Tbody(body)], size="sm", className="mb-0 small memory-stats-table"),
    ]


def _listing(values: Any) -> str:
    return ", ".join(str(v) for v in values) if values else "–"


def detail_panel(data: MemoryData, state: ViewState) -> list[Any]:
    """The clicked op: its metadata (op_meta) and the memory before / after it per buffer type."""
    if state.op is None:
        return [html.P("Click an op on the curves, a bar or a table row to see it here.",
                       className="text-muted mb-0 small")]
    detail = view.op_detail(data, state.op)
    summary = view.op_summary(data, state.op) or {}
    meta = detail.row(0, named=True) if detail.height else {}
    header = html.Div([
        html.H6([html.Span(f"op #{state.op} ", className="text-muted"),
                 html.Code(summary.get("mlir_op") or "?", id="memory-detail-op")], className="mb-1"),
        dbc.Badge(summary.get("op_type") or "?", color="secondary", className="me-1"),
        dbc.Badge(summary.get("program") or "?", color="light", text_color="dark", className="me-1"),
        html.Small(summary.get("loc") or "", className="text-muted"),
    ], className="mb-2")
    fields = [("result", meta.get("result")), ("inputs", _listing(meta.get("inputs"))),
              ("input shapes", _listing(meta.get("input_shapes"))),
              ("input dtypes", _listing(meta.get("input_dtypes"))),
              ("output shapes", _listing(meta.get("output_shapes"))),
              ("output dtypes", _listing(meta.get("output_dtypes"))), ("layouts", _listing(meta.get("layouts"))),
              ("buffer types", _listing(meta.get("buffer_types"))), ("attributes", meta.get("attributes")),
              ("const-eval graph", meta.get("const_eval_graph")), ("profiler index", meta.get("profiler_index"))]
    items: list[Any] = []
    for name, value in fields:
        items += [html.Dt(name, className="col-4 small text-muted"),
                  html.Dd(str(value) if value not in (None, "") else "–", className="col-8 small mb-1 text-break")]
    listing = html.Dl(items, className="row mb-2")
    memory_rows = [html.Tr([
        html.Th(row["buffer_type"]),
        html.Td(_size(row["before_per_bank"], row["banks"], state.per_bank)),
        html.Td(_size(row["after_per_bank"], row["banks"], state.per_bank)),
        html.Td(_size(row["delta_per_bank"], row["banks"], state.per_bank, signed=True)),
        html.Td(_size(row["largest_free_per_bank"], row["banks"], state.per_bank)),
        html.Td(f"{row['fragmentation']:.0%}"),
    ]) for row in detail.iter_rows(named=True)]
    memory = dbc.Table([html.Thead(html.Tr([html.Th(""), html.Th("before"), html.Th("after"), html.Th("left behind"),
                                            html.Th("largest free"), html.Th("frag.")])),
                        html.Tbody(memory_rows)], size="sm", className="mb-1 small")
    note = html.Small("Snapshot #i is taken before op i runs, so what op i allocated shows at snapshot i+1.",
                      className="text-muted")
    return [header, listing, memory, note]


# ---- the ops table ------------------------------------------------------------------------------

def table_columns(data: MemoryData, unit: str) -> list[dict[str, Any]]:
    """Op columns, then allocated-before and delta per buffer type in its track's unit."""
    columns: list[dict[str, Any]] = [
        {"field": "op_index", "headerName": "op", "pinned": "left", "width": 90},
        {"field": "op_type", "headerName": "op type", "width": 150},
        {"field": "mlir_op", "headerName": "MLIR op", "width": 170},
        {"field": "loc", "headerName": "loc", "width": 170, "tooltipField": "loc"},
        {"field": "program", "headerName": "program", "width": 120},
    ]
    for bt, (divisor, label) in track_units(data, unit).items():
        scale = f"params.value == null ? '' : d3.format('{{fmt}}')(params.value / {divisor})"
        columns += [
            {"field": f"{bt}_allocated", "headerName": f"{bt} before ({label})", "type": "rightAligned",
             "width": 150, "valueFormatter": {"function": scale.replace("{fmt}", ",.3f")}},
            {"field": f"{bt}_delta", "headerName": f"{bt} Δ ({label})", "type": "rightAligned", "width": 140,
             "valueFormatter": {"function": scale.replace("{fmt}", "+,.3f")},
             "cellStyle": {"styleConditions": [
                 {"condition": "params.value > 0", "style": {"color": "#b02a37"}},
                 {"condition": "params.value < 0", "style": {"color": "#146c43"}}]}},
        ]
    columns += [
        {"field": "output_shapes", "headerName": "output shapes", "width": 170, "tooltipField": "output_shapes"},
        {"field": "input_shapes", "headerName": "input shapes", "width": 200, "tooltipField": "input_shapes"},
        {"field": "profiler_index", "headerName": "profiler #", "width": 100, "type": "rightAligned"},
    ]
    return columns


def selected_row_style(op: int | None) -> dict[str, Any]:
    """The selected op's row, tinted like its line on the curves."""
    if op is None:
        return {"styleConditions": []}
    return {"styleConditions": [{"condition": f"params.data && params.data.op_index === {int(op)}",
                                 "style": {"backgroundColor": "#fde8d7", "fontWeight": "600"}}]}


def ops_table(data: MemoryData, state: ViewState) -> dag.AgGrid:
    """Infinite scrolling: the grid asks the server for blocks, so 100 k ops never travel at once."""
    return dag.AgGrid(
        id=TABLE_ID, columnDefs=table_columns(data, state.unit), rowModelType="infinite",
        getRowId="params.data.op_index + ''", getRowStyle=selected_row_style(state.op),
        defaultColDef={"sortable": True, "resizable": True, "filter": False, "minWidth": 80,
                       "wrapHeaderText": True, "autoHeaderHeight": True},
        dashGridOptions={"cacheBlockSize": 200, "maxBlocksInCache": 50, "infiniteInitialRowCount": 200,
                         "rowBuffer": 20, "animateRows": False, "enableCellTextSelection": True,
                         "tooltipShowDelay": 300},
        className="ag-theme-alpine", style={"height": "420px", "width": "100%"},
    )
