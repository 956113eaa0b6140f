"""Buffer liveness of two planner dumps: each buffer's [start_op, end_op) in A and in B, one row per buffer."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.compare_planner import ADDED, MOVED, REMOVED, RESIZED
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import TEMPLATE, empty_figure

CHANGE_COLOURS = {ADDED: "#2b8a3e", REMOVED: "#c92a2a", RESIZED: "#e8590c", MOVED: "#7048e8"}
SAME_COLOUR = "#adb5bd"


def liveness_figure(changes: pl.DataFrame, a: str, b: str) -> go.Figure:
    """Thin bars of A's intervals over thick bars of B's, coloured by what changed (buffer_changes rows)."""
    if changes.height == 0:
        return empty_figure("Neither dump has buffers")
    labels = [f"{m} {n}" + (f" #{k + 1}" if k else "") for m, n, k in changes.select("memory", "name", "nth").rows()]
    colours = [CHANGE_COLOURS.get(change, SAME_COLOUR) for change in changes.get_column("change").to_list()]
    traces = []
    for suffix, side, width in (("b", f"B ({b})", 0.7), ("a", f"A ({a})", 0.3)):
        start, end = changes.get_column(f"start_op_{suffix}"), changes.get_column(f"end_op_{suffix}")
        hover = [f"<b>{label}</b> · {change}<br>{side}: " + (f"live [{s}, {e})" if s is not None else "absent")
                 for label, change, s, e in zip(labels, changes.get_column("change").to_list(), start.to_list(),
                                                end.to_list(), strict=True)]
        traces.append(go.Bar(
            orientation="h", y=labels, base=start.to_list(), x=(end - start).to_list(), width=width, name=side,
            marker={"color": colours if suffix == "b" else "#343a40", "opacity": 0.85 if suffix == "b" else 0.9},
            hovertext=hover, hovertemplate="%{hovertext}<extra></extra>"))
    figure = go.Figure(traces)
    key = " · ".join(f"<span style='color:{c}'>■</span> {name}" for name, c in CHANGE_COLOURS.items())
    figure.update_layout(
        template=TEMPLATE, barmode="overlay", height=140 + 26 * len(labels), hovermode="closest",
        title={"text": f"Buffer liveness, A (thin dark bar) against B (wide bar)<br><sup>{key} · "
                       f"<span style='color:{SAME_COLOUR}'>■</span> same</sup>"},
        xaxis={"title": {"text": "operation id (live from start to end, exclusive)"}},
        yaxis={"autorange": "reversed", "automargin": True, "categoryorder": "array", "categoryarray": labels},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
        margin={"t": 90, "l": label_margin(labels)})
    return figure
