"""Kernel charts: top-N bars of total time, mean duration vs launch count.

Every point carries its selection key as its `customdata`, so a click or a
lasso on any chart names kernels the same way the URL does. Selected points
are shown through plotly's own `selectedpoints` (the rest fade); a page can
re-style a selection without rebuilding a chart (`selected_points`).

Figures are built from plain dicts and wrapped without plotly's validation
(`fast_figure`): validating a few hundred points costs ~20 ms a chart, too
much for a cross-filter callback; the tests check the output instead.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import polars as pl

from dashboard.analysis.kernel_names import label_lines
from dashboard.analysis.units import format_ns, time_unit_for
from dashboard.figures.log_axis import log_axis
from dashboard.figures.text_width import bottom_margin, label_margin, side_margin
from dashboard.figures.theme import TEMPLATE, distinct_colours, empty_figure

GROUP_NOUNS = {"name": "kernel", "op": "launching op", "layer": "layer"}
# The page's definitions of "total", written the same in the bar axis and the table headers.
TOTAL_ONE_RANK = "total time"
TOTAL_RANK_MEAN = "total time, mean per rank"
SHARE_DEFINITION = "share of kernel time in this selection"


def total_rank_sum(ranks: int) -> str:
    return f"total time, sum over {ranks} ranks"
BAR_HEIGHT = 24
TWO_LINE_BAR_HEIGHT = 40  # a kernel label broken over two lines (kernel_names.label_lines) needs the room
BAR_CHART_MARGINS = 112  # title (two lines) and x axis of a bar chart, px
# Plot area of the scatter at 1440 px (5 of 12 grid columns, 420 px tall), for fitting log-axis labels.
SCATTER_WIDTH_PX, SCATTER_HEIGHT_PX = 440, 300
_HOVER_WRAP = 90
_TEMPLATE_JSON = pio.templates[TEMPLATE].to_plotly_json()


def fast_figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """A figure from trace / layout dicts, with the app's template inlined, skipping validation."""
    return go.Figure({"data": data, "layout": {"template": _TEMPLATE_JSON, **layout}}, _validate=False)


def wrap_name(name: str, width: int = _HOVER_WRAP) -> str:
    """A long name broken into hover lines (plotly hover labels do not wrap by themselves)."""
    return "<br>".join(name[i:i + width] for i in range(0, len(name), width)) or name


def _hover_rows(summary: pl.DataFrame) -> list[str]:
    """Full name, then the numbers with their definitions (sum and mean per rank when both exist)."""
    per_rank = "rank_mean_ns" in summary.columns
    means = summary.get_column("rank_mean_ns").to_list() if per_rank else [None] * summary.height
    rows = summary.select("group", "total_ns", "share", "count", "mean_ns", "median_ns", "p95_ns").rows()
    hovers = []
    for (group, total, share, count, mean, median, p95), rank_mean in zip(rows, means, strict=True):
        total_text = (f"total {format_ns(total)}" if rank_mean is None else
                      f"total {format_ns(total)} summed over ranks · {format_ns(rank_mean)} mean per rank")
        hovers.append(f"<b>{wrap_name(group)}</b><br>{total_text} ({share:.1%} of kernel time)<br>"
                      f"{count:,} launches · per launch: mean {format_ns(mean)} · median {format_ns(median)} · "
                      f"p95 {format_ns(p95)}")
    return hovers


def kernel_colours(summary: pl.DataFrame, shown: pl.DataFrame) -> list[str]:
    """Colours of `shown`'s rows, one per distinct group, assigned over the whole `summary` in its order
    (so the bar chart and the scatter of one page agree)."""
    colours = distinct_colours(summary.get_column("group").to_list())
    return [colours[group] for group in shown.get_column("group").to_list()]


def selected_points(keys: list[str], selected: Collection[str]) -> list[int] | None:
    """Indices of `keys` that are selected, or None when nothing is (plotly: no selection)."""
    if not selected:
        return None
    chosen = set(selected)
    return [i for i, key in enumerate(keys) if key in chosen]


def tick_labels(labels: list[str]) -> list[str]:
    """Category ticks of a bar chart: each label on at most two lines (the app's one naming rule)."""
    return [label_lines(label) for label in labels]


def name_axis(labels: list[str]) -> dict[str, Any]:
    """The y axis of a bar chart of names, top to bottom in the given order.

    No `automargin`: the figure's left margin is `label_margin(labels)`, estimated wide (text_width), and
    plotly's automargin measured every label after drawing it (a sixth of /compare's drawing) for nothing
    to grow.
    """
    return {"autorange": "reversed", "automargin": False, "categoryorder": "array", "categoryarray": labels}


def figure_height(rows: int, two_lines: bool = False) -> int:
    """A bar chart's height: its margins and a row per bar, taller rows when a label takes two lines."""
    return max(260, BAR_CHART_MARGINS + (TWO_LINE_BAR_HEIGHT if two_lines else BAR_HEIGHT) * rows)


def _spread_traces(top: pl.DataFrame, factor: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Error bars (min..max over ranks) for the bars, and one tick per rank."""
    means = top.get_column("rank_mean_ns").to_list()
    lows = top.get_column("rank_min_ns").to_list()
    highs = top.get_column("rank_max_ns").to_list()
    error = {"type": "data", "symmetric": False, "color": "#495057", "thickness": 1.2, "width": 3,
             "array": [(h - m) / factor for h, m in zip(highs, means, strict=True)],
             "arrayminus": [(m - lo) / factor for m, lo in zip(means, lows, strict=True)]}
    strip = top.select("label", "key", "ranks", "rank_totals_ns").explode(["ranks", "rank_totals_ns"])
    ticks = {
        "type": "scatter", "mode": "markers", "name": "per rank", "showlegend": False,
        "x": [t / factor for t in strip.get_column("rank_totals_ns").to_list()],
        "y": tick_labels(strip.get_column("label").to_list()),
        "marker": {"symbol": "line-ns-open", "size": 11, "color": "#212529", "line": {"width": 1.5}},
        "customdata": strip.get_column("key").to_list(),
        "hovertext": [f"rank {r}: {format_ns(t)}" for r, t in strip.select("ranks", "rank_totals_ns").rows()],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    return error, ticks


def top_kernels_figure(summary: pl.DataFrame, top_n: int = 20, selected: Collection[str] = (),
                       spread: pl.DataFrame | None = None, group: str = "name", title: str | None = None,
                       total: str = TOTAL_ONE_RANK) -> go.Figure:
    """Horizontal bars of total time for the `top_n` groups, largest on top, with share of GPU time.

    With `spread` (per-rank totals of a multi-rank run) a bar is the mean total
    per rank, error bars span the min..max over ranks and ticks show each rank.
    `total` names what a bar's length is (e.g. "total time, sum over 2 ranks") without a spread.
    """
    noun = GROUP_NOUNS.get(group, group)
    if summary.height == 0:
        return empty_figure(f"No {noun}s in this selection")
    top = summary.head(top_n)
    if spread is not None:
        top = top.join(spread, on="group", how="left", maintain_order="left")
        values, high = top.get_column("rank_mean_ns").to_list(), top.get_column("rank_max_ns").to_list()
    else:
        values = high = top.get_column("total_ns").to_list()
    factor, unit = time_unit_for(max(high))
    keys, labels = top.get_column("key").to_list(), tick_labels(top.get_column("label").to_list())
    bars: dict[str, Any] = {
        "type": "bar", "orientation": "h", "name": "total", "showlegend": False,
        "x": [v / factor for v in values], "y": labels,
        "marker": {"color": kernel_colours(summary, top)},
        "text": [f"{s:.1%}" for s in top.get_column("share").to_list()], "textposition": "outside",
        "cliponaxis": False, "customdata": keys, "hovertext": _hover_rows(top),
        "hovertemplate": "%{hovertext}<extra></extra>", "selectedpoints": selected_points(keys, selected),
        "unselected": {"marker": {"opacity": 0.3}},
    }
    data = [bars]
    x_title = f"{total} ({unit})"
    default_title = f"Top {min(top_n, summary.height)} {noun}s by total GPU time"
    if spread is not None:
        bars["error_x"], ticks = _spread_traces(top, factor)
        data.append(ticks)
        x_title = f"{TOTAL_RANK_MEAN} ({unit})"
        default_title += ("<br><sup>bar = mean over ranks · whiskers = min–max · ticks = each rank · "
                          "label = share of kernel time</sup>")
    else:
        default_title += "<br><sup>label = share of kernel time</sup>"
    return fast_figure(data, {
        "title": {"text": title or default_title},
        "height": figure_height(top.height, any("<br>" in label for label in labels)),
        "margin": {"l": label_margin(labels), "r": 50, "t": 64, "b": 48}, "clickmode": "event", "dragmode": False,
        "bargap": 0.25,
        "xaxis": {"title": {"text": x_title}, "rangemode": "tozero"},
        "yaxis": name_axis(labels),
    })


def duration_scatter_figure(summary: pl.DataFrame, selected: Collection[str] = (), group: str = "name") -> go.Figure:
    """Mean duration against launch count (log-log); marker area follows total time."""
    noun = GROUP_NOUNS.get(group, group)
    if summary.height == 0:
        return empty_figure(f"No {noun}s in this selection")
    keys = summary.get_column("key").to_list()
    totals = summary.get_column("total_ns").to_list()
    biggest = max(totals) or 1
    factor, unit = time_unit_for(summary.get_column("mean_ns").max())
    counts = summary.get_column("count").to_list()
    means = [m / factor for m in summary.get_column("mean_ns").to_list()]
    positive = [m for m in means if m > 0] or [1.0]
    means = [max(m, min(positive)) for m in means]  # a 0 ns mean has no place on a log axis: the floor
    points = {
        "type": "scatter", "mode": "markers", "name": noun, "showlegend": False,
        "x": counts, "y": means,
        "marker": {"size": [6 + 30 * math.sqrt(max(t, 0) / biggest) for t in totals],
                   "color": kernel_colours(summary, summary),
                   "line": {"width": 0.5, "color": "white"}, "opacity": 0.85},
        "customdata": keys, "text": summary.get_column("label").to_list(),
        "hovertext": _hover_rows(summary), "hovertemplate": "%{hovertext}<extra></extra>",
        "selectedpoints": selected_points(keys, selected),
        "selected": {"marker": {"opacity": 1.0}}, "unselected": {"marker": {"opacity": 0.15}},
    }
    y_axis = log_axis(min(means), max(means), unit, SCATTER_HEIGHT_PX, horizontal=False)
    return fast_figure([points], {
        "title": {"text": f"Mean duration vs launches per {noun} (area = total time)"},
        "dragmode": "select", "clickmode": "event+select", "height": 420,
        "margin": {"l": side_margin(y_axis["ticktext"], titled=True), "b": bottom_margin(titled=True)},
        "xaxis": {**log_axis(min(counts), max(counts), length_px=SCATTER_WIDTH_PX, si=True),
                  "title": {"text": "launches (count)"}},
        "yaxis": {**y_axis, "title": {"text": f"mean duration ({unit})"}},
    })


def keys_from_event(event: dict | None) -> list[str]:
    """The selection keys named by a plotly clickData / selectedData event."""
    if not event:
        return []
    keys = []
    for point in event.get("points", []):
        data = point.get("customdata")
        key = data[0] if isinstance(data, list) and data else data
        if isinstance(key, str) and key not in keys:
            keys.append(key)
    return keys
