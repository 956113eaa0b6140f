"""`/layers`: Per-layer runtime and throughput, forward and backward.

URL state: run, rank, window (from the timeline brush), layer + pass (the
selected box, whose kernels are listed), dtype (which peak to compare with).
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, dcc, html, no_update

from dashboard.analysis import run_views
from dashboard.analysis.gpu_busy import BUSY_DEFINITION
from dashboard.analysis.layers import PASSES
from dashboard.analysis.gpu_peak_flops import DTYPE_LABELS, DTYPES, device_name, peak_flops
from dashboard.analysis.selection import format_window, parse_window
from dashboard.analysis.units import format_flops_rate
from dashboard.figures.kernels import TOTAL_ONE_RANK, top_kernels_figure, total_rank_sum
from dashboard.figures.layers import PASS_LABELS, highlight_shapes, layer_box_figure, layer_from_event, layer_order
from dashboard.layouts.context import current_store, fired_ids
from dashboard.layouts.controls import kernel_table, rank_control, window_chip
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run
from dashboard.views.kernel_table import busy_text, kernel_column_defs, kernel_rows, window_text
from dashboard.views.params import parse_rank

dash.register_page(__name__, path="/layers", name="Layers", order=2, title="Layers · dashboard")

PATH = "/layers"
EVIDENCE = "layers"
LAYER_TRIGGERS = frozenset({"layers-runtime", "layers-throughput", "layers-clear-layer"})


def _dtype(value: Any) -> str:
    return value if value in DTYPES else "bf16"


def _selection(layer: Any, pass_: Any) -> tuple[str, str] | None:
    if not isinstance(layer, str) or not layer:
        return None
    return layer, pass_ if pass_ in PASSES else "forward"


def peak_note(device: str | None, dtype: str, peak: float | None) -> str:
    if device is None:
        return "Device unknown: peak unknown, so no % of peak."
    if peak is None:
        return f"{device}: peak {DTYPE_LABELS[dtype]} unknown, so no % of peak."
    return f"{device}: peak dense {DTYPE_LABELS[dtype]} {format_flops_rate(peak)}."


def render(run: Run, rank: int | None, window: tuple[int, int] | None, selected: tuple[str, str] | None,
           dtype: str) -> dict[str, Any]:
    view = run_views.layer_view(run, rank, window)  # cached per (run, rank, window)
    device = device_name(run.info.metadata)
    peak = peak_flops(device, dtype)
    stats = view.stats
    flops_known = stats.height > 0 and "rate_n" in stats.columns and int(stats.get_column("rate_n").sum()) > 0
    note = [html.Span(f"{view.occurrences:,} layer occurrences from {view.source}. " if view.source else
                      "No layer occurrences: this run has no module ranges and no kernel attributed to a layer "
                      "(capture with torch module hooks, or profile with with_modules=True). "),
            html.Span(peak_note(device, dtype, peak) if flops_known else
                      "FLOPs unknown for every layer: no throughput.")]
    busy = busy_text(run_views.gpu_busy_view(run, rank, window))
    if busy:
        note.append(html.Span(f" {busy}.", title=f"GPU busy: {BUSY_DEFINITION}", id="layers-busy"))
    return {
        "runtime": layer_box_figure(stats, "time", view.time_outliers, selected),
        "throughput": layer_box_figure(stats, "rate", view.rate_outliers, selected, peak,
                                       f"{DTYPE_LABELS[dtype]} dense ({device})" if peak else ""),
        "note": note,
        "selected": selected,
        **render_detail(run, rank, window, selected),
    }


def render_detail(run: Run, rank: int | None, window: tuple[int, int] | None,
                  selected: tuple[str, str] | None) -> dict[str, Any]:
    """The kernels of the selected layer and pass; only a hint while none is selected."""
    if selected is None:
        return {"detail_title": "Click a box to list the kernels of that layer and pass.", "detail_bar": None,
                "detail_rows": [], "detail_columns": []}
    layer, pass_ = selected
    summary, how = run_views.layer_kernel_view(run, rank, window, layer, pass_)
    rows, units = kernel_rows(summary)
    title = f"Kernels of {layer} ({PASS_LABELS.get(pass_, pass_)}): {summary.height} kernels, {how}"
    ranks = len(run_views.kernel_ranks(run)) if rank is None else 1
    total = total_rank_sum(ranks) if ranks > 1 else TOTAL_ONE_RANK  # the chart and the table say the same
    bar = top_kernels_figure(summary, 15, title=f"Top kernels of {layer} ({PASS_LABELS.get(pass_, pass_)})",
                             total=total)
    return {"detail_title": title, "detail_bar": bar, "detail_rows": rows,
            "detail_columns": kernel_column_defs("name", units, total=total)}


# The selected layer's chart and grid exist only while a layer is selected; pattern-matching ids let
# the callbacks update them when they exist and skip them (an empty list) when they do not.
DETAIL_BAR = {"type": "layers-kernels-bar", "part": "detail"}
DETAIL_TABLE = {"type": "layers-kernels-table", "part": "detail"}


def detail_body(run_id: str, detail: dict[str, Any]) -> dbc.Row | None:
    """The selected layer's kernel chart and table; nothing while no layer is selected.

    Not drawn until a layer is chosen: an empty chart and an empty grid cost ~450 ms of the page's
    first render and say no more than the title does.
    """
    if detail["detail_bar"] is None:
        return None
    return dbc.Row([
        dbc.Col(html.Div(chart(DETAIL_BAR, detail["detail_bar"], f"{run_id}-layer-kernels"),
                         id="layers-kernels-bar"), lg=6),
        dbc.Col(html.Div(kernel_table(DETAIL_TABLE, detail["detail_rows"], detail["detail_columns"],
                                      f"{run_id}-layer-kernels", selectable=False, height=380),
                         id="layers-kernels-table"), lg=6),
    ], className="g-3")


def detail_outputs(run_id: str, detail: dict[str, Any], drawn_bars: list[Any]) -> tuple[Any, list, list, list]:
    """(body children, bar figures, grid rows, grid columns) for the detail outputs.

    A chart and grid already on screen are updated in place (re-creating them costs a grid start and
    a new plot per click); they are added when a layer gets selected and removed when none is.
    """
    wanted, drawn = detail["detail_bar"] is not None, bool(drawn_bars)
    if wanted and drawn:
        return no_update, [detail["detail_bar"]], [detail["detail_rows"]], [detail["detail_columns"]]
    body = detail_body(run_id, detail) if wanted != drawn else no_update
    skipped = [no_update] * len(drawn_bars)
    return body, skipped, list(skipped), list(skipped)


def _state(rank: int | None, window: tuple[int, int] | None, selected: tuple[str, str] | None,
           dtype: str) -> dict[str, Any]:
    """The URL view state; defaults are written as "" (= absent), so a plain visit leaves the URL alone."""
    return {"rank": "" if rank is None else rank, "window": format_window(*window) if window else "",
            "layer": selected[0] if selected else "", "pass": selected[1] if selected else "",
            "dtype": "" if dtype == "bf16" else dtype}


def _unselected(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key not in ("layer", "pass")}


def _boxes_drawn(state: dict[str, Any], drawn: dict[str, Any] | None) -> bool:
    """Whether the runtime boxes on screen are those of this rank and window."""
    return all((drawn or {}).get(key) == state[key] for key in ("rank", "window"))


def layout(run: str | None = None, rank: str | None = None, window: str | None = None, layer: str | None = None,
           dtype: str | None = None, **query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    if chosen is None:  # kernels attributed to layers give layer occurrences even without ranges
        chosen, _ = resolve_run(run, "kernels", PATH)
    header = page_header("Layers", chosen, "Per-layer runtime and throughput, forward and backward")
    if chosen is None:
        return html.Div([header, notice], id="layers-page")
    ranks = run_views.kernel_ranks(chosen)
    state_rank, state_window = parse_rank(rank, ranks), parse_window(window)
    state_dtype = _dtype(dtype)
    view = render(chosen, state_rank, state_window, _selection(layer, query.get("pass")), state_dtype)
    selected = view["selected"]
    controls = html.Div([
        rank_control("layers-rank", ranks, state_rank),
        html.Div([
            dbc.Label("Peak for", html_for="layers-dtype", className="me-2 mb-0 small text-muted"),
            dcc.Dropdown(id="layers-dtype", options=[{"label": DTYPE_LABELS[d], "value": d} for d in DTYPES],
                         value=state_dtype, clearable=False, searchable=False, style={"minWidth": "150px"}),
        ], className="d-flex align-items-center me-4"),
        window_chip("layers", state_window, run_views.run_origin_ns(chosen)),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    detail = html.Div([
        html.Div([
            html.H6(view["detail_title"], id="layers-detail-title", className="mb-0 me-3"),
            dbc.Button("clear", id="layers-clear-layer", size="sm", color="secondary", outline=True,
                       className="me-2", disabled=selected is None),
            dbc.Button("Download CSV", id="layers-csv", size="sm", color="primary", outline=True,
                       disabled=selected is None),
        ], className="d-flex align-items-center mb-2"),
        html.Div(detail_body(chosen.id, view), id="layers-detail-body"),
    ], className="chart-card")
    meta = view["throughput"].layout.meta
    no_flops = isinstance(meta, dict) and bool(meta.get("no_flops"))
    return html.Div([
        header,
        dcc.Store(id="layers-run", data=chosen.id),
        dcc.Store(id="layers-selected", data=list(selected) if selected else None),
        dcc.Store(id="layers-window", data=format_window(*state_window) if state_window else None),
        url_state_store("layers", _state(state_rank, state_window, selected, state_dtype)),
        controls,
        html.Div(view["note"], id="layers-note", className="small text-muted mb-2"),
        html.Div(chart("layers-runtime", view["runtime"], f"{chosen.id}-layer-runtime"), className="chart-card"),
        html.Div(chart("layers-throughput", view["throughput"], f"{chosen.id}-layer-throughput"),
                 id="layers-throughput-card", className="chart-card", style=HIDDEN if no_flops else {}),
        dbc.Alert(NO_THROUGHPUT_TEXT, id="layers-no-throughput", color="secondary", className="small",
                  style={} if no_flops else HIDDEN),
        detail,
    ], id="layers-page")


HIDDEN = {"display": "none"}
NO_THROUGHPUT_TEXT = ("No throughput chart: FLOPs are unknown for every layer in this selection, so FLOP/s "
                      "cannot be computed. The trace records no FLOP counts (PyTorch profiler: with_flops=True).")
# The message stands in for the throughput chart whenever that chart has nothing to draw (rank or window
# changes can bring FLOPs in or out): decided from the figure itself, in the browser.
clientside_callback(
    """
    function(figure) {
        const none = Boolean(figure && figure.layout && figure.layout.meta && figure.layout.meta.no_flops);
        return [none ? {display: "none"} : {}, none ? {} : {display: "none"}];
    }
    """,
    Output("layers-throughput-card", "style"),
    Output("layers-no-throughput", "style"),
    Input("layers-throughput", "figure"),
    prevent_initial_call=True,
)


@callback(
    Output("layers-runtime", "figure"),
    Output("layers-throughput", "figure"),
    Output("layers-note", "children"),
    Output("layers-detail-title", "children"),
    Output("layers-detail-body", "children"),
    Output({**DETAIL_BAR, "part": ALL}, "figure"),
    Output({**DETAIL_TABLE, "part": ALL}, "rowData"),
    Output({**DETAIL_TABLE, "part": ALL}, "columnDefs"),
    Output("layers-clear-layer", "disabled"),
    Output("layers-csv", "disabled"),
    Output("layers-selected", "data"),
    Output("layers-window", "data"),
    Output("layers-window-chip", "style"),
    Output("layers-window-text", "children"),
    Output({"type": "url-state", "page": "layers"}, "data"),
    Input("layers-rank", "value"),
    Input("layers-dtype", "value"),
    Input("layers-window-clear", "n_clicks"),
    Input("layers-clear-layer", "n_clicks"),
    Input("layers-runtime", "clickData"),
    Input("layers-throughput", "clickData"),
    State("layers-selected", "data"),
    State("layers-window", "data"),
    State("layers-run", "data"),
    State({"type": "url-state", "page": "layers"}, "data"),
    State({**DETAIL_BAR, "part": ALL}, "id"),
    prevent_initial_call=True,
)
def update_layers(rank_value: Any, dtype_value: Any, _clear_window: Any, _clear_layer: Any,
                  runtime_click: dict | None, throughput_click: dict | None, selected_value: list | None,
                  window_value: str | None, run_id: str, drawn: dict[str, Any] | None,
                  drawn_bars: list[Any]) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    rank = parse_rank(rank_value, run_views.kernel_ranks(run))
    window, dtype = parse_window(window_value), _dtype(dtype_value)
    selected = _selection(*selected_value) if selected_value else None
    fired = fired_ids()
    if "layers-window-clear" in fired:
        window = None
    if "layers-clear-layer" in fired:
        selected = None
    for chart_id, click in (("layers-runtime", runtime_click), ("layers-throughput", throughput_click)):
        clicked = layer_from_event(click) if chart_id in fired else None
        selected = clicked if clicked else selected
    state = _state(rank, window, selected, dtype)
    # Controls are compared with what is drawn, not read from the fired inputs alone: the renderer
    # drops the answer to a call that a newer call overtakes, and the newer call may name only a click.
    if fired <= LAYER_TRIGGERS and _unselected(state) == _unselected(drawn or {}):
        # A layer click moves the highlight band and lists the layer's kernels; the boxes stay.
        shapes = highlight_shapes(layer_order(run_views.layer_view(run, rank, window).stats), selected)
        runtime, throughput = Patch(), Patch()
        runtime["layout"]["shapes"] = shapes
        throughput["layout"]["shapes"] = shapes
        detail = render_detail(run, rank, window, selected)
        return (runtime, throughput, no_update, detail["detail_title"], *detail_outputs(run_id, detail, drawn_bars),
                selected is None, selected is None, list(selected) if selected else None, no_update, no_update,
                no_update, state)
    view = render(run, rank, window, selected, dtype)
    return (
        # The peak only moves the throughput chart.
        no_update if fired == {"layers-dtype"} and _boxes_drawn(state, drawn) else view["runtime"],
        view["throughput"], view["note"], view["detail_title"], *detail_outputs(run_id, view, drawn_bars),
        selected is None, selected is None, list(selected) if selected else None,
        format_window(*window) if window else None, {} if window else {"display": "none"},
        window_text(window, run_views.run_origin_ns(run)), state,
    )


@callback(Output({**DETAIL_TABLE, "part": ALL}, "exportDataAsCsv"), Input("layers-csv", "n_clicks"),
          State({**DETAIL_TABLE, "part": ALL}, "id"), prevent_initial_call=True)
def export_layer_kernels_csv(_clicks: Any, tables: list[Any]) -> list[bool]:
    return [True] * len(tables)
