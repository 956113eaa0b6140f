"""What the timeline draws over its lanes: flow arrows, search matches and the selected event.

- flows: one scatter trace per kind of arrow (API call -> kernel, op -> kernel): line
  segments separated by gaps, an arrowhead at each end, so thousands of arrows are
  one trace and one payload array each;
- matches: a row above the lanes with a mark per bucket holding search matches
  (how many in its hover), so matches show where they are even in aggregated lanes;
- focus: an outline around the selected event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from dashboard.analysis.timeline import TimelineView
from dashboard.figures.timeline_marks import TimeAxis

# kind -> colour, width, legend name. The window's arrows are faint, the selected event's bold.
FLOW_STYLE = {"window": ("rgba(73,80,87,0.45)", 0.8, "launches in view: API call → GPU"),
              "launch": ("#212529", 1.8, "selected: API call → GPU"),
              "op": ("#6F42C1", 1.8, "selected: op → GPU (launched inside it)")}
# Above this many arrows of the window they are drawn as lines without heads: at that density the
# heads merge into a haze, and each head is an SVG element of its own (720 headed arrows took plotly
# ~170 ms more to draw than the same lines). The selected event's arrows always have heads.
HEADED_FLOWS = 200
MATCH_COLOUR = "#D63384"
FOCUS_COLOUR = "#000000"
MATCH_ROW = -1.0  # y of the matches row, above lane 0
Trace = dict[str, Any]


def flow_traces(flows: pl.DataFrame, rows: dict[int, float], axis: TimeAxis) -> list[Trace]:
    """Arrows between lanes (lane -> y in `rows`); flows from or to a lane not drawn are left out."""
    flows = flows.filter(pl.col("from_lane").is_in(list(rows)) & pl.col("to_lane").is_in(list(rows)))
    traces: list[Trace] = []
    for kind in FLOW_STYLE:
        part = flows.filter(pl.col("kind") == kind)
        if part.is_empty():
            continue
        colour, width, label = FLOW_STYLE[kind]
        count = part.height
        x = np.full(count * 3, np.nan)
        y = np.full(count * 3, np.nan)
        x[0::3] = axis(part.get_column("from_ns").to_numpy().astype(np.float64))
        x[1::3] = axis(part.get_column("to_ns").to_numpy().astype(np.float64))
        y[0::3] = part.get_column("from_lane").replace_strict(rows, return_dtype=pl.Float64).to_numpy()
        y[1::3] = part.get_column("to_lane").replace_strict(rows, return_dtype=pl.Float64).to_numpy()
        # Arrows start at the lower edge of the caller's bar and end at the upper edge of the kernel's.
        down = y[1::3] > y[0::3]
        y[0::3] += np.where(down, 0.4, -0.4)
        y[1::3] += np.where(down, -0.4, 0.4)
        trace = dict(type="scatter", mode="lines", x=x, y=y, name=label, legendgroup=f"flow {kind}",
                     showlegend=True, hoverinfo="skip", line={"color": colour, "width": width},
                     meta={"flows": count, "kind": kind})
        if kind != "window" or count <= HEADED_FLOWS:
            size = np.zeros(count * 3)
            size[1::3] = 9 if kind != "window" else 7.2
            trace.update(mode="lines+markers",
                         marker={"symbol": "arrow", "angleref": "previous", "size": size, "color": colour})
        traces.append(trace)
    return traces


def match_trace(view: TimelineView, axis: TimeAxis) -> Trace | None:
    """The matches row: a triangle over each bucket holding matches, its count in the hover."""
    if view.search is None:
        return None
    found = view.matches.filter(pl.col("matches") > 0)
    middle = (found.get_column("start_ns") + found.get_column("end_ns")) / 2
    return dict(type="scatter", mode="markers", x=axis(middle.to_numpy().astype(np.float64)),
                y=np.full(found.height, MATCH_ROW), customdata=found.get_column("matches").to_numpy(),
                marker={"symbol": "triangle-down", "size": 9, "color": MATCH_COLOUR}, showlegend=False,
                name="search matches",
                hovertemplate=f"%{{customdata}} match(es) · t ≈ %{{x:.6~g}} {axis.unit}<extra></extra>")


def focus_trace(view: TimelineView, rows: dict[int, float], axis: TimeAxis) -> Trace | None:
    """An outline around the selected event (its full extent, even where it is thinner than a pixel)."""
    focus = view.focus.filter(pl.col("lane").is_in(list(rows)))
    if focus.is_empty():
        return None
    event = focus.row(0, named=True)
    y = rows[event["lane"]]
    start, end = axis(float(event["start_ns"])), axis(float(event["end_ns"]))
    return dict(type="scatter", mode="lines", x=[start, end, end, start, start],
                y=[y - 0.48, y - 0.48, y + 0.48, y + 0.48, y - 0.48], name="selected",
                line={"color": FOCUS_COLOUR, "width": 2.5}, showlegend=False, hoverinfo="skip",
                meta={"focus": event["name"]})
