"""Planner views: SMEM / TMEM liveness timelines and live memory against capacity (plotly).

x is the operation id. A buffer live over `[start_op, end_op)` is a bar covering
those op ids; operation x is the cell `[x, x + 1)`, so a marked op is a band one
op wide and a buffer is live there exactly when its bar overlaps the band.
The channel graph (dash-cytoscape elements) lives in `planner_graph` and is
re-exported here.
"""

from __future__ import annotations

from collections.abc import Collection

import plotly.colors
import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.planner_liveness import CAPACITY, buffers_of, live_usage, over_capacity
from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.planner_graph import (
    CHANNEL_GRAPH_LAYOUT,
    CHANNEL_GRAPH_STYLESHEET,
    DAGRE_LAYOUT,
    DOT_GRAPH_LAYOUT,
    DOT_GRAPH_STYLESHEET,
    channel_graph_elements,
    dot_graph_elements,
    op_label,
)
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import MEMORY_COLOURS, TEMPLATE, empty_figure

__all__ = [
    "CHANNEL_GRAPH_LAYOUT",
    "CHANNEL_GRAPH_STYLESHEET",
    "DAGRE_LAYOUT",
    "DOT_GRAPH_LAYOUT",
    "DOT_GRAPH_STYLESHEET",
    "channel_graph_elements",
    "dot_graph_elements",
    "live_memory_figure",
    "liveness_timeline",
    "op_label",
]

FADED = "#dee2e6"  # bars outside a highlight
MARK = "#6f42c1"  # the marked op band and the selection outline
_COLOURSCALE = {
    "SMEM": [[0.0, "#c7e9c0"], [1.0, MEMORY_COLOURS["SMEM"]]],
    "TMEM": [[0.0, "#fcbba1"], [1.0, MEMORY_COLOURS["TMEM"]]],
}


def _size_text(memory: str, row: dict) -> str:
    if memory == "SMEM":
        return format_bytes(row["bytes"]) if row["bytes"] is not None else "size unknown"
    if row["cols"] is None:
        return "size unknown"
    return f"{row['rows']}x{row['cols']} ({row['cols']} columns)"


def _hover(memory: str, row: dict) -> str:
    channels = ", ".join(f"ch{uid}" for uid in row["channels"] or []) or "no channels"
    lines = [
        f"<b>{row['name']}</b> ({memory} #{row['buffer_index']})",
        f"size: {_size_text(memory, row)}",
        f"live: [{row['start_op']}-{row['end_op']}) = {row['end_op'] - row['start_op']} ops",
        f"channels: {channels}",
    ]
    if memory == "SMEM" and row["buffer_id"] is not None:
        lines.insert(2, f"allocation id: B{row['buffer_id']}")
    if memory == "TMEM" and row["operand_d"]:
        lines.append(f"MMA operand D in {row['operand_d']} channels")
    return "<br>".join(lines)


def liveness_timeline(
    buffers: pl.DataFrame,
    group: str,
    memory: str,
    *,
    highlight_buffers: Collection[int] | None = None,
    marked_op: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """One horizontal bar per buffer over operation ids; colour and thickness grow with size.

    `highlight_buffers` (buffer_index values) keeps those bars coloured and greys the
    rest; `marked_op` draws the one-op band of a tapped operation. TMEM allocations
    used as MMA operand D are hatched. Each bar's customdata is its buffer_index.
    """
    selected = buffers_of(buffers, group, memory).sort("start_op", "buffer_index")
    if selected.is_empty():
        return empty_figure(f"No {memory} buffers in this dump"
                            + (" (SMEM allocator 1 writes no SMEM liveness graph)" if memory == "SMEM" else ""))
    size_column = "bytes" if memory == "SMEM" else "cols"
    sizes = selected[size_column].fill_null(0).to_list()
    largest = max(max(sizes), 1)
    scale = _COLOURSCALE[memory]
    highlighted = set(highlight_buffers or ())
    rows = selected.to_dicts()
    colours, outlines, widths, labels, hovers, patterns = [], [], [], [], [], []
    for row, size in zip(rows, sizes, strict=True):
        colour = plotly.colors.sample_colorscale(scale, [size / largest])[0]
        chosen = row["buffer_index"] in highlighted
        colours.append(colour if not highlighted or chosen else FADED)
        outlines.append(MARK if chosen else "rgba(0,0,0,0.35)")
        widths.append(0.3 + 0.6 * size / largest)
        labels.append(f"{row['name']} [{row['buffer_index']}]")
        hovers.append(_hover(memory, row))
        patterns.append("/" if (row.get("operand_d") or 0) > 0 else "")
    figure = go.Figure(layout={"template": TEMPLATE})
    figure.add_trace(go.Bar(
        name=f"{memory} buffers",
        orientation="h",
        y=labels,
        base=selected["start_op"].to_list(),
        x=(selected["end_op"] - selected["start_op"]).to_list(),
        width=widths,
        marker={"color": colours, "line": {"color": outlines, "width": [2.5 if o == MARK else 0.5 for o in outlines]},
                "pattern": {"shape": patterns, "fgcolor": "rgba(0,0,0,0.45)"}},
        customdata=selected["buffer_index"].to_list(),
        hovertext=hovers,
        hoverinfo="text",
        showlegend=False,
    ))
    # The colour key: an invisible trace carrying the size colour scale.
    unit = "bytes" if memory == "SMEM" else "columns"
    figure.add_trace(go.Scatter(
        x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
        marker={"colorscale": scale, "cmin": 0, "cmax": largest, "color": [largest],
                "colorbar": {"title": {"text": unit}, "thickness": 12, "len": 0.8}},
    ))
    if any(patterns):
        figure.add_trace(go.Bar(x=[None], y=[None], name="MMA operand D (hatched)", orientation="h",
                                marker={"color": "white", "pattern": {"shape": "/"}, "line": {"width": 0.5}}))
    if marked_op is not None:
        figure.add_vrect(x0=marked_op, x1=marked_op + 1, fillcolor=MARK, opacity=0.25, line_width=0,
                         annotation_text=f"op {marked_op}", annotation_position="top left")
    figure.update_layout(
        title=title or f"{memory} buffer liveness — {group}",
        barmode="overlay",
        bargap=0.1,
        clickmode="event+select",
    )
    # The page shows a long timeline in a scroll box, where the bottom axis starts out of view: the same
    # axis is repeated on top (plotly draws an axis only when a trace uses it, hence the empty trace).
    figure.add_trace(go.Scatter(x=[], y=[], xaxis="x2", showlegend=False, hoverinfo="skip", name="op axis"))
    legend_px = 40 if any(patterns) else 0
    height = max(260, 28 * len(rows) + 150 + legend_px)
    plot_px = height - 90 - 48 - legend_px
    figure.update_layout(
        xaxis2={"matches": "x", "overlaying": "x", "side": "top", "ticks": "outside", "showgrid": False},
        # Right: the size colour bar (12 px, its labels, its title); bottom: the hatching key under the axis title.
        # Reserved here, so plotly draws once instead of growing the margins and drawing again.
        height=height, margin={"l": 140, "t": 90, "b": 48 + legend_px + (14 if legend_px else 0),
                               "r": 60 + label_margin([f"{largest:,}", unit])},
        # Under the bottom axis's title, left-aligned: above the plot it met the title in a half-width card.
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -(64 / plot_px), "yanchor": "top"})
    figure.update_xaxes(title_text="operation id", selector={"side": None})
    figure.update_yaxes(autorange="reversed", type="category", categoryorder="array", categoryarray=labels)
    return figure


def live_memory_figure(
    buffers: pl.DataFrame,
    group: str,
    memory: str,
    *,
    capacity: int | None = None,
    marked_op: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """Live SMEM bytes (or TMEM columns) over operation ids against the capacity line.

    Steps hold from one op id to the next; ranges above capacity are shaded red.
    SMEM sizes are one copy per buffer, so the curve is a lower bound under
    multi-buffering.
    """
    limit = CAPACITY[memory] if capacity is None else capacity
    usage = live_usage(buffers, group, memory)
    if usage.is_empty():
        return empty_figure(f"No {memory} buffers in this dump")
    if memory == "SMEM":
        divisor, unit = bytes_unit_for(max(usage["live"].max() or 0, limit))
    else:
        divisor, unit = 1.0, "columns"
    ops = usage["op_id"].to_list()
    live = [value / divisor for value in usage["live"].to_list()]
    texts = [format_bytes(v) if memory == "SMEM" else f"{v} columns" for v in usage["live"].to_list()]
    figure = go.Figure(layout={"template": TEMPLATE})
    figure.add_trace(go.Scatter(
        x=ops, y=live, name=f"live {memory}", mode="lines", line_shape="hv", fill="tozeroy",
        line={"color": MEMORY_COLOURS[memory]},
        customdata=list(zip(texts, usage["live_buffers"].to_list(), strict=True)),
        hovertemplate="from op %{x}: %{customdata[0]} in %{customdata[1]} buffers<extra></extra>",
    ))
    limit_text = format_bytes(limit) if memory == "SMEM" else f"{limit} columns"
    figure.add_trace(go.Scatter(
        x=[ops[0], ops[-1]], y=[limit / divisor] * 2, name=f"capacity ({limit_text})",
        mode="lines", line={"color": "#212529", "dash": "dash"}, hoverinfo="skip",
    ))
    for over in over_capacity(buffers, group, memory, limit).iter_rows(named=True):
        figure.add_vrect(x0=over["start_op"], x1=over["end_op"], fillcolor="#dc3545", opacity=0.15, line_width=0)
    if marked_op is not None:
        figure.add_vrect(x0=marked_op, x1=marked_op + 1, fillcolor=MARK, opacity=0.25, line_width=0)
    figure.update_layout(title=title or f"Live {memory} — {group}", height=300, hovermode="x")
    figure.update_xaxes(title_text="operation id")
    figure.update_yaxes(title_text=f"live {memory} ({unit})", rangemode="tozero")
    return figure
