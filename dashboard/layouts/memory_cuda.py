"""`/memory` for runs with CUDA allocator memory (Kineto `[memory]` events, allocator snapshots).

URL state and figures: `views.memory_cuda` (rank, device, window, at); the
page's layout and its callback draw what that view gives for a State.
"""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from dashboard.analysis import cuda_memory as analysis
from dashboard.analysis.units import format_bytes, format_ns
from dashboard.layouts.page import chart, page_header, page_href
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.layouts.static_html import StaticHtml, static_html
from dashboard.store import Run, RunNotFound
from dashboard.views import memory_cuda as view
from dashboard.views.chart_events import x_range_from_relayout
from dashboard.views.text import counted

EVIDENCE = view.EVIDENCE
CURVES_ID = view.CHARTS["cuda-memory"]
URL_STATE = {"type": "url-state", "page": "memory_cuda"}
TOP_LIVE = 25
TOP_OPS = 30


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
        return run if view.shows(run) else None
    runs = store.list_runs()
    if any("memory" in info.evidence for info in runs):
        return None
    found = next((info.id for info in runs if EVIDENCE in info.evidence), None)
    return store.open(found) if found else None


def _table(header: list[str], rows: list[list[Any]], table_id: str) -> StaticHtml:
    # Responsive: a long op name scrolls the table inside its card instead of widening the page.
    return static_html(dbc.Table([html.Thead(html.Tr([html.Th(h) for h in header])),
                                  html.Tbody([html.Tr([html.Td(cell) for cell in row]) for row in rows])],
                                 id=table_id, size="sm", striped=True, hover=True, responsive=True,
                                 className="mb-0 small"))


def _peak_card(peak: analysis.Peak, origin: int, held: int) -> dbc.Col:
    culprit = (f"{peak.culprit} holds {format_bytes(peak.culprit_bytes)} of it" if peak.culprit
               else "no live allocation is known (the trace gives no addresses)")
    before = f" · {format_bytes(held)} of it held before the profiler started" if held else ""
    return dbc.Col(dbc.Card(dbc.CardBody([
        html.Div(f"{peak.device} peak allocated", className="small text-muted"),
        html.H5(format_bytes(peak.allocated), className="mb-0 memory-cuda-peak-value"),
        html.Div(f"at {format_ns(peak.time_ns - origin)} · {culprit}{before}", className="small"),
    ])), md=4)


def _live_section(shown_view: view.CudaView, at: int | None) -> list[Any]:
    if at is None:
        return [html.Small("Click the curves (or “Live at the peak”) to list the allocations alive at a time.",
                           className="text-muted")]
    data = shown_view.data
    lives = data.lives.filter(pl.col("device").is_in(shown_view.devices))
    alive = analysis.live_at(lives, at)
    shown = alive.head(TOP_LIVE)
    rows = [[r["device"], format_bytes(r["size"]), f"{r['addr']:#x}", r["op"] or "", r["frame"] or "",
             format_ns(r["start_ns"] - data.origin_ns)] for r in shown.iter_rows(named=True)]
    recorded = int(alive["size"].sum())
    title = (f"Live at {format_ns(at - data.origin_ns)}: {counted(alive.height, 'allocation')}, "
             f"{format_bytes(recorded)}" + (f" (largest {TOP_LIVE} shown)" if alive.height > TOP_LIVE else ""))
    return [html.H6(title, id="memory-cuda-live-title"), _held_line(shown_view, at, recorded),
            _table(["device", "size", "address", "op", "Python frame", "allocated at"], rows, "memory-cuda-live")]


def _held_line(shown_view: view.CudaView, at: int, recorded: int) -> html.Div:
    """Why the live allocations fall short of the allocator's total: what was held before the profiler started."""
    total = shown_view.allocated_at(at)
    held = sum(shown_view.held_before.values())
    if total is None:
        text = ("The trace gives no allocator totals: allocations made before the profiler started are not "
                "known, so these are the allocations the trace recorded.")
    elif held:
        text = (f"The allocator reports {format_bytes(total)} allocated at this time: {format_bytes(recorded)} in "
                f"the allocations the trace recorded, and {format_bytes(max(total - recorded, 0))} in allocations "
                f"made before the profiler started ({format_bytes(held)} at its first event: the grey base of "
                "the chart), which have no event of their own.")
    else:
        text = f"The allocator reports {format_bytes(total)} allocated at this time."
    return html.Div(text, id="memory-cuda-held", className="small text-muted mb-2")


def _ops_section(events: pl.DataFrame, lives: pl.DataFrame, at: int | None) -> list[Any]:
    table = analysis.per_op(events, lives, at).head(TOP_OPS)
    rows = [[r["owner"], f"{r['allocations']:,}", format_bytes(r["bytes"]),
             format_bytes(r["live_bytes"]) if r["live_bytes"] is not None else "–"]
            for r in table.iter_rows(named=True)]
    return [html.H6("Per op (snapshots: per Python frame)"),
            html.Small("allocations and bytes: allocations in the window; live: bytes the op's allocations hold at "
                       "the chosen time (at the peak: its contribution to the peak).", className="text-muted d-block"),
            _table(["op", "allocations", "bytes allocated", "live at the chosen time"], rows, "memory-cuda-ops")]


def render(run: Run, state: view.State) -> dict[str, Any]:
    """Every part of the view for a state (the layout and the callback both use it)."""
    shown = view.cuda_view(run, state)
    data = shown.data
    figure = view.page_figures(run, state)["cuda-memory"]
    cards = [_peak_card(p, data.origin_ns, shown.held_before.get(p.device, 0)) for p in shown.peaks]
    frag = shown.fragmentation()
    if frag.height:
        text = "; ".join(f"{r['device']}: {r['fragmentation']:.0%} ({format_bytes(r['largest_free'])} largest of "
                         f"{format_bytes(r['free'])} free)" for r in frag.iter_rows(named=True))
        cards.append(dbc.Col(dbc.Card(dbc.CardBody([
            html.Div("Fragmentation at the snapshot's end", className="small text-muted"),
            html.Div(text, className="small"),
            html.Div("1 − largest free block / free bytes in the segments", className="small text-muted")])), md=4))
    links: list[Any] = []
    window = state.url_state()["window"]
    if state.window and data.has_kernels:
        links = [dcc.Link("this window on the timeline", href=page_href("/timeline", run.id, window=window),
                          className="me-3"),
                 dcc.Link("kernels in this window", href=page_href("/kernels", run.id, window=window))]
    return {"figure": figure, "cards": cards, "live": _live_section(shown, state.at),
            "ops": _ops_section(shown.events, shown.lives, state.at), "links": links,
            "peak_at": shown.top.time_ns if shown.top else None}


def _text(value: int | None) -> str:
    """Run-clock ns as text: beyond 2^53 a browser number would round them."""
    return "" if value is None else str(value)


def _view(run: Run, state: view.State, parts: dict[str, Any]) -> dict[str, Any]:
    """What the callback needs next time: the run, the state (the URL's text) and the peak's time."""
    return {"run": run.id, **state.url_state(), "peak_at": _text(parts["peak_at"])}


def layout(run: Run, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, run)
    data = view.cuda_data(run, state.rank)
    parts = render(run, state)
    held = view.cuda_view(run, state).held_before
    relative = (" Allocated counts from 0 at the trace start: the trace has no allocator totals (a 2021 trace), "
                "so memory held before the profiler started is not included." if data.relative else
                " Grey base: " + ", ".join(f"{device} held {format_bytes(value)}" for device, value in held.items())
                + " before the profiler started (allocations the trace did not record)." if held else "")
    return html.Div([
        page_header("Memory", run, "Device memory over time from allocator events (CUDA caching allocator, tinygrad "
                    "buffers): allocated, reserved, live allocations"),
        dcc.Store(id="memory-cuda-view", data=_view(run, state, parts)),
        url_state_store("memory_cuda", state.url_state()),
        html.Div([
            dbc.Label("Device", className="me-2 mb-0 small text-muted"),
            native_select("memory-cuda-device", [{"label": d, "value": d} for d in data.devices], state.device,
                          none_label="all GPUs", min_width="160px"),
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
           stored: dict[str, Any]) -> tuple[Any, ...]:
    run = current_store().open(stored["run"])
    before = state = view.State.from_query(stored, run)
    fired = ctx.triggered_id
    data = view.cuda_data(run, state.rank)
    if fired == CURVES_ID and "relayoutData" in str(ctx.triggered[0]["prop_id"]):
        extent = x_range_from_relayout(relayout)
        if extent is None:  # the graph's own resize: nothing to redo
            return _UNCHANGED
        state = state.replace(window=None if extent == "all" else (
            data.origin_ns + int(extent[0] * 1e6), data.origin_ns + int(extent[1] * 1e6)))
    elif fired == CURVES_ID:
        points = (click or {}).get("points") or []
        if not points or points[0].get("customdata") is None:
            return _UNCHANGED
        custom = points[0]["customdata"]
        state = state.replace(at=data.origin_ns + int(custom[0] if isinstance(custom, list) else custom))
    elif fired == "memory-cuda-peak":
        state = state.replace(at=int(stored["peak_at"]) if stored.get("peak_at") else None)
    elif fired == "memory-cuda-device":
        state = state.replace(device=device or None).resolved(run)
    elif fired == "memory-cuda-window-clear":
        state = state.replace(window=None)
    parts = render(run, state)
    unchanged = fired == CURVES_ID and (state.window, state.at) == (before.window, before.at)
    return (no_update if unchanged else parts["figure"], parts["cards"], parts["live"], parts["ops"],
            parts["links"], _view(run, state, parts), state.url_state())
