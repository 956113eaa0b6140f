"""`/memory`: Device memory per operation: DRAM, L1, L1_SMALL, TRACE.

Runs with CUDA allocator memory (and no Tenstorrent memory) get the view of
`memory_cuda` instead, with its own URL state.

URL state: run, rank, ops (`a-b`: a brushed op range; filters the table,
statistics and growth bars), op (the clicked op: its detail and a line on every
track), optype (comma-separated op types: highlighted on every track, filter the
table), program (comma-separated: filter the table and growth bars), unit
(`device` for device totals; per bank by default), peaks (`profiler` for the
profiler's view of the peaks; the true peak by default).
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.analysis import memory_view as view
from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.shell import url_state_store
from dashboard.pages import (
    memory_callbacks,  # noqa: F401  (registers the page's callbacks)
    memory_cuda,
)
from dashboard.pages.memory_parts import (
    CURVES_ID,
    GROWTH_ID,
    curves_figure,
    detail_panel,
    growth_figure,
    memory_data,
    ops_table,
    peak_cards,
    run_ranks,
    stats_panel,
)

dash.register_page(__name__, path="/memory", name="Memory", order=4, title="Memory · dashboard")

PATH = "/memory"
EVIDENCE = "memory"
PEAK_HELP = ("True peak: the highest of all snapshots, including the ones taken just before deallocate and "
             "get_device ops. Memory stays held until a deallocate runs, so this is the real high-water mark. "
             "Profiler's view: the memory profiler's JSON leaves those ops out, so its peak skips their "
             "snapshots; it can only be lower, and its culprit is the previous op it kept.")


def _radio(component_id: str, label: str, options: dict[str, str], value: str, help_text: str | None = None) -> Any:
    parts: list[Any] = [dbc.Label(label, className="me-2 mb-0 small text-muted")]
    parts.append(dbc.RadioItems(id=component_id, options=[{"label": v, "value": k} for k, v in options.items()],
                                value=value, inline=True, className="mb-0"))
    if help_text:
        parts += [dbc.Badge("?", id=f"{component_id}-help", pill=True, color="secondary", className="ms-1",
                            style={"cursor": "help"}),
                  dbc.Tooltip(help_text, target=f"{component_id}-help", placement="bottom")]
    return html.Div(parts, className="d-flex align-items-center me-4")


def _dropdown(component_id: str, label: str, counts: tuple[tuple[str, int], ...], value: tuple[str, ...],
              placeholder: str, width: str) -> Any:
    return html.Div([
        dbc.Label(label, html_for=component_id, className="me-2 mb-0 small text-muted"),
        dcc.Dropdown(id=component_id, options=[{"label": f"{name} ({n:,})", "value": name} for name, n in counts],
                     value=list(value), multi=True, placeholder=placeholder, style={"minWidth": width}),
    ], className="d-flex align-items-center me-3")


def _rank(value: Any, ranks: tuple[int, ...]) -> int:
    try:
        rank = int(value)
    except (TypeError, ValueError):
        return ranks[0] if ranks else 0
    return rank if rank in ranks else (ranks[0] if ranks else 0)


def layout(run: str | None = None, rank: str | None = None, **query: Any) -> html.Div:
    cuda = memory_cuda.cuda_run(run)  # CUDA allocator memory: its own view, picked by the run's evidence
    if cuda is not None:
        return memory_cuda.layout(cuda, rank, query)
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Memory", chosen, "Device memory per operation: DRAM, L1, L1_SMALL, TRACE")
    if chosen is None:
        return html.Div([header, notice], id="memory-page")
    ranks = run_ranks(chosen.id)
    state_rank = _rank(rank, ranks)
    data = memory_data(chosen.id, state_rank)
    if not data.buffer_types:
        return html.Div([header, dbc.Alert(
            f"Run “{chosen.id}” has memory snapshots, but no buffer type has any capacity (every "
            "MemoryView reported 0 bytes per bank): there is nothing to draw.", color="info")], id="memory-page")
    state = view.parse_state(query, data)
    url = {**state.url(), "rank": state_rank if len(ranks) > 1 else ""}
    controls = html.Div([
        _radio("memory-unit", "Sizes", view.UNITS, state.unit),
        _radio("memory-peaks", "Peaks", view.PEAK_VIEWS, state.peaks, PEAK_HELP),
        _dropdown("memory-optype", "Op type", data.op_types, state.optypes, "highlight op types…", "260px"),
        _dropdown("memory-program", "Program", data.programs, state.programs, "all programs", "200px"),
        html.Div([
            dbc.Badge(id="memory-range-text", color="warning", text_color="dark", className="me-1"),
            dbc.Button("clear", id="memory-range-clear", size="sm", color="link", className="p-0"),
        ], id="memory-range-chip", className="d-flex align-items-center me-3",
            style={} if state.ops else {"display": "none"}),
        dbc.Button("clear op", id="memory-op-clear", size="sm", color="secondary", outline=True),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    hint = html.Small(
        "Drag across the curves to brush an op range (it filters the table, statistics and growth bars); use the "
        "zoom tool to zoom in at full detail, double-click to reset. Click a point, a bar or a row to open an op. "
        "Grey bands: const-eval programs (weights prepared on the device).", className="text-muted d-block mb-2")
    return html.Div([
        header,
        dcc.Store(id="memory-run", data={"run": chosen.id, "rank": state_rank}),
        dcc.Store(id="memory-view", data=state.store()),
        dcc.Store(id="memory-table-version", data=0),
        dcc.Store(id="memory-table-purged"),
        dcc.Download(id="memory-csv-download"),
        url_state_store("memory", url),
        controls,
        hint,
        dbc.Row(peak_cards(data, state), id="memory-peak-cards", className="g-2 mb-1"),
        html.Div(chart(CURVES_ID, curves_figure(data, state, chosen.id), f"{chosen.id}-memory-curves"),
                 className="chart-card"),
        dbc.Row([
            dbc.Col(html.Div(chart(GROWTH_ID, growth_figure(data, state), f"{chosen.id}-memory-growth"),
                             className="chart-card"), lg=6),
            dbc.Col([
                html.Div(stats_panel(data, state), id="memory-stats", className="chart-card p-3"),
                html.Div(detail_panel(data, state), id="memory-detail", className="chart-card p-3"),
            ], lg=6),
        ], className="g-3"),
        html.Div([
            html.Div([
                html.H6("Ops", className="mb-0 me-3"),
                html.Small(view.describe(state, view.table_for(data, state).height), id="memory-table-count",
                           className="text-muted me-3"),
                dbc.Button("Download CSV", id="memory-csv", size="sm", color="primary", outline=True),
                html.Small("Δ: what the op left behind (the next snapshot minus its own). Click a header to "
                           "sort; deallocate / get_device ops are not listed.", className="text-muted ms-3"),
            ], className="d-flex align-items-center flex-wrap mb-2"),
            AfterCharts(ops_table(data, state), min_height=420),  # drawn after the curves
        ], className="chart-card"),
    ], id="memory-page")
