"""The GPU time breakdown chart: stacked bars of compute, communication, memory and idle, in ms."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.breakdown import BREAKDOWN_DEFINITION, HTA_SCOPE_DEFINITION
from dashboard.figures.kernels import fast_figure
from dashboard.figures.theme import empty_figure

# (column, legend label, colour): compute first, idle last and grey, so the eye reads "work, then waste".
PARTS = (("compute_ns", "compute", "#0072B2"), ("communication_ns", "communication", "#E69F00"),
         ("memory_ns", "memory (copies, memsets)", "#009E73"), ("idle_ns", "idle", "#BAB0AC"))
# HTA's three parts (get_temporal_breakdown), in HTA's scope.
HTA_PARTS = (("compute_ns", "compute", "#0072B2"), ("non_compute_ns", "non-compute", "#E69F00"),
             ("idle_ns", "idle", "#BAB0AC"))
NS_PER_MS = 1e6


def bar_labels(frame: pl.DataFrame, by_step: bool) -> list[str]:
    """`rank 0` per rank; `r0 · step 5` (or `r0 · no step`) per step."""
    if not by_step:
        return [f"rank {rank}" for rank in frame.get_column("rank")]
    return [f"r{rank} · {'no step' if step is None else f'step {step}'}"
            for rank, step in frame.select("rank", "step").rows()]


def breakdown_figure(frame: pl.DataFrame, by_step: bool = False) -> go.Figure:
    """One stacked bar per rank (or per rank and step), the four parts adding up to the span."""
    return _stacked(frame, PARTS, "GPU time per rank and profiler step" if by_step else "GPU time per rank",
                    BREAKDOWN_DEFINITION, by_step)


def hta_breakdown_figure(frame: pl.DataFrame) -> go.Figure:
    """HTA's temporal breakdown (compute, non-compute, idle per rank) in HTA's scope (breakdown.hta_breakdown)."""
    return _stacked(frame, HTA_PARTS, "GPU time per rank in HTA's scope (HTA's temporal breakdown)",
                    HTA_SCOPE_DEFINITION, False)


def _stacked(frame: pl.DataFrame, parts: tuple[tuple[str, str, str], ...], title: str, definition: str,
             by_step: bool) -> go.Figure:
    if frame.height == 0:
        return empty_figure("No kernels or copies: no GPU time to break down")
    labels = bar_labels(frame, by_step)
    spans = frame.get_column("span_ns").to_list()
    # Plain dicts, wrapped unvalidated (figures.kernels.fast_figure): go.Bar + update_layout(template=...)
    # copied the template and validated every property, ~0.2 s a chart of the page's first render.
    data = []
    for column, name, colour in parts:
        values = frame.get_column(column).to_list()
        shares = [value / span if span else 0.0 for value, span in zip(values, spans, strict=True)]
        data.append({
            "type": "bar", "x": labels, "y": [value / NS_PER_MS for value in values], "name": name,
            "marker": {"color": colour},
            "customdata": [[share * 100, span / NS_PER_MS] for share, span in zip(shares, spans, strict=True)],
            "hovertemplate": f"%{{x}}<br>{name}: %{{y:,.3f}} ms (%{{customdata[0]:.1f}}% of the "
                             "%{customdata[1]:,.3f} ms span)<extra></extra>"})
    return fast_figure(data, {
        "barmode": "stack", "title": {"text": title}, "yaxis": {"title": {"text": "time (ms)"}},
        "xaxis": {"title": {"text": "rank · step" if by_step else "rank"}, "type": "category"},
        "legend": {"title": {"text": ""}, "traceorder": "normal"}, "meta": {"definition": definition},
        # Room below for the axis title and the one-row legend under it (the theme's y = -0.18): reserved,
        # so plotly draws once instead of growing the margin and drawing again.
        "margin": {"b": 92}})
