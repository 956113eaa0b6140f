"""`/layers`: Per-layer runtime and throughput, forward and backward.

URL state (views/layers.py): run, rank, window (from the timeline brush), layer +
pass (the selected box, whose kernels are listed), dtype (which peak to compare with; auto: the kernels'), peak
(the user's own peak, TFLOP/s).
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, dcc, html, no_update

from dashboard.analysis.gpu_busy import BUSY_DEFINITION
from dashboard.analysis.gpu_peak_flops import DTYPE_LABELS
from dashboard.figures.layers import layer_from_event
from dashboard.layouts.controls import kernel_table, rank_control, window_chip
from dashboard.layouts.grid_csv import csv_download, register_grid_csv
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store, fired_ids
from dashboard.layouts.shell import url_state_store
from dashboard.store import Run
from dashboard.views import layers as view
from dashboard.views import run_views
from dashboard.views.kernel_table import csv_columns, window_text
from dashboard.views.params import format_window

dash.register_page(__name__, path="/layers", name="Layers", order=2, title="Layers · dashboard")

PATH = "/layers"
EVIDENCE = "layers"
LAYER_TRIGGERS = frozenset({"layers-runtime", "layers-throughput", "layers-clear-layer"})


def note(texts: dict[str, str]) -> list[html.Span]:
    parts = [html.Span(texts["source"]), html.Span(texts["peak"])]
    if texts["busy"]:
        parts.append(html.Span(texts["busy"], title=f"GPU busy: {BUSY_DEFINITION}", id="layers-busy"))
    return parts


def detail_body(run_id: str, detail: view.Detail) -> dbc.Row | None:
    """The selected layer's kernel chart and table; nothing while no layer is selected.

    Not drawn until a layer is chosen: an empty chart and an empty grid cost ~450 ms of the page's
    first render and say no more than the title does.
    """
    if detail.figure is None:
        return None
    return dbc.Row([
        dbc.Col(html.Div(chart(view.DETAIL_BAR, detail.figure, f"{run_id}-layer-kernels"),
                         id="layers-kernels-bar"), lg=6),
        dbc.Col(html.Div(kernel_table(view.DETAIL_TABLE, detail.rows, detail.columns,
                                      f"{run_id}-layer-kernels", selectable=False, height=380),
                         id="layers-kernels-table"), lg=6),
    ], className="g-3")


def detail_outputs(run_id: str, detail: view.Detail, drawn_bars: list[Any]) -> tuple[Any, list, list, list]:
    """(body children, bar figures, grid rows, grid columns) for the detail outputs.

    A chart and grid already on screen are updated in place (re-creating them costs a grid start and
    a new plot per click); they are added when a layer gets selected and removed when none is.
    """
    wanted, drawn = detail.figure is not None, bool(drawn_bars)
    if wanted and drawn:
        return no_update, [detail.figure], [detail.rows], [detail.columns]
    body = detail_body(run_id, detail) if wanted != drawn else no_update
    skipped = [no_update] * len(drawn_bars)
    return body, skipped, list(skipped), list(skipped)


def _unselected(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key not in ("layer", "pass")}


def _boxes_drawn(state: dict[str, Any], drawn: dict[str, Any] | None) -> bool:
    """Whether the runtime boxes on screen are those of this rank and window."""
    return all((drawn or {}).get(key) == state[key] for key in ("rank", "window"))


# Kernels attributed to layers give layer occurrences even without ranges.
@run_page("layers", "Layers", "Per-layer runtime and throughput, forward and backward", EVIDENCE, PATH, also="kernels")
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, chosen)
    boxes = view.page_box_figures(chosen, state)
    detail = view.detail(chosen, state)
    selected = state.selected
    controls = html.Div([
        rank_control("layers-rank", run_views.kernel_ranks(chosen), state.rank),
        html.Div([
            dbc.Label("Peak for", html_for="layers-dtype", className="me-2 mb-0 small text-muted"),
            native_select("layers-dtype", [{"label": DTYPE_LABELS[d], "value": d} for d in view.PEAK_CHOICES],
                          state.dtype, min_width="190px"),
            dcc.Input(id="layers-peak", type="number", min=0, debounce=True, value=state.peak,
                      placeholder="or TFLOP/s", className="form-control form-control-sm ms-2",
                      style={"width": "110px"}),
        ], className="d-flex align-items-center me-4"),
        window_chip("layers", state.window, run_views.run_origin_ns(chosen)),
    ], className="d-flex flex-wrap align-items-center gap-2 mb-2")
    detail_card = html.Div([
        html.Div([
            html.H6(detail.title, id="layers-detail-title", className="mb-0 me-3"),
            dbc.Button("clear", id="layers-clear-layer", size="sm", color="secondary", outline=True,
                       className="me-2", disabled=selected is None),
            dbc.Button("Download CSV", id="layers-csv", size="sm", color="primary", outline=True,
                       disabled=selected is None),
            csv_download("layers-csv-download"),
        ], className="d-flex align-items-center mb-2"),
        html.Div(detail_body(chosen.id, detail), id="layers-detail-body"),
    ], className="chart-card")
    no_flops = view.no_flops(boxes["layer-throughput"])
    no_layers = view.no_layers(boxes["layer-runtime"])
    return html.Div([
        header,
        dcc.Store(id="layers-run", data=chosen.id),
        dcc.Store(id="layers-selected", data=list(selected) if selected else None),
        dcc.Store(id="layers-window", data=format_window(*state.window) if state.window else None),
        url_state_store("layers", state.url_state()),
        controls,
        html.Div(note(view.note_texts(chosen, state)), id="layers-note", className="small text-muted mb-2"),
        dbc.Alert(view.NO_BOXES, id="layers-no-layers", color="secondary", className="small",
                  style={} if no_layers else HIDDEN),
        html.Div(chart("layers-runtime", boxes["layer-runtime"], f"{chosen.id}-layer-runtime"),
                 id="layers-runtime-card", className="chart-card", style=HIDDEN if no_layers else {}),
        html.Div(chart("layers-throughput", boxes["layer-throughput"], f"{chosen.id}-layer-throughput"),
                 id="layers-throughput-card", className="chart-card", style=HIDDEN if no_flops or no_layers else {}),
        dbc.Alert(NO_THROUGHPUT_TEXT, id="layers-no-throughput", color="secondary", className="small",
                  style={} if no_flops and not no_layers else HIDDEN),
        html.Div(detail_card, id="layers-detail-card", style=HIDDEN if no_layers else {}),
    ], id="layers-page")


HIDDEN = {"display": "none"}
NO_THROUGHPUT_TEXT = ("No throughput chart: FLOPs are unknown for every layer in this selection, so FLOP/s "
                      "cannot be computed. The trace records no FLOP counts (PyTorch profiler: with_flops=True).")
# The message stands in for the throughput chart whenever that chart has nothing to draw (rank or window
# changes can bring FLOPs in or out): decided from the figure itself, in the browser.
# Without a layer occurrence (a run with no module ranges and no layer-attributed kernel, or a rank or
# window holding none) both cards and the detail give way to one line.
clientside_callback(
    """
    function(runtime, throughput) {
        const meta = function(figure) { return (figure && figure.layout && figure.layout.meta) || {}; };
        const noLayers = Boolean(meta(runtime).no_layers);
        const noFlops = Boolean(meta(throughput).no_flops);
        const hidden = {display: "none"};
        return [noLayers || noFlops ? hidden : {}, noFlops && !noLayers ? {} : hidden,
                noLayers ? hidden : {}, noLayers ? {} : hidden, noLayers ? hidden : {}];
    }
    """,
    Output("layers-throughput-card", "style"),
    Output("layers-no-throughput", "style"),
    Output("layers-runtime-card", "style"),
    Output("layers-no-layers", "style"),
    Output("layers-detail-card", "style"),
    Input("layers-runtime", "figure"),
    Input("layers-throughput", "figure"),
    prevent_initial_call=True,
)


@callback(
    Output("layers-runtime", "figure"),
    Output("layers-throughput", "figure"),
    Output("layers-note", "children"),
    Output("layers-detail-title", "children"),
    Output("layers-detail-body", "children"),
    Output({**view.DETAIL_BAR, "part": ALL}, "figure"),
    Output({**view.DETAIL_TABLE, "part": ALL}, "rowData"),
    Output({**view.DETAIL_TABLE, "part": ALL}, "columnDefs"),
    Output("layers-clear-layer", "disabled"),
    Output("layers-csv", "disabled"),
    Output("layers-selected", "data"),
    Output("layers-window", "data"),
    Output("layers-window-chip", "style"),
    Output("layers-window-text", "children"),
    Output({"type": "url-state", "page": "layers"}, "data"),
    Input("layers-rank", "value"),
    Input("layers-dtype", "value"),
    Input("layers-peak", "value"),
    Input("layers-window-clear", "n_clicks"),
    Input("layers-clear-layer", "n_clicks"),
    Input("layers-runtime", "clickData"),
    Input("layers-throughput", "clickData"),
    State("layers-selected", "data"),
    State("layers-window", "data"),
    State("layers-run", "data"),
    State({"type": "url-state", "page": "layers"}, "data"),
    State({**view.DETAIL_BAR, "part": ALL}, "id"),
    prevent_initial_call=True,
)
def update_layers(rank_value: Any, dtype_value: Any, peak_value: Any, _clear_window: Any, _clear_layer: Any,
                  runtime_click: dict | None, throughput_click: dict | None, selected_value: list | None,
                  window_value: str | None, run_id: str, drawn: dict[str, Any] | None,
                  drawn_bars: list[Any]) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    state = view.State.from_query({"rank": rank_value, "dtype": dtype_value, "peak": peak_value,
                                   "window": window_value}, run)
    selected = selected_value
    fired = fired_ids()
    if "layers-window-clear" in fired:
        state = state.replace(window=None)
    if "layers-clear-layer" in fired:
        selected = None
    for chart_id, click in (("layers-runtime", runtime_click), ("layers-throughput", throughput_click)):
        clicked = layer_from_event(click) if chart_id in fired else None
        selected = clicked if clicked else selected
    state = state.select(selected)
    url_state = state.url_state()
    # Controls are compared with what is drawn, not read from the fired inputs alone: the renderer
    # drops the answer to a call that a newer call overtakes, and the newer call may name only a click.
    if fired <= LAYER_TRIGGERS and _unselected(url_state) == _unselected(drawn or {}):
        # A layer click moves the highlight band and lists the layer's kernels; the boxes stay.
        shapes = view.highlight(run, state)
        runtime, throughput = Patch(), Patch()
        runtime["layout"]["shapes"] = shapes
        throughput["layout"]["shapes"] = shapes
        detail = view.detail(run, state)
        return (runtime, throughput, no_update, detail.title, *detail_outputs(run_id, detail, drawn_bars),
                state.selected is None, state.selected is None, _selected_store(state), no_update, no_update,
                no_update, url_state)
    boxes = view.page_box_figures(run, state)
    detail = view.detail(run, state)
    return (
        # The peak only moves the throughput chart.
        no_update if fired and fired <= {"layers-dtype", "layers-peak"} and _boxes_drawn(url_state, drawn)
        else boxes["layer-runtime"],
        boxes["layer-throughput"], note(view.note_texts(run, state)), detail.title,
        *detail_outputs(run_id, detail, drawn_bars),
        state.selected is None, state.selected is None, _selected_store(state),
        format_window(*state.window) if state.window else None, {} if state.window else {"display": "none"},
        window_text(state.window, run_views.run_origin_ns(run)), url_state,
    )


def _selected_store(state: view.State) -> list[str] | None:
    return list(state.selected) if state.selected else None


register_grid_csv("layers-csv", {**view.DETAIL_TABLE, "part": ALL}, "layers-csv-download", matched=True,
                  keys=csv_columns)
