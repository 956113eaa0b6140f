"""GraphPreview: a graph painted at once from its drawing list, under the Cytoscape graph that replaces it.

Cytoscape starts in ~130 ms of main-thread time on a warm load; the page's charts would wait for it. A
graph shown with `previewed_graph` is painted first from figures/planner_preview.py's drawing list (a
canvas, fitted as Cytoscape fits, a few ms), and Cytoscape is drawn over it once every chart is
(AfterCharts). The preview takes no pointer events and steps aside once Cytoscape has drawn: taps, zoom and
the exports are Cytoscape's, as before. The browser side is assets/graph-preview.js.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dash import html

from dashboard.layouts.after_charts import AfterCharts
from dashboard.layouts.browser_component import BrowserComponent


class GraphPreview(BrowserComponent):
    """Paints `spec` (planner_preview.preview_spec) fitted like Cytoscape's `fit`, until `graph_id` draws.

    Keyword arguments:
    - id: the component's id.
    - spec: the drawing list.
    - graph_id: the Cytoscape graph that takes over.
    - fit: {"padding", "min_zoom", "max_zoom"} as the graph's layout and zoom limits.
    - style: the container's style (the graph's own: size, border), positioned over its place.
    """

    _prop_names: ClassVar[list[str]] = ["id", "spec", "graph_id", "fit", "style"]
    _type = "GraphPreview"

    def __init__(self, id: str | None = None, spec: dict[str, Any] | None = None, graph_id: str | None = None,
                 fit: dict[str, float] | None = None, style: dict[str, Any] | None = None) -> None:
        super().__init__(id=id, spec=spec, graph_id=graph_id, fit=fit, style=style)


def previewed_graph(graph: Any, spec: dict[str, Any], *, padding: float, height: int) -> html.Div:
    """`graph` (a dash-cytoscape graph with a fitted preset layout) drawn after the charts, its preview at once."""
    props = graph.to_plotly_json()["props"]
    preview = GraphPreview(id=f"{props['id']}-preview", spec=spec, graph_id=props["id"],
                           fit={"padding": padding, "min_zoom": props.get("minZoom"), "max_zoom": props.get("maxZoom")},
                           style=props.get("style"))
    return html.Div([preview, AfterCharts(graph, min_height=height)], style={"position": "relative"})
