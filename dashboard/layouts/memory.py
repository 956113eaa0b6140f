"""The Dash pieces of `/memory` (Tenstorrent): controls, peak cards, range statistics, op detail, the ops grid.

No callbacks here (they live in `pages.memory`); the numbers come from
`analysis.memory_view` for a `views.memory.State`.
"""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
import polars as pl
from dash import html

from dashboard.analysis.units import format_bytes
from dashboard.collectors.tt.runtime_log import PROGRAM_LEVEL
from dashboard.layouts.select import multi_picker
from dashboard.layouts.static_html import static_html
from dashboard.store import Run
from dashboard.views import memory_data as analysis
from dashboard.views.memory import State, selected_row_style, table_columns
from dashboard.views.memory_data import MemoryData

CURVES_ID, GROWTH_ID, TABLE_ID = "memory-curves", "memory-growth", "memory-table"
PEAK_BUTTON = "memory-peak-op"


# ---- controls -----------------------------------------------------------------------------------

def radio(component_id: str, label: str, options: dict[str, str], value: str, help_text: str | None = None) -> Any:
    parts: list[Any] = [dbc.Label(label, className="me-2 mb-0 small text-muted")]
    parts.append(dbc.RadioItems(id=component_id, options=[{"label": v, "value": k} for k, v in options.items()],
                                value=value, inline=True, className="mb-0"))
    if help_text:
        parts += [dbc.Badge("?", id=f"{component_id}-help", pill=True, color="secondary", className="ms-1",
                            style={"cursor": "help"}),
                  dbc.Tooltip(help_text, target=f"{component_id}-help", placement="bottom")]
    return html.Div(parts, className="d-flex align-items-center me-4")


def dropdown(component_id: str, label: str, counts: tuple[tuple[str, int], ...], value: tuple[str, ...],
             placeholder: str, width: str) -> Any:
    return html.Div([
        dbc.Label(label, html_for=component_id, className="me-2 mb-0 small text-muted"),
        multi_picker(component_id, [{"label": f"{name} ({n:,})", "value": name} for name, n in counts], value,
                     placeholder=placeholder, min_width=width),
    ], className="d-flex align-items-center me-3")


def granularity_note(run: Run) -> Any:
    """For a log with program-level memory states only: what its points are and that per-op detail is absent."""
    if (run.info.metadata.get("tt_memory") or {}).get("granularity") != "program":
        return None
    return dbc.Alert(f"This log has {PROGRAM_LEVEL}. Each point is one snapshot before or after a program submit.",
                     color="info", className="py-2 small", id="memory-program-level")


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


def peak_cards(data: MemoryData, state: State) -> list[Any]:
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
        body: list[Any] = [static_html([  # read-only: one component instead of ~15 (layouts/static_html.py)
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
        ])]
        if culprit is not None:
            body.append(dbc.Button("show this op", id={"type": PEAK_BUTTON, "bt": bt}, size="sm", color="link",
                                   className="p-0 mt-1"))
        cards.append(dbc.Col(dbc.Card(dbc.CardBody(body, className="py-2"), className="h-100 memory-peak-card"),
                             md=12 // max(len(data.buffer_types), 1), className="mb-2"))
    return cards


def stats_panel(data: MemoryData, state: State) -> list[Any]:
    """The brushed range's statistics per buffer type (the whole run without a range)."""
    stats = analysis.range_view(data, state.ops)
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
        static_html(dbc.Table([html.Thead(head), html.Tbody(body)], size="sm",
                              className="mb-0 small memory-stats-table")),
    ]


def _listing(values: Any) -> str:
    return ", ".join(str(v) for v in values) if values else "–"


def detail_panel(data: MemoryData, state: State) -> list[Any]:
    """The clicked op: its metadata (op_meta) and the memory before / after it per buffer type."""
    if state.op is None:
        return [html.P("Click an op on the curves, a bar or a table row to see it here.",
                       className="text-muted mb-0 small")]
    detail = analysis.op_detail(data, state.op)
    summary = analysis.op_summary(data, state.op) or {}
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

def ops_table(data: MemoryData, state: State) -> dag.AgGrid:
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
