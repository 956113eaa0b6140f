"""Comparison charts: where kernel time moved between two runs or ranks.

Like the kernel charts, every point carries its kernel key as `customdata`,
so a click selects the same kernel here, on /kernels and on /timeline.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.compare import BOTH, ONLY_A, ONLY_B
from dashboard.analysis.compare_kernels import RENAMED
from dashboard.analysis.units import format_ns, time_unit_for
from dashboard.figures.kernels import (
    SCATTER_HEIGHT_PX,
    SCATTER_WIDTH_PX,
    fast_figure,
    figure_height,
    kernel_colours,
    name_axis,
    selected_points,
    tick_labels,
    wrap_name,
)
from dashboard.figures.log_axis import log_axis
from dashboard.figures.text_width import bottom_margin, label_margin, side_margin
from dashboard.figures.theme import empty_figure

SLOWER, FASTER = "#c92a2a", "#2b8a3e"  # B spends more / less time than A


def _ratio_text(ratio: float | None, presence: str) -> str:
    if presence == ONLY_B:
        return "new in B"
    if presence == ONLY_A:
        return "gone in B"
    return f"×{ratio:.2f}" if ratio is not None else ""


def _hover(rows: pl.DataFrame, a: str, b: str) -> list[str]:
    hovers = []
    for group, total_a, total_b, count_a, count_b, delta, ratio, presence in rows.select(
        "group", "total_a_ns", "total_b_ns", "count_a", "count_b", "delta_ns", "ratio", "presence"
    ).rows():
        sign = "+" if delta >= 0 else "−"
        side_a = f"{format_ns(total_a)} in {count_a:,} launches" if presence != ONLY_B else "absent"
        side_b = f"{format_ns(total_b)} in {count_b:,} launches" if presence != ONLY_A else "absent"
        hovers.append(f"<b>{wrap_name(group)}</b><br>A ({a}): {side_a}<br>B ({b}): {side_b}<br>"
                      f"B − A: {sign}{format_ns(abs(delta))} {_ratio_text(ratio, presence)}")
    if "renamed_from" in rows.columns:  # a renamed kernel says what A called it and how the two were matched
        hovers = [hover if old is None else f"{hover}<br>renamed: A's name {wrap_name(old)}<br>matched by {how}"
                  for hover, old, how in zip(hovers, rows.get_column("renamed_from").to_list(),
                                             rows.get_column("match").to_list(), strict=True)]
    return hovers


def delta_figure(comparison: pl.DataFrame, top_n: int, selected: Collection[str], a: str, b: str) -> go.Figure:
    """Horizontal bars of B − A total time for the `top_n` kernels that moved most."""
    moved = comparison.filter(pl.col("delta_ns") != 0).head(top_n)
    if moved.height == 0:
        return empty_figure("No kernel's total time differs between A and B")
    keys = moved.get_column("key").to_list()
    return _change_bars(
        moved.get_column("delta_ns").to_list(), moved.get_column("label").to_list(), moved, keys, _hover(moved, a, b),
        selected_points(keys, selected), "B − A total time",
        f"Top {moved.height} kernels by change in total time (B − A)<br>"
        f"<sup><span style='color:{SLOWER}'>■</span> more time in B · "
        f"<span style='color:{FASTER}'>■</span> less time in B · right: B / A</sup>",
    )


RATIO_COLUMN_PX = 84  # the right margin holding the B / A column


def _ratio_axis(texts: list[str]) -> dict[str, Any]:
    """B / A as a column right of the plot: the tick labels of a second y axis, one per bar row.

    A label at a bar's end would run into the kernel names whenever a bar reaches the axis (every
    'faster' bar does). Tick labels rather than one annotation per row: plotly lays annotations out
    one by one, ~1 ms each (a 66-row layer chart drew in 128 ms with them, 91 ms with this axis)."""
    rows = len(texts)
    return {"overlaying": "y", "side": "right", "range": [rows - 0.5, -0.5], "tickmode": "array",
            "tickvals": list(range(rows)), "ticktext": texts, "showgrid": False, "zeroline": False,
            "fixedrange": True, "ticks": "", "tickfont": {"size": 12, "color": "#495057"}}


_RATIO_HEADER = {"text": "<b>B / A</b>", "xref": "paper", "x": 1.0, "xanchor": "left", "xshift": 8,
                 "yref": "paper", "y": 1.0, "yanchor": "bottom", "showarrow": False, "name": "ratio-header"}
# The second y axis draws only with a trace on it: an empty one, never hovered.
_RATIO_ANCHOR = {"type": "scatter", "x": [], "y": [], "yaxis": "y2", "hoverinfo": "skip", "showlegend": False,
                 "name": "B / A"}


def _change_bars(deltas: list[float], labels: list[str], rows: pl.DataFrame, customdata: list[Any],
                 hovertext: list[str], selected: list[int] | None, what: str, title: str) -> go.Figure:
    """Horizontal bars of a change per row (ns), red where B takes longer, with a B / A column."""
    factor, unit = time_unit_for(max((abs(d) for d in deltas), default=0.0))
    ratios = [_ratio_text(r, p) for r, p in rows.select("ratio", "presence").rows()]
    labels = tick_labels(labels)
    bars: dict[str, Any] = {
        "type": "bar", "orientation": "h", "showlegend": False, "name": what,
        "x": [d / factor for d in deltas], "y": labels,
        "marker": {"color": [SLOWER if d > 0 else FASTER for d in deltas]},
        "text": ratios, "textposition": "none",
        "customdata": customdata, "hovertext": hovertext, "hovertemplate": "%{hovertext}<extra></extra>",
        "selectedpoints": selected, "unselected": {"marker": {"opacity": 0.3}},
    }
    return fast_figure([bars, _RATIO_ANCHOR], {
        "title": {"text": title}, "height": figure_height(len(labels), any("<br>" in label for label in labels)),
        "margin": {"l": label_margin(labels), "r": RATIO_COLUMN_PX, "t": 70, "b": 48}, "clickmode": "event",
        "dragmode": False,
        "bargap": 0.25, "annotations": [_RATIO_HEADER], "yaxis2": _ratio_axis(ratios),
        "xaxis": {"title": {"text": f"{what} ({unit})"}, "zeroline": True, "zerolinewidth": 2},
        "yaxis": name_axis(labels),
    })


def totals_scatter(comparison: pl.DataFrame, selected: Collection[str], a: str, b: str) -> go.Figure:
    """Total time in A against B per kernel found on both sides (log-log), with the line B = A."""
    both = comparison.filter(pl.col("presence").is_in([BOTH, RENAMED]))
    if both.height == 0:
        return empty_figure("No kernel runs on both sides")
    largest = max(int(both.get_column("total_a_ns").max()), int(both.get_column("total_b_ns").max()))
    smallest = max(1, min(int(both.get_column("total_a_ns").min()), int(both.get_column("total_b_ns").min())))
    factor, unit = time_unit_for(largest)
    keys = both.get_column("key").to_list()
    points = {
        "type": "scatter", "mode": "markers", "name": "kernels", "showlegend": False,
        "x": [v / factor for v in both.get_column("total_a_ns").to_list()],
        "y": [v / factor for v in both.get_column("total_b_ns").to_list()],
        "marker": {"size": 11, "color": kernel_colours(both, both),
                   "line": {"width": 0.5, "color": "white"}},
        "customdata": keys, "hovertext": _hover(both, a, b), "hovertemplate": "%{hovertext}<extra></extra>",
        "selectedpoints": selected_points(keys, selected),
        "selected": {"marker": {"opacity": 1.0}}, "unselected": {"marker": {"opacity": 0.15}},
    }
    span = [smallest / factor / 1.5, largest / factor * 1.5]
    diagonal = {"type": "scatter", "mode": "lines", "x": span, "y": span, "name": "B = A", "showlegend": False,
                "line": {"color": "#868e96", "dash": "dash", "width": 1}, "hoverinfo": "skip"}
    x_axis = log_axis(span[0], span[1], unit, SCATTER_WIDTH_PX)
    y_axis = log_axis(span[0], span[1], unit, SCATTER_HEIGHT_PX, horizontal=False)
    return fast_figure([diagonal, points], {
        "title": {"text": "Total time per kernel, A against B<br><sup>above the dashed line: more time in B</sup>"},
        "height": 440, "dragmode": "select", "clickmode": "event+select",
        # Room for the labels (the x axis's last one overhangs the plot by half its width): drawn once.
        "margin": {"l": side_margin(y_axis["ticktext"], titled=True), "b": bottom_margin(titled=True),
                   "r": max(20, label_margin(x_axis["ticktext"][-1:]) // 2 + 8)},
        # The sides are named above the charts: long run names here ran over the title.
        "xaxis": {**x_axis, "title": {"text": f"A: total time ({unit})"}},
        "yaxis": {**y_axis, "title": {"text": f"B: total time ({unit})"}},
    })


def _layer_hover(rows: pl.DataFrame, a: str, b: str) -> list[str]:
    hovers = []
    for layer, pass_, median_a, median_b, count_a, count_b, ratio, presence in rows.select(
        "layer", "pass", "median_a_ns", "median_b_ns", "count_a", "count_b", "ratio", "presence"
    ).rows():
        side_a = f"median {format_ns(median_a)} over {count_a:,} runs" if presence != ONLY_B else "absent"
        side_b = f"median {format_ns(median_b)} over {count_b:,} runs" if presence != ONLY_A else "absent"
        hovers.append(f"<b>{layer}</b> · {pass_}<br>A ({a}): {side_a}<br>B ({b}): {side_b}<br>"
                      f"{_ratio_text(ratio, presence)}")
    if "tflops_a" in rows.columns:  # median TFLOP/s of each side where its FLOPs are known
        hovers = [hover + "".join(f"<br>{side}: median {rate:.1f} TFLOP/s" for side, rate in (("A", ta), ("B", tb))
                                  if rate is not None)
                  for hover, ta, tb in zip(hovers, rows.get_column("tflops_a").to_list(),
                                           rows.get_column("tflops_b").to_list(), strict=True)]
    return hovers


def layer_delta_figure(layers: pl.DataFrame, selected: tuple[str, str] | None, a: str, b: str) -> go.Figure:
    """Per (layer, pass), in model order: change of the median runtime, B − A."""
    if layers.height == 0:
        return empty_figure("Neither side has layers (no module ranges or layer attribution)")
    if not layers.filter(pl.col("presence") == BOTH).height:  # every bar would be 0: say why instead
        only_a = layers.filter(pl.col("presence") == ONLY_A).height
        only_b = layers.filter(pl.col("presence") == ONLY_B).height
        return empty_figure(f"No layer and pass on both sides ({only_a} only in A, {only_b} only in B): "
                            "no runtime to compare")
    deltas = [d if d is not None else 0.0 for d in layers.get_column("delta_ns").to_list()]
    pairs = layers.select("layer", "pass").rows()
    chosen = [i for i, pair in enumerate(pairs) if pair == selected] if selected is not None else None
    return _change_bars(
        deltas, [f"{layer} · {pass_}" for layer, pass_ in pairs], layers, [list(pair) for pair in pairs],
        _layer_hover(layers, a, b), chosen, "median B − A",
        "Median runtime per layer and pass, B − A (model order)<br>"
        "<sup>right: B / A · a layer found on one side only has no bar</sup>",
    )


def layer_from_click(event: dict | None) -> tuple[str, str] | None:
    """(layer, pass) of a clicked layer bar."""
    points = (event or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    if isinstance(data, list) and len(data) == 2 and all(isinstance(v, str) for v in data):
        return data[0], data[1]
    return None
