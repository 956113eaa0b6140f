"""`/planner` for a plain DOT graph (its Dash pieces): Graphviz's own drawing, zoomable, with clickable nodes.

The drawing is the run's source DOT laid out by `dot -Tsvg` (figures.graphviz_svg), served as a
sanitised SVG by `/runs/<id>/graph.svg` and shown in a same-origin frame; `assets/dot-view.js`
adds wheel zoom, drag to pan and the zoom buttons, and reports a clicked node, cluster or edge
into `planner-dot-picked`, whose rows (name, label, attributes) `details` lists (pages.planner's callback).

Without Graphviz, or when it cannot draw the graph, the page says why in one line and shows the
graph's nodes and edges with the built-in layout instead (layouts.planner.builtin_dot_body).
"""

from __future__ import annotations

import json
from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.exports.routes import graph_svg_href
from dashboard.figures.graphviz_svg import DrawResult

FRAME_ID = "planner-dot-svg"
PICKED_ID = "planner-dot-picked"  # {kind, name, t}: set by assets/dot-view.js on a click in the drawing
DETAILS_ID = "planner-dot-details"
FRAME_HEIGHT = 760  # the most; a small drawing gets a frame its own height (at 100 %), at least MIN
FRAME_MIN_HEIGHT = 240


def _zoom_button(label: str, action: str, title: str) -> html.Button:
    return html.Button(label, className="btn btn-sm btn-outline-secondary me-1 dot-zoom", title=title,
                       **{"data-dot-zoom": action, "data-target": FRAME_ID})


def graphviz_body(run_id: str, group: str, result: DrawResult) -> list[Any]:
    """The drawing in its frame, its zoom controls and the panel that lists a clicked element."""
    drawing = result.drawing
    assert drawing is not None
    controls = html.Div([
        html.Small("Drawn by Graphviz (dot) from the run's source file.", className="text-muted me-3"),
        _zoom_button("−", "out", "zoom out"),
        _zoom_button("+", "in", "zoom in"),
        _zoom_button("Fit", "fit", "the whole graph in the frame (text may get small)"),
        _zoom_button("100%", "actual", "the size Graphviz drew it"),
        html.A("Graph as SVG", href=graph_svg_href(run_id, group, download=True), download="",
               className="btn btn-sm btn-outline-primary ms-2", id="planner-dot-svg-download"),
        html.Small("scroll to zoom, drag to pan, click a node for its attributes", className="text-muted ms-3"),
    ], className="d-flex flex-wrap align-items-center mb-2")
    height = min(FRAME_HEIGHT, max(FRAME_MIN_HEIGHT, drawing.height + 40))
    frame = html.Iframe(
        id=FRAME_ID, src=graph_svg_href(run_id, group), className="dot-view", title=f"Graphviz drawing of {group}",
        style={"width": "100%", "height": f"{height:.0f}px", "border": "1px solid #dee2e6",
               "borderRadius": "6px", "background": "white"},
        **{"data-width": f"{drawing.width:.1f}", "data-height": f"{drawing.height:.1f}"},
    )
    return [
        controls,
        dcc.Store(id=PICKED_ID),
        dcc.Store(id="planner-dot-group", data={"run": run_id, "group": group}),
        dbc.Row([
            dbc.Col(html.Div(frame, className="chart-card"), lg=9),
            dbc.Col(html.Div(html.Span("Click a node, a cluster or an edge to see its attributes.",
                                       className="text-muted small"), id=DETAILS_ID, className="chart-card small"),
                    lg=3),
        ], className="g-3"),
    ]


def missing_notice(problem: str) -> dbc.Alert:
    return dbc.Alert([html.B("Not drawn by Graphviz. "), problem,
                      html.Div("Below: the graph's nodes and edges with the built-in layout (HTML labels shown as "
                               "text).", className="small mt-1")],
                     color="warning", id="planner-dot-graphviz-missing", className="mb-2")


def details(rows: list[dict[str, Any]], kind: str, name: str) -> list[Any]:
    if not rows:
        return [html.Div([html.B(name), html.Span(f" ({kind})", className="text-muted")]),
                html.Div("no attributes recorded for it", className="text-muted")]
    parts: list[Any] = []
    for row in rows:
        title = f"{row['src']} → {row['dst']}" if kind == "edge" else row["node"]
        items = [("label", row.get("label")), ("cluster", row.get("cluster"))]
        items += sorted(row["attributes"].items())
        parts.append(html.Div([
            html.Div([html.B(title, className="dot-picked-name"), html.Span(f" ({kind})", className="text-muted")]),
            html.Dl([element for key, value in items if value not in (None, "")
                     for element in (html.Dt(key), html.Dd(html.Code(value if isinstance(value, str)
                                                                      else json.dumps(value))))],
                    className="mb-2 dot-attributes"),
        ]))
    return parts
