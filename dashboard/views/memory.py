"""`/memory` for Tenstorrent runs: device memory per operation (DRAM, L1, L1_SMALL, TRACE).

URL state: run, rank (the run's first rank by default), ops (`a-b`: a brushed
op range; filters the table, statistics and growth bars), op (the clicked op:
its detail and a line on every track), optype (comma-separated op types:
highlighted on every track, filter the table), program (comma-separated: filter
the table and growth bars), unit (`device` for device totals; per bank by
default), peaks (`profiler` for the profiler's view of the peaks; the true peak
by default). The curves' x-zoom is part of the state but not of the URL.

`figures(run, state)` is what the page first draws and what the PNG export
draws; the page's callbacks send the same figures, or their changes as Patches
(`views.memory_curves`). Runs with CUDA allocator memory get `views.memory_cuda`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go

from dashboard.analysis.units import bytes_unit_for
from dashboard.figures.memory import memory_curves_figure, top_growth_figure
from dashboard.figures.plain import plain
from dashboard.store import Run
from dashboard.views import memory_curves, params
from dashboard.views import memory_data as analysis
from dashboard.views.cache import per_run
from dashboard.views.memory_data import DEFAULT_PEAKS, DEFAULT_UNIT, PEAK_VIEWS, UNITS, MemoryData
from dashboard.views.state import ViewState, param

# Export name of each chart -> the page's component id.
CHARTS = {"memory-curves": "memory-curves", "top-growth": "memory-growth"}
_build_lock = threading.Lock()


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())  # None: the run's first rank
    ops: tuple[int, int] | None = param(params.int_range("ops"))
    op: int | None = param(params.number("op"))
    optypes: tuple[str, ...] = param(params.names("optype"), ())
    programs: tuple[str, ...] = param(params.names("program"), ())
    unit: str = param(params.choice("unit", UNITS, DEFAULT_UNIT), DEFAULT_UNIT)
    peaks: str = param(params.choice("peaks", PEAK_VIEWS, DEFAULT_PEAKS), DEFAULT_PEAKS)
    zoom: tuple[int, int] | None = None  # the curves' x-zoom: kept by the page (`store`), not in the URL

    @property
    def per_bank(self) -> bool:
        return self.unit == "bank"

    def resolved(self, run: Run) -> Self:
        """A rank the run has (else its first), and only the range, op and filters that exist in that rank."""
        rank = params.resolve_rank(self.rank, run_ranks(run))
        return checked(memory_data(run, rank), self.replace(rank=rank))

    def store(self) -> dict[str, str]:
        """What the page keeps between callbacks: the URL state and the zoom."""
        return {**self.url_state(), "zoom": ZOOM.format(self.zoom)}

    @classmethod
    def from_store(cls, stored: dict[str, Any] | None, run: Run) -> Self:
        stored = stored or {}
        zoom = ZOOM.parse(None if stored.get("zoom") is None else str(stored["zoom"]))
        return cls.from_query(stored).replace(zoom=zoom).resolved(run)


ZOOM = params.int_range("zoom")


def checked(data: MemoryData, state: State) -> State:
    """`state` keeping only what exists in this rank of the run: a stale link opens without its broken parts."""
    known_types = {name for name, _ in data.op_types}
    known_programs = {name for name, _ in data.programs}
    return state.replace(
        ops=analysis.clamp_range(data, state.ops),
        op=analysis.existing_op(data, state.op),
        optypes=tuple(t for t in state.optypes if t in known_types),
        programs=tuple(p for p in state.programs if p in known_programs),
        zoom=analysis.clamp_range(data, state.zoom),
    )


# ---- run data -----------------------------------------------------------------------------------

@per_run(4)
def run_ranks(run: Run) -> tuple[int, ...]:
    return tuple(analysis.ranks_of(run.frame("op_memory").select("rank"))) if run.has("op_memory") else ()


@per_run(4)
def _prepared(run: Run, rank: int) -> MemoryData:
    meta = run.frame("op_meta") if run.has("op_meta") else None
    data = analysis.prepare(run.frame("op_memory"), meta, rank)
    # Warm what the first page load asks for: the whole-run table, statistics and growth.
    analysis.op_table(data, DEFAULT_UNIT)
    analysis.range_view(data, None)
    analysis.growth_view(data, None, ())
    return data


def memory_data(run: Run, rank: int | None) -> MemoryData:
    """One rank of a run (None: its first), prepared once per process (~1 s for 100 k ops; instant afterwards)."""
    ranks = run_ranks(run)
    chosen = rank if rank is not None else (ranks[0] if ranks else 0)
    with _build_lock:  # two first requests for one run prepare it once
        return _prepared(run, chosen)


def data_for(run: Run, state: State) -> MemoryData:
    return memory_data(run, state.rank)


# ---- figures ------------------------------------------------------------------------------------

@per_run(8)
def base_figure(run: Run, rank: int, unit: str, peaks: str) -> dict[str, Any]:
    """The curves of one rank, unit and peak view without any state (never mutate: callers copy)."""
    data = memory_data(run, rank)
    figure = memory_curves_figure(
        data.op_memory, per_bank=unit == "bank", rank=data.rank, peak_rows=data.peaks[peaks],
        highlight_slots=True, max_points=analysis.MAX_CURVE_POINTS, title=f"Device memory before each op · {run.id}")
    # Fragmentation lines share their buffer type's legend group (and colour): no entries of their own.
    figure.update_traces(showlegend=False, selector=lambda trace: (trace.name or "").endswith("fragmentation"))
    figure.update_xaxes(tickformat=",d")
    figure.update_layout(dragmode="select", selectdirection="h", clickmode="event", uirevision=f"{unit}-{peaks}",
                         legend={"orientation": "h", "y": 1.03, "yanchor": "bottom", "x": 1, "xanchor": "right"},
                         margin={"t": 130})
    return plain(figure)  # every state's figure is built from this dict: JSON-native, cheap to send


def base_for(run: Run, state: State) -> dict[str, Any]:
    return base_figure(run, data_for(run, state).rank, state.unit, state.peaks)


def curves_figure(run: Run, state: State) -> dict[str, Any]:
    """The curves for a state as a plotly dict (the callbacks send it as it is)."""
    return memory_curves.curves_figure(data_for(run, state), base_for(run, state), state)


def growth_figure(run: Run, state: State) -> dict[str, Any]:
    """The growth bars of a state, as the page sends them (shared: never mutate)."""
    return growth_dict(data_for(run, state), state.ops, state.programs, state.per_bank, state.op)


@per_run(16)
def growth_dict(data: MemoryData, ops: tuple[int, int] | None, programs: tuple[str, ...], per_bank: bool,
                op: int | None) -> dict[str, Any]:
    """The growth bars of a state as plain JSON values (shared: never mutate)."""
    growth = analysis.growth_view(data, ops, programs)
    where = f"ops {ops[0]:,}–{ops[1]:,}" if ops else "whole run"
    if programs:
        where += " · " + ", ".join(programs)
    figure = top_growth_figure(growth, per_bank=per_bank, selected_op=op,
                               title=f"Top {analysis.TOP_GROWTH} ops by memory left behind ({where})")
    figure.update_layout(clickmode="event")
    return plain(figure)


def page_figures(run: Run, state: State) -> dict[str, dict[str, Any]]:
    """The memory curves and the growth bars as the page sends them (plain dicts, shared: never mutate);
    none for a run whose buffer types have no capacity."""
    if not run_ranks(run) or not data_for(run, state).buffer_types:
        return {}
    return {"memory-curves": curves_figure(run, state), "top-growth": growth_figure(run, state)}


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The page's figures as plotly figures of their own (the PNG export sizes them)."""
    return {name: go.Figure(figure) for name, figure in page_figures(run, state).items()}


# ---- the ops table ------------------------------------------------------------------------------

def track_units(data: MemoryData, unit: str) -> dict[str, tuple[float, str]]:
    """Per drawn buffer type, (divisor, label) as on its track: `MiB/bank`, `GiB (device)`."""
    suffix = "/bank" if unit == "bank" else " (device)"
    return {bt: (lambda d: (d[0], d[1] + suffix))(bytes_unit_for(float(curve["capacity"].max() or 0)))
            for bt, curve in data.curves[unit].items()}


def table_columns(data: MemoryData, unit: str) -> list[dict[str, Any]]:
    """ag-grid columns: the op's, then allocated-before and delta per buffer type in its track's unit."""
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
    """The selected op's row, tinted like its line on the curves (ag-grid getRowStyle)."""
    if op is None:
        return {"styleConditions": []}
    return {"styleConditions": [{"condition": f"params.data && params.data.op_index === {int(op)}",
                                 "style": {"backgroundColor": "#fde8d7", "fontWeight": "600"}}]}


def table_for(run: Run, state: State, sort: tuple[tuple[str, bool], ...] = ()) -> Any:
    """The ops table for the state's range and filters (a polars frame), sorted as the grid asks."""
    return analysis.table_view(data_for(run, state), state.unit, state.ops, state.optypes, state.programs, sort)


def rows_block(run: Run, state: State, request: dict[str, Any]) -> dict[str, Any]:
    """One block of the infinite-scroll table, in the order the grid asks for (its getRowsResponse)."""
    frame = table_for(run, state, analysis.sort_key(request.get("sortModel")))
    return {"rowData": analysis.table_block(frame, request.get("startRow"), request.get("endRow")),
            "rowCount": frame.height}


def table_text(run: Run, state: State) -> str:
    """`1,234 ops · ops 100–200 · type MatmulOp · program main`: what the table holds."""
    parts = [f"{(rows := table_for(run, state).height):,} op{'s' if rows != 1 else ''}"]
    if state.ops:
        parts.append(f"ops {state.ops[0]:,}–{state.ops[1]:,}")
    if state.optypes:
        parts.append("type " + ", ".join(state.optypes))
    if state.programs:
        parts.append("program " + ", ".join(state.programs))
    return " · ".join(parts)


def table_csv(run: Run, state: State) -> tuple[str, str]:
    """Every op of the current table (not only the loaded blocks), sizes in bytes; and its file name."""
    suffix = f"-ops-{state.ops[0]}-{state.ops[1]}" if state.ops else ""
    return analysis.table_csv(table_for(run, state), state.per_bank), f"{run.id}-memory{suffix}.csv"
