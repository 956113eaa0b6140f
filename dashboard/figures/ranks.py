"""The ranks heatmap: step time per rank (rows) × profiler step (columns).

The axes are categories labelled with the rank and step numbers, so a
click event's x / y name the cell without depending on pixel positions. Ranks run top to bottom (rank 0 first),
as a job's ranks are listed; colour is step time, one unit for the whole chart.
"""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.units import time_unit_for
from dashboard.figures.kernels import fast_figure
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import empty_figure

ROW_PX = 14  # per rank, so 256 ranks stay a scrollable but legible chart
MIN_HEIGHT_PX, MAX_HEIGHT_PX = 260, 3600


def heatmap_height(ranks: int) -> int:
    return max(MIN_HEIGHT_PX, min(MAX_HEIGHT_PX, 120 + ROW_PX * ranks))


def step_heatmap(steps: pl.DataFrame) -> go.Figure:
    """A heatmap of `step_ns` (rank, step, step_ns rows, see analysis/rank_steps.step_matrix)."""
    if steps.height == 0:
        return empty_figure("No profiler steps in this run: step times need ProfilerStep#N ranges or "
                            "kernels with a step.")
    ranks = steps.get_column("rank").unique().sort().to_list()
    step_ids = steps.get_column("step").unique().sort().to_list()
    divisor, unit = time_unit_for(float(steps.get_column("step_ns").max()))  # type: ignore[arg-type]
    grid = pl.DataFrame({"rank": ranks}, schema={"rank": pl.Int32}).join(
        pl.DataFrame({"step": step_ids}, schema={"step": pl.Int64}), how="cross").join(
        steps.select("rank", "step", "step_ns"), on=["rank", "step"], how="left")
    # Rows in (rank, step) order; a missing step stays None (a gap), never 0.
    flat = (grid.sort("rank", "step").get_column("step_ns") / divisor).to_list()
    width = len(step_ids)
    values = [flat[i * width:(i + 1) * width] for i in range(len(ranks))]
    heat = {
        "type": "heatmap", "x": [str(s) for s in step_ids], "y": [str(r) for r in ranks], "z": values,
        "colorscale": "Viridis", "xgap": 1, "ygap": 1,
        "colorbar": {"title": {"text": f"step time ({unit})", "side": "right"}},
        "hovertemplate": f"rank %{{y}} · step %{{x}}<br>step time %{{z:.3g}} {unit}"
                         "<br>click to open on the timeline<extra></extra>",
    }
    layout = {
        # The right margin holds the colour bar (30 px, its labels and its title): reserved, plotly draws once.
        "height": heatmap_height(len(ranks)),
        "margin": {"l": 70, "r": 86 + label_margin([f"{max((v for v in flat if v is not None), default=0):.4g}"]),
                   "t": 30, "b": 50},
        "xaxis": {"title": {"text": "profiler step"}, "type": "category"},
        "yaxis": {"title": {"text": "rank"}, "type": "category", "autorange": "reversed"},
    }
    return fast_figure([heat], layout)


def clicked_cell(click: dict | None) -> tuple[int, int] | None:
    """(rank, step) of a clicked heatmap cell, or None.

    Plotly's heatmap click events carry the cell's x (step) and y (rank) labels but not
    its customdata, so the labels, which are the numbers themselves, name the cell.
    """
    try:
        point = (click or {})["points"][0]
        return int(point["y"]), int(point["x"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
