"""Layer charts: runtime and throughput box plots per layer, forward and backward side by side.

Boxes are drawn from precomputed statistics (quartiles, Tukey whiskers,
mean), so a run with a hundred thousand layer occurrences sends a few
numbers per box, plus at most a few dozen outliers per box, to the browser.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.units import format_flops_rate, time_unit_for
from dashboard.figures.kernels import fast_figure
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import PASS_COLOURS, empty_figure

PASS_LABELS = {"forward": "forward", "backward": "backward", "optimizer": "optimizer", "unattributed": "unattributed",
               "none": "no pass"}
_RATE_UNITS = ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1.0, "FLOP/s"))


def rate_unit_for(max_rate: float) -> tuple[float, str]:
    """(divisor, unit) so rates up to `max_rate` FLOP/s read legibly."""
    for factor, unit in _RATE_UNITS:
        if abs(max_rate) >= factor:
            return factor, unit
    return 1.0, "FLOP/s"


def highlight_shapes(layers: list[str], selected: tuple[str, str] | None) -> list[dict[str, Any]]:
    """A shaded band behind the selected layer (the page patches just this on a click)."""
    if not selected or selected[0] not in layers:
        return []
    position = layers.index(selected[0])
    return [{"type": "rect", "xref": "x", "yref": "paper", "x0": position - 0.5, "x1": position + 0.5, "y0": 0,
             "y1": 1, "fillcolor": "#ffc107", "opacity": 0.18, "line": {"width": 0}, "layer": "below"}]


def layer_order(stats: pl.DataFrame) -> list[str]:
    """Layers in model order (first start time)."""
    return stats.sort("order").get_column("layer").unique(maintain_order=True).to_list() if stats.height else []


def _scaled(rows: pl.DataFrame, column: str, factor: float) -> list[float | None]:
    return [None if v is None else v / factor for v in rows.get_column(column).to_list()]


def _box_traces(known: pl.DataFrame, outliers: pl.DataFrame | None, prefix: str, factor: float) -> list[dict]:
    traces: list[dict[str, Any]] = []
    for pass_ in known.get_column("pass").unique(maintain_order=True).to_list():
        rows = known.filter(pl.col("pass") == pass_)
        colour = PASS_COLOURS.get(pass_, "#999999")
        label = PASS_LABELS.get(pass_, pass_)
        traces.append({
            "type": "box", "x": rows.get_column("layer").to_list(), "name": label, "legendgroup": pass_,
            "offsetgroup": pass_, "boxmean": True, "boxpoints": False, "hoverinfo": "x+y+name",
            "q1": _scaled(rows, f"{prefix}_q1", factor), "median": _scaled(rows, f"{prefix}_median", factor),
            "q3": _scaled(rows, f"{prefix}_q3", factor), "mean": _scaled(rows, f"{prefix}_mean", factor),
            "lowerfence": _scaled(rows, f"{prefix}_low", factor), "upperfence": _scaled(rows, f"{prefix}_high", factor),
            "marker": {"color": colour}, "line": {"width": 1.5},
            "customdata": [[pass_, n] for n in rows.get_column(f"{prefix}_n").to_list()],
        })
        points = outliers.filter(pl.col("pass") == pass_) if outliers is not None and outliers.height else None
        if points is not None and points.height:
            traces.append({
                "type": "box", "x": points.get_column("layer").to_list(), "y": _scaled(points, "value", factor),
                "name": f"{label} outliers", "legendgroup": pass_, "offsetgroup": pass_, "showlegend": False,
                "boxpoints": "all", "jitter": 0, "pointpos": 0, "fillcolor": "rgba(0,0,0,0)", "line": {"width": 0},
                "marker": {"color": colour, "size": 4, "opacity": 0.7}, "hoveron": "points",
                "customdata": [[pass_, 0]] * points.height,
            })
    return traces


NO_FLOPS_MESSAGE = "FLOPs unknown for every layer in this selection: throughput cannot be computed"


def layer_box_figure(stats: pl.DataFrame, metric: str = "time", outliers: pl.DataFrame | None = None,
                     selected: tuple[str, str] | None = None, peak: float | None = None,
                     peak_label: str = "") -> go.Figure:
    """Box per (layer, pass). `metric` "time" = duration per occurrence; "rate" = FLOP/s.

    For "rate", layers without FLOPs are marked "FLOPs unknown" (no box); with
    a `peak` (FLOP/s) a dashed line marks it and a right axis reads % of peak.
    """
    if stats.height == 0:
        figure = empty_figure("No layer occurrences in this selection")
        figure.update_layout(meta={"no_layers": True}, height=140)  # the page shows one line instead
        return figure
    layers = layer_order(stats)
    if metric == "rate":
        known = stats.filter(pl.col("rate_n") > 0)
        if known.height == 0:
            figure = empty_figure(NO_FLOPS_MESSAGE)
            figure.update_layout(meta={"no_flops": True}, height=140)  # the page shows a message instead
            return figure
        top = max(known.get_column("rate_high").max(), known.get_column("rate_max").max() or 0)
        factor, unit = rate_unit_for(max(top, peak or 0))
        y_title, title = f"throughput ({unit})", "Throughput per layer occurrence (FLOPs / duration)"
    else:
        known = stats
        factor, unit = time_unit_for(stats.get_column("time_high").max())
        y_title, title = f"duration per occurrence ({unit})", "Runtime per layer occurrence"
    data = _box_traces(known, outliers, metric, factor)
    unknown = [layer for layer in layers if layer not in set(known.get_column("layer").to_list())]
    annotations: list[dict[str, Any]] = []
    if unknown:  # one grey mark per layer without FLOPs, named in the legend (text per layer ran together)
        data.append({"type": "scatter", "x": unknown, "y": [0] * len(unknown), "mode": "markers",
                     "name": "FLOPs unknown", "marker": {"symbol": "x-thin-open", "size": 10, "color": "#868e96",
                                                         "line": {"width": 2}},
                     "hovertemplate": "%{x}: FLOPs unknown, no throughput<extra></extra>"})
    slanted = len(layers) > 8
    layout: dict[str, Any] = {
        "title": {"text": title}, "boxmode": "group", "height": 440, "clickmode": "event",
        "legend": {"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
        # Below: the layer names, slanted when many (their height then grows with their width); reserved so
        # plotly draws once instead of growing the margin and drawing again.
        "margin": {"l": 66, "r": 80 if peak else 20, "t": 60,
                   "b": max(40, math.ceil(0.65 * label_margin(layers, least=0) + 20)) if slanted else 40},
        "xaxis": {"categoryorder": "array", "categoryarray": layers, "automargin": True,
                  "tickangle": -40 if slanted else 0},
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
        "annotations": annotations, "shapes": highlight_shapes(layers, selected),
    }
    if metric == "rate" and peak:
        upper = max(top, peak) * 1.08 / factor
        layout["yaxis"]["range"] = [0, upper]
        # Its own 1-2-5 ticks ("tickmode": "auto"): synced to the left axis's ticks they read 16 %, 32.1 %.
        layout["yaxis2"] = {"overlaying": "y", "side": "right", "range": [0, upper * factor / peak * 100],
                            "title": {"text": "% of peak"}, "showgrid": False, "ticksuffix": " %",
                            "tickmode": "auto", "nticks": 6, "automargin": True}
        annotations.append({"xref": "paper", "x": 0, "xanchor": "left", "y": peak / factor, "yanchor": "bottom",
                            "text": f"peak {peak_label}: {format_flops_rate(peak)}", "showarrow": False,
                            "font": {"size": 11, "color": "#6c757d"}})
        # The peak line is a trace at 100 % on the right axis, across a hidden [0, 1] x axis: a trace
        # (unlike a shape) also makes plotly draw the right axis, and leaves `shapes` to the selection.
        layout["xaxis2"] = {"overlaying": "x", "range": [0, 1], "visible": False}
        data.append({"type": "scatter", "x": [0, 1], "y": [100, 100], "xaxis": "x2", "yaxis": "y2",
                     "mode": "lines", "line": {"dash": "dash", "color": "#6c757d", "width": 1},
                     "showlegend": False, "hoverinfo": "skip", "name": "peak"})
    return fast_figure(data, layout)


def layer_from_event(event: dict | None) -> tuple[str, str] | None:
    """(layer, pass) of a clicked box, or None."""
    if not event:
        return None
    for point in event.get("points", []):
        data = point.get("customdata")
        layer = point.get("x")
        if isinstance(layer, str) and isinstance(data, list) and data and isinstance(data[0], str):
            return layer, data[0]
    return None
