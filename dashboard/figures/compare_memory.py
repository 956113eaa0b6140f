"""Two runs' device memory on one aligned op axis: a row per buffer type, A and B as lines, peaks marked."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.analysis.memory import downsample
from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.theme import TEMPLATE, empty_figure

COLOUR_A, COLOUR_B = "#1c7ed6", "#e8590c"
DIVERGE = "#868e96"
MAX_POINTS = 3000  # per line: a 100 k-op run keeps each bucket's lowest and highest snapshot (memory.downsample)


def _shown_types(curves: pl.DataFrame, peaks: pl.DataFrame) -> list[str]:
    """Buffer types in peaks' order that hold anything on either side (an all-zero TRACE says nothing)."""
    held = peaks.filter((pl.col("peak_a_bytes_per_bank").fill_null(0) > 0) | (pl.col("peak_b_bytes_per_bank")
                                                                               .fill_null(0) > 0))
    return [t for t in held.get_column("buffer_type").to_list() if t in set(curves.get_column("buffer_type"))]


def _hover(rows: pl.DataFrame, suffix: str, label: str) -> list[str]:
    texts = []
    for position, op_a, type_a, op_b, type_b, value in rows.select(
            "position", "op_index_a", "op_type_a", "op_index_b", "op_type_b", f"allocated_{suffix}").rows():
        a = f"A op {op_a} {type_a}" if op_a is not None else "A: no op here"
        b = f"B op {op_b} {type_b}" if op_b is not None else "B: no op here"
        texts.append(f"<b>{label}</b>: {format_bytes(value)} per bank before the op<br>aligned op {position}<br>"
                     f"{a}<br>{b}")
    return texts


def compare_memory_figure(curves: pl.DataFrame, peaks: pl.DataFrame, parted: dict[str, Any] | None,
                          a: str, b: str) -> go.Figure:
    """Allocated bytes per bank before each aligned op, A and B per buffer type; peaks starred, and a dashed
    line where the curves first part."""
    types = _shown_types(curves, peaks)
    if not types:
        return empty_figure("Neither run allocates device memory")
    figure = make_subplots(rows=len(types), cols=1, shared_xaxes=True, vertical_spacing=0.05)
    for row, buffer_type in enumerate(types, start=1):
        mine = curves.filter(pl.col("buffer_type") == buffer_type)
        peak = peaks.filter(pl.col("buffer_type") == buffer_type).row(0, named=True)
        largest = max(peak["peak_a_bytes_per_bank"] or 0, peak["peak_b_bytes_per_bank"] or 0)
        divisor, unit = bytes_unit_for(largest)
        # B wide and pale under A thin and dark: where the curves agree both stay visible.
        for suffix, label, colour, width in (("b", f"B ({b})", COLOUR_B, 5), ("a", f"A ({a})", COLOUR_A, 1.5)):
            side = _thinned(mine.filter(pl.col(f"allocated_{suffix}").is_not_null()), f"allocated_{suffix}")
            figure.add_trace(go.Scatter(
                x=side.get_column("position").to_list(),
                y=(side.get_column(f"allocated_{suffix}") / divisor).to_list(), mode="lines",
                line={"color": colour, "width": width, "shape": "hv"}, name=label,
                opacity=0.45 if suffix == "b" else 1.0, legendgroup=suffix,
                showlegend=row == 1, hovertext=_hover(side, suffix, label), hovertemplate="%{hovertext}<extra></extra>",
            ), row=row, col=1)
            _peak_marker(figure, mine, peak, suffix, label, colour, divisor, row)
        figure.update_yaxes(title_text=f"{buffer_type} ({unit})", row=row, col=1, rangemode="tozero")
        if parted is not None:
            figure.add_vline(x=parted["position"], line={"color": DIVERGE, "dash": "dash", "width": 1}, row=row, col=1)
    figure.update_xaxes(title_text="aligned op (position on the shared axis)", row=len(types), col=1)
    title = "Allocated device memory per bank before each op, A against B on one op axis, a row per buffer type"
    if parted is not None:
        title += f"<br><sup>dashed line: the curves part at aligned op {parted['position']} ★ = each side's peak</sup>"
    figure.update_layout(template=TEMPLATE, title={"text": title}, height=140 + 220 * len(types),
                         hovermode="closest", legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0,
                                                      "xanchor": "right"}, margin={"t": 100})
    return figure


def _thinned(side: pl.DataFrame, value: str) -> pl.DataFrame:
    """At most ~MAX_POINTS rows, bucketed along the shared axis, peaks and troughs kept."""
    if side.height <= MAX_POINTS:
        return side
    return downsample(side.with_columns(pl.col("position").alias("op_index")), value, MAX_POINTS,
                      by=("buffer_type",)).drop("op_index")


def _peak_marker(figure: go.Figure, mine: pl.DataFrame, peak: dict[str, Any], suffix: str, label: str, colour: str,
                 divisor: float, row: int) -> None:
    op = peak[f"peak_op_index_{suffix}"]
    if op is None:
        return
    at = mine.filter(pl.col(f"op_index_{suffix}") == op)
    if at.height == 0:
        return
    culprit = f"op {peak[f'culprit_op_index_{suffix}']} {peak[f'culprit_op_type_{suffix}']}"
    figure.add_trace(go.Scatter(
        x=[at.get_column("position")[0]], y=[peak[f"peak_{suffix}_bytes_per_bank"] / divisor], mode="markers",
        marker={"symbol": "star", "size": 14, "color": colour, "line": {"color": "white", "width": 1}},
        name=f"peak {label}", showlegend=False,
        hovertext=[f"<b>peak of {label}</b>: {format_bytes(peak[f'peak_{suffix}_bytes_per_bank'])} per bank<br>"
                   f"allocated by {culprit}"], hovertemplate="%{hovertext}<extra></extra>",
    ), row=row, col=1)
