"""The key to the timeline's lane colours, right of the lanes: what each colour means in this view.

Entries only (no marks): passes, kernels (the names holding most GPU time in
view, or the four categories), ranges (the names holding most time in view),
profiler steps and CUDA API call classes, each group under its own title.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from dashboard.analysis.timeline import TimelineView
from dashboard.figures.timeline_colours import (
    API_COLOURS,
    API_MEANING,
    CATEGORY_COLOURS,
    PASS_ORDER,
    STEP_COLOURS,
    event_colour,
)

LANE_LEGEND = "legend2"  # the key to the lanes; the default legend holds the copy kinds
LEGEND_RANGE_NAMES = 5
LEGEND_KERNEL_NAMES = 5
LEGEND_PX = 240  # right margin the key sits in
Trace = dict[str, Any]


def _key_entry(name: str, colour: str, group: str, title: str) -> Trace:
    """A legend-only entry (no mark): a square of `colour` named `name` in the lane legend."""
    return dict(type="scatter", x=[None], y=[None], mode="markers", name=name, legend=LANE_LEGEND,
                marker={"color": colour, "symbol": "square", "size": 11}, showlegend=True, hoverinfo="skip",
                legendgroup=group, legendgrouptitle={"text": title})


def _visible_ns(start: pl.Expr, end: pl.Expr, view: TimelineView) -> pl.Expr:
    return (pl.min_horizontal(end, pl.lit(view.end_ns)) - pl.max_horizontal(start, pl.lit(view.start_ns))).clip(0)


def _time_in_view(view: TimelineView, kind: str) -> pl.DataFrame:
    """name, short, klass, time (ns in the window) of one kind's events: exact bars and buckets."""
    events, cells = view.events, view.cells
    timed = pl.concat([
        events.filter(pl.col("kind") == kind).select(
            "name", "short", "klass", _visible_ns(pl.col("start_ns"), pl.col("end_ns"), view).alias("time")),
        cells.filter(pl.col("kind") == kind).select(
            "name", "short", "klass", (pl.col("busy") * (pl.col("end_ns") - pl.col("start_ns"))).alias("time")),
    ], how="vertical_relaxed")
    return (timed.group_by("name").agg(pl.col("short").first(), pl.col("klass").first(), pl.col("time").sum())
            .sort(["time", "name"], descending=[True, False]))


def _present(view: TimelineView, kind: str, column: str = "name") -> set[str]:
    found = set(view.events.filter(pl.col("kind") == kind).get_column(column).drop_nulls().to_list())
    return found | set(view.cells.filter(pl.col("kind") == kind).get_column(column).drop_nulls().to_list())


def lane_legend(view: TimelineView, mode: str = "kernel") -> list[Trace]:
    """The key to the lanes' colours in this window.

    Kernels and ranges are coloured by name, so the key lists the names with
    the most time in the window (exact bars and aggregated buckets, whose
    colour is their dominant name's); every other name is in its bar's or
    bucket's hover. By category, the key lists the categories instead.
    Profiler steps are one entry (two alternating greys): each step is one
    bar whose name its hover gives.
    """
    passes = _present(view, "pass")
    entries = [_key_entry(name, event_colour(name, "pass"), "passes", "passes (per step)")
               for name in PASS_ORDER if name in passes]
    kernels = _time_in_view(view, "kernel")
    if kernels.height and mode == "category":
        classes = set(kernels.get_column("klass").fill_null("other").to_list()) | (
            {"memory"} if _present(view, "memcpy") else set())
        entries += [_key_entry(klass, CATEGORY_COLOURS[klass], "kernels", "kernels by category")
                    for klass in CATEGORY_COLOURS if klass in classes]
    elif kernels.height:
        entries += [_key_entry(_middle_cut(short or name), event_colour(name, "kernel"), "kernels",
                               "kernels (colour = name): most GPU time in view")
                    for name, short in kernels.head(LEGEND_KERNEL_NAMES).select("name", "short").iter_rows()]
    ranges = _time_in_view(view, "range")
    entries += [_key_entry(_middle_cut(short or name), event_colour(name, "range"),
                           "ranges", "ranges (colour = name): most time in view")
                for name, short in ranges.head(LEGEND_RANGE_NAMES).select("name", "short").iter_rows()]
    if _present(view, "step"):
        entries.append(_key_entry("ProfilerStep (alternating)", STEP_COLOURS[0], "steps", "profiler steps"))
    classes = _present(view, "api", "klass")
    entries += [_key_entry(API_MEANING[klass], API_COLOURS[klass], "api", "CUDA API calls")
                for klass in API_COLOURS if klass in classes]
    return entries


def _middle_cut(text: str, limit: int = 34) -> str:
    """Long names keep their start and their end (`autograd::engine…ConvolutionBackward0`), what tells them apart."""
    if len(text) <= limit:
        return text
    tail = limit // 2
    return text[: limit - tail - 1] + "…" + text[-tail:]


def lane_legend_layout(plot_px: int) -> dict[str, Any]:
    """Right of the lanes, top-aligned with them: a key, so clicks on it change nothing."""
    return {"orientation": "v", "x": 1.0, "xanchor": "left", "xref": "paper", "y": 1.0, "yanchor": "top",
            "yref": "paper", "itemclick": False, "itemdoubleclick": False, "font": {"size": 11},
            "tracegroupgap": 8, "groupclick": "toggleitem", "bgcolor": "rgba(255,255,255,0)"}
