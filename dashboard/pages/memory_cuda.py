"""`/memory` for runs with CUDA allocator memory (Kineto `[memory]` events, allocator snapshots).

URL state: run, rank, device (one device; all by default), window
(`<start_ns>-<end_ns>` on the run clock, the key /timeline and /kernels use,
so a window brushed on either page re-aggregates this one and back), at (a
time in ns: the live allocations there; a click on the curves or the peak
button sets it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from dashboard.analysis import cuda_fragmentation
from dashboard.analysis import cuda_memory as analysis
from dashboard.analysis.selection import format_window, parse_window, x_range_from_relayout
from dashboard.analysis.units import format_bytes, format_ns
from dashboard.figures.memory_cuda import curves_figure
from dashboard.layouts.context import current_store
from dashboard.layouts.page import chart, page_header, page_href
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run, RunNotFound

EVIDENCE = "cuda_memory"
CURVES_ID = "memory-cuda-curves"
URL_STATE = {"type": "url-state", "page": "memory_cuda"}
TOP_LIVE = 25
TOP_OPS = 30


@dataclass(frozen=True)
class CudaData:
    events: pl.DataFrame  # one rank's device_memory, in time order per device
    lives: pl.DataFrame
    segments: pl.DataFrame
    devices: tuple[str, ...]
    origin_ns: int
    relative: bool
    has_kernels: bool
    layouts: dict[str, cuda_fragmentation.Layout]  # devices whose segments are known (snapshots): replayable


@lru_cache(maxsize=4)
def cuda_data(run_id: str, rank: int) -> CudaData:
    run = current_store().open(run_id)
    events = run.frame("device_memory").filter(pl.col("rank") == rank).sort("device", "time_ns", maintain_order=True)
    segments = run.frame("memory_segments").filter(pl.col("rank") == rank)
    devices = tuple(sorted(events["device"].unique().to_list(), key=lambda d: (d == "cpu", d)))
    origin = int(events["time_ns"].min()) if events.height else 0  # type: ignore[arg-type]
    layouts = {device: state for device in devices if segments.height and (state := cuda_fragmentation.layout(
        analysis.device_events(events, device), segments.filter(pl.col("device") == device))) is not None}
    return CudaData(events, analysis.lifetimes(events), segments, devices, origin,
                    bool(events["relative"].any()), run.has_evidence("kernels"), layouts)


def cuda_run(run_id: str | None) -> Run | None:
    """The run `/memory` shows with this view: the named run when it has CUDA memory and no Tenstorrent
    memory, or (none named) the newest CUDA-memory run when no run has Tenstorrent memory (whose view
    stays the default)."""
    store = current_store()
    if run_id:
        try:
            run = store.open(run_id)
        except RunNotFound:  # the Tenstorrent view's notice says so
            return None
        return run if run.has_evidence(EVIDENCE) and not run.has_evidence("memory") else None
    runs = store.list_runs()
    if any("memory" in info.evidence for info in runs):
        return None
    found = next((info.id for info in runs if EVIDENCE in info.evidence), None)
    return store.open(found) if found else None


def run_ranks(run: Run) -> tuple[int, ...]:
    return tuple(sorted(run.frame("device_memory")["rank"].unique().to_list()))


def _state(query: dict[str, Any], data: CudaData, rank: int) -> dict[str, Any]:
    device = query.get("device") if query.get("device") in data.devices else ""
    window = parse_window(query.get("window"))
    try:
        at = int(query["at"]) if query.get("at") else None
    except ValueError:
        at = None
    return {"rank": rank, "device": device, "window": format_window(*window) if window else "", "at": at}


def _shown(data: CudaData, state: dict[str, Any]) -> tuple[str, ...]:
    return (state["device"],) if state["device"] else tuple(d for d in data.devices if d != "cpu") or data.devices


def _table(header: list[str], rows: list[list[Any]], table_id: str) -> dbc.Table:
    return dbc.Table([html.Thead(html.Tr([html.Th(h) for h in header])),
                      html.Tbody([html.Tr([html.Td(cell) for cell in row]) for row in rows])],
                     id=table_id, size="sm", striped=True, hover=True, className="mb-0")


def _peak_card(peak: analysis.Peak, origin: int) -> dbc.Col:
    culprit = (f"{peak.culprit} holds {format_bytes(peak.culprit_bytes)} of it" if peak.culprit
               else "no live allocation is known (the trace gives no addresses)")
    return dbc.Col(dbc.Card(dbc.CardBody([
        html.Div(f"{peak.device} peak allocated", className="small text-muted"),
        html.H5(format_bytes(peak.allocated), className="mb-0 memory-cuda-peak-value"),
        html.Div(f"at {format_ns(peak.time_ns - origin)} · {culprit}", className="small"),
    ])), md=4)


def _live_section(data: CudaData, devices: tuple[str, ...], at: int | None) -> list[Any]:
    if at is None:
        return [html.Small("Click the curves (or “Live at the peak”) to list the allocations alive at a time.",
                           className="text-muted")]
    lives = data.lives.filter(pl.col("device").is_in(devices))
    alive = analysis.live_at(lives, at)
    shown = alive.head(TOP_LIVE)
    rows = [[r["device"], format_bytes(r["size"]), f"{r['addr']:#x}", r["op"] or "", r["frame"] or "",
             format_ns(r["start_ns"] - data.origin_ns)] for r in shown.iter_rows(named=True)]
    title = (f"Live at {format_ns(at - data.origin_ns)}: {alive.height:,} allocations, "
             f"{format_bytes(int(alive['size'].sum()))}" + (f" (largest {TOP_LIVE} shown)" if alive.height > TOP_LIVE
                                                           else ""))
    return [html.H6(title, id="memory-cuda-live-title"),
            _table(["device", "size", "address", "op", "Python frame", "allocated at"], rows, "memory-cuda-live")]


def _ops_section(events: pl.DataFrame, lives: pl.DataFrame, at: int | None) -> list[Any]:
    table = analysis.per_op(events, lives, at).head(TOP_OPS)
    rows = [[r["owner"], f"{r['allocations']:,}", format_bytes(r["bytes"]),
             format_bytes(r["live_bytes"]) if r["live_bytes"] is not None else "–"]
            for r in table.iter_rows(named=True)]
    return [html.H6("Per op (snapshots: per Python frame)"),
            html.Small("allocations and bytes: allocations in the window; live: bytes the op's allocations hold at "
                       "the chosen time (at the peak: its contribution to the peak).", className="text-muted d-block"),
            _table(["op", "allocations", "bytes allocated", "live at the chosen time"], rows, "memory-cuda-ops")]


def render(run_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """Every part of the view for a state (the layout and the callback both use it)."""
    data = cuda_data(run_id, state["rank"])
    window = parse_window(state["window"])
    devices = _shown(data, state)
    per_device = {d: analysis.device_events(data.events, d, window) for d in devices}
    lives = data.lives.filter(pl.col("device").is_in(devices))
    peaks = [p for d in devices if (p := analysis.peak(per_device[d], lives, d)) is not None]
    top = max(peaks, key=lambda p: p.allocated) if peaks else None
    curves = {d: analysis.curve(frame, window) for d, frame in per_device.items()}
    fragmentation = {d: cuda_fragmentation.over_time(data.layouts[d], cuda_fragmentation.sample_times(
        curves[d]["time_ns"])) for d in devices if d in data.layouts}
    figure = curves_figure(curves, data.origin_ns, top, state["at"], data.relative, window, fragmentation)
    events = pl.concat(list(per_device.values())) if per_device else data.events.clear()
    cards = [_peak_card(p, data.origin_ns) for p in peaks]
    frag = analysis.fragmentation(data.segments.filter(pl.col("device").is_in(devices)))
    if frag.height:
        text = "; ".join(f"{r['device']}: {r['fragmentation']:.0%} ({format_bytes(r['largest_free'])} largest of "
                         f"{format_bytes(r['free'])} free)" for r in frag.iter_rows(named=True))
        cards.append(dbc.Col(dbc.Card(dbc.CardBody([
            html.Div("Fragmentation at the snapshot's end", className="small text-muted"),
            html.Div(text, className="small"),
            html.Div("1 − largest free block / free bytes in the segments", className="small text-muted")])), md=4))
    links: list[Any] = []
    if window and data.has_kernels:
        links = [dcc.Link("this window on the timeline", href=page_href("/timeline", run_id, window=state["window"]),
                          className="me-3"),
                 dcc.Link("kernels in this window", href=page_href("/kernels", run_id, window=state["window"]))]
    return {"figure": figure, "cards": cards, "live": _live_section(data, devices, state["at"]),
            "ops": _ops_section(events, lives, state["at"]), "links": links,
            "peak_at": top.time_ns if top else None}


def _text(value: int | None) -> str:
    """Run-clock ns as text: beyond 2^53 a browser number would round them."""
    return "" if value is None else str(value)


def _view(view: dict[str, Any], state: dict[str, Any], parts: dict[str, Any]) -> dict[str, Any]:
    return {**view, **state, "at": _text(state["at"]), "peak_at": _text(parts["peak_at"])}


def _url(state: dict[str, Any], run_id: str, ranks: int) -> dict[str, Any]:
    return {"run": run_id, "rank": state["rank"] if ranks > 1 else "", "device": state["device"],
            "window": state["window"], "at": _text(state["at"])}


def layout(run: Run, rank: str | None, query: dict[str, Any]) -> html.Div:
    ranks = run_ranks(run)
    chosen_rank = int(rank) if rank and rank.isdigit() and int(rank) in ranks else ranks[0]
    data = cuda_data(run.id, chosen_rank)
    state = _state(query, data, chosen_rank)
    parts = render(run.id, state)
    relative = (" Allocated counts from 0 at the trace start: the trace has no allocator totals (a 2021 trace), "
                "so memory held before the profiler started is not included." if data.relative else "")
    return html.Div([
        page_header("Memory", run, "CUDA allocator memory over time: allocated, reserved, live allocations"),
        dcc.Store(id="memory-cuda-view", data=_view({"run": run.id, "ranks": len(ranks)}, state, parts)),
        url_state_store("memory_cuda", _url(state, run.id, len(ranks))),
        html.Div([
            dbc.Label("Device", className="me-2 mb-0 small text-muted"),
            dcc.Dropdown(id="memory-cuda-device", options=[{"label": "all GPUs", "value": ""}]
                         + [{"label": d, "value": d} for d in data.devices], value=state["device"],
                         clearable=False, style={"minWidth": "160px"}),
            dbc.Button("Live at the peak", id="memory-cuda-peak", size="sm", color="primary", outline=True,
                       className="ms-3"),
            dbc.Button("whole run", id="memory-cuda-window-clear", size="sm", color="link"),
            html.Div(parts["links"], id="memory-cuda-links", className="ms-3 small"),
        ], className="d-flex align-items-center flex-wrap gap-2 mb-2"),
        html.Small("Allocated: bytes in live tensors; reserved (dotted): bytes the caching allocator holds in "
                   "segments; slack: reserved − allocated; fragmentation (snapshots): 1 − largest free block / "
                   "free bytes in the segments, replayed from the allocator's trace. Zoom to re-aggregate (the "
                   "window is shared with /timeline and /kernels); click a point to list what is alive there."
                   + relative,
                   className="text-muted d-block mb-2"),
        dbc.Row(parts["cards"], id="memory-cuda-cards", className="g-2 mb-2"),
        html.Div(chart(CURVES_ID, parts["figure"], f"{run.id}-cuda-memory"), className="chart-card"),
        dbc.Row([
            dbc.Col(html.Div(parts["live"], id="memory-cuda-live-section", className="chart-card p-3"), lg=7),
            dbc.Col(html.Div(parts["ops"], id="memory-cuda-ops-section", className="chart-card p-3"), lg=5),
        ], className="g-3"),
    ], id="memory-page")


# PreventUpdate would reach the app's callback guard as an error (a 400 in the console): answer "no change".
_UNCHANGED = (no_update,) * 7


@callback(
    Output(CURVES_ID, "figure"), Output("memory-cuda-cards", "children"),
    Output("memory-cuda-live-section", "children"), Output("memory-cuda-ops-section", "children"),
    Output("memory-cuda-links", "children"), Output("memory-cuda-view", "data"), Output(URL_STATE, "data"),
    Input(CURVES_ID, "relayoutData"), Input(CURVES_ID, "clickData"), Input("memory-cuda-peak", "n_clicks"),
    Input("memory-cuda-device", "value"), Input("memory-cuda-window-clear", "n_clicks"),
    State("memory-cuda-view", "data"),
    prevent_initial_call=True,
)
def update(relayout: Any, click: Any, _peak: Any, device: str | None, _clear: Any,
           view: dict[str, Any]) -> tuple[Any, ...]:
    state = {key: view[key] for key in ("rank", "device", "window")}
    state["at"] = int(view["at"]) if view.get("at") else None
    fired = ctx.triggered_id
    data = cuda_data(view["run"], state["rank"])
    if fired == CURVES_ID and "relayoutData" in str(ctx.triggered[0]["prop_id"]):
        extent = x_range_from_relayout(relayout)
        if extent is None:  # the graph's own resize: nothing to redo
            return _UNCHANGED
        state["window"] = "" if extent == "all" else format_window(
            data.origin_ns + int(extent[0] * 1e6), data.origin_ns + int(extent[1] * 1e6))
    elif fired == CURVES_ID:
        points = (click or {}).get("points") or []
        if not points or points[0].get("customdata") is None:
            return _UNCHANGED
        custom = points[0]["customdata"]
        state["at"] = data.origin_ns + int(custom[0] if isinstance(custom, list) else custom)
    elif fired == "memory-cuda-peak":
        state["at"] = int(view["peak_at"]) if view.get("peak_at") else None
    elif fired == "memory-cuda-device":
        state["device"] = device or ""
    elif fired == "memory-cuda-window-clear":
        state["window"] = ""
    parts = render(view["run"], state)
    new_view = _view(view, state, parts)
    figure = no_update if fired == CURVES_ID and new_view["window"] == view["window"] \
        and new_view["at"] == view["at"] else parts["figure"]
    return (figure, parts["cards"], parts["live"], parts["ops"], parts["links"], new_view,
            _url(state, view["run"], view["ranks"]))
