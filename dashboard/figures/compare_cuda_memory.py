"""Two runs' CUDA allocator peaks per device: peak allocated and peak reserved, A beside B."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.compare_memory import COLOUR_A, COLOUR_B
from dashboard.figures.theme import TEMPLATE, empty_figure


def _hover(row: dict, suffix: str, label: str, what: str) -> str:
    value = row[f"peak_{what}_{suffix}"]
    text = f"<b>{label}</b> {row['device']}: peak {what} {format_bytes(value)}"
    if what == "allocated" and row[f"culprit_{suffix}"] is not None:
        text += f"<br>culprit {row[f'culprit_{suffix}']} holds {format_bytes(row[f'culprit_bytes_{suffix}'])}"
    return text


def compare_cuda_memory_figure(deltas: pl.DataFrame, a: str, b: str) -> go.Figure:
    """Grouped bars per device: peak allocated (left) and peak reserved (right), A and B side by side."""
    if deltas.height == 0:
        return empty_figure("Neither run has CUDA memory events")
    largest = max(float(deltas.select(pl.max_horizontal(
        "peak_allocated_a", "peak_allocated_b", "peak_reserved_a", "peak_reserved_b")).max().item() or 0), 1.0)
    divisor, unit = bytes_unit_for(largest)
    figure = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                           subplot_titles=("peak allocated (live tensors)", "peak reserved (held in segments)"))
    rows = deltas.to_dicts()
    devices = [row["device"] for row in rows]
    for column, what in enumerate(("allocated", "reserved"), start=1):
        for suffix, label, colour in (("a", f"A ({a})", COLOUR_A), ("b", f"B ({b})", COLOUR_B)):
            values = [row[f"peak_{what}_{suffix}"] for row in rows]
            figure.add_trace(go.Bar(
                x=devices, y=[None if v is None else v / divisor for v in values], name=label, marker_color=colour,
                legendgroup=suffix, showlegend=column == 1, offsetgroup=suffix,
                hovertext=[_hover(row, suffix, label, what) for row in rows],
                hovertemplate="%{hovertext}<extra></extra>"), row=1, col=column)
    figure.update_yaxes(title_text=f"bytes ({unit})", row=1, col=1, rangemode="tozero")
    figure.update_xaxes(title_text="device")
    figure.update_layout(template=TEMPLATE, barmode="group", height=360, hovermode="closest",
                         title={"text": "Device memory peaks per device (allocator events), A against B"},
                         legend={"orientation": "h", "y": 1.22, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
                         margin={"t": 120})
    return figure
