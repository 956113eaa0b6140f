"""Selection marks for the planner views, as small changes to already-drawn views.

A 2000-op channel graph and timelines with hundreds of bars are sent to the
browser once per group. A selection then changes as little as possible:
* the graph: the `highlight` / `faded` / `marked` classes of `planner_graph` on
  the few elements concerned (`graph_selection` says which; the page applies
  them in the browser), never a new stylesheet, which restyles every element;
* a timeline or live-memory chart: layout shapes only (a box around the
  selected buffer's bar, a band at the marked op), which plotly redraws without
  re-plotting its bars.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.planner import MARK

BAND_OPACITY = 0.25


def graph_selection(highlight_uids: Collection[int] = (), highlight_nodes: Collection[str] = (),
                    marked_nodes: Collection[str] = (), fade: bool = True) -> dict[str, Any]:
    """What the graph shows as selected: channel uids and op nodes to highlight, op nodes to mark.

    `fade` greys every other op and channel while something is highlighted; it
    restyles the whole graph, so the page turns it off for big graphs.
    """
    return {"uids": sorted(int(u) for u in highlight_uids), "nodes": sorted(highlight_nodes),
            "marked": sorted(marked_nodes), "fade": bool(fade)}


def _bar_row(figure: go.Figure, buffer_index: int) -> tuple[int, float, float] | None:
    """(category position, start, end) of a buffer's bar in a liveness timeline, if drawn."""
    if not figure.data or getattr(figure.data[0], "type", None) != "bar":
        return None
    bars = figure.data[0]
    for position, index in enumerate(bars.customdata or ()):
        if index == buffer_index:
            start = bars.base[position]
            return position, start, start + bars.x[position]
    return None


def selection_shapes(figure: go.Figure, *, buffer_index: int | None = None, marked_op: int | None = None,
                     label: bool = True) -> list[dict[str, Any]]:
    """The figure's own shapes plus the selection marks.

    * `buffer_index` (liveness timelines): a box around that buffer's bar and a
      light band across its row;
    * `marked_op`: the one-op-wide band `[op, op + 1)` (like
      `liveness_timeline(marked_op=)`: a buffer is live at the op exactly when
      its bar overlaps the band) with a line at its left edge labelled "op N"
      (if `label`). Labels are shape labels, not annotations: a relayout of
      shapes alone redraws only the shapes; touching annotations redraws the axes.
    """
    shapes = [shape.to_plotly_json() for shape in figure.layout.shapes or ()]
    row = _bar_row(figure, buffer_index) if buffer_index is not None else None
    if row is not None:
        # Bars are drawn in customdata order on a category axis, so the row's position is its index.
        position, start, end = row
        shapes.append({"type": "rect", "xref": "x domain", "yref": "y", "x0": 0, "x1": 1,
                       "y0": position - 0.5, "y1": position + 0.5, "fillcolor": MARK, "opacity": 0.08,
                       "line": {"width": 0}, "layer": "below", "name": "selected-buffer-row"})
        shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": start, "x1": end,
                       "y0": position - 0.48, "y1": position + 0.48, "line": {"color": MARK, "width": 3},
                       "name": "selected-buffer"})
    if marked_op is not None:
        shapes.append({"type": "rect", "xref": "x", "yref": "y domain", "x0": marked_op, "x1": marked_op + 1,
                       "y0": 0, "y1": 1, "fillcolor": MARK, "opacity": BAND_OPACITY, "line": {"width": 0},
                       "name": "marked-op"})
        line: dict[str, Any] = {"type": "line", "xref": "x", "yref": "y domain", "x0": marked_op, "x1": marked_op,
                                "y0": 0, "y1": 1, "line": {"color": MARK, "width": 1.5}, "name": "marked-op-line"}
        if label:
            line["label"] = {"text": f"op {marked_op}", "textposition": "end", "textangle": 0, "xanchor": "left",
                             "yanchor": "bottom", "font": {"color": MARK, "size": 11}}
        shapes.append(line)
    return shapes
