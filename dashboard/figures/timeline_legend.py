"""The key to the timeline's lane colours, right of the lanes: what each colour means in this view.

Entries only (no marks): passes, kernels (the names holding most GPU time in
view, or the four categories), ranges (the names holding most time in view),
profiler steps and CUDA API call classes, each group under its own title.

The key is one annotation (a coloured square and a name a line), not a plotly
legend of mark-less traces: a legend lays out, styles and measures every
entry on its own, which cost the page's first draw ~10 % for a key nobody
clicks (measured on the demo's training run: 16 entries).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboard.analysis.timeline import TimelineView
from dashboard.figures.text_width import text_px
from dashboard.figures.timeline_colours import (
    API_COLOURS,
    API_MEANING,
    CATEGORY_COLOURS,
    PASS_ORDER,
    STEP_COLOURS,
    event_colour,
)

LANE_KEY = "lane-key"  # the key's annotation's name
LEGEND_RANGE_NAMES = 5
LEGEND_KERNEL_NAMES = 5
LEGEND_PX = 240  # least right margin the key sits in
KEY_FONT_PX = 11
_SQUARE = "■"


@dataclass(frozen=True)
class KeyEntry:
    """One line of the key: a square of `colour` named `name`, in the group `group` titled `title`."""

    name: str
    colour: str
    group: str
    title: str


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


def lane_key(view: TimelineView, mode: str = "kernel") -> list[KeyEntry]:
    """The key to the lanes' colours in this window.

    Kernels and ranges are coloured by name, so the key lists the names with
    the most time in the window (exact bars and aggregated buckets, whose
    colour is their dominant name's); every other name is in its bar's or
    bucket's hover. By category, the key lists the categories instead.
    Profiler steps are one entry (two alternating greys): each step is one
    bar whose name its hover gives.
    """
    passes = _present(view, "pass")
    entries = [KeyEntry(name, event_colour(name, "pass"), "passes", "passes (per step)")
               for name in PASS_ORDER if name in passes]
    kernels = _time_in_view(view, "kernel")
    if kernels.height and mode == "category":
        classes = set(kernels.get_column("klass").fill_null("other").to_list()) | (
            {"memory"} if _present(view, "memcpy") else set())
        entries += [KeyEntry(klass, CATEGORY_COLOURS[klass], "kernels", "kernels by category")
                    for klass in CATEGORY_COLOURS if klass in classes]
    elif kernels.height:
        entries += [KeyEntry(_middle_cut(short or name), event_colour(name, "kernel"), "kernels",
                               "kernels (colour = name): most GPU time in view")
                    for name, short in kernels.head(LEGEND_KERNEL_NAMES).select("name", "short").iter_rows()]
    ranges = _time_in_view(view, "range")
    entries += [KeyEntry(_middle_cut(short or name), event_colour(name, "range"),
                           "ranges", "ranges (colour = name): most time in view")
                for name, short in ranges.head(LEGEND_RANGE_NAMES).select("name", "short").iter_rows()]
    if _present(view, "step"):
        entries.append(KeyEntry("ProfilerStep (alternating)", STEP_COLOURS[0], "steps", "profiler steps"))
    classes = _present(view, "api", "klass")
    entries += [KeyEntry(API_MEANING[klass], API_COLOURS[klass], "api", "CUDA API calls")
                for klass in API_COLOURS if klass in classes]
    return entries


def _middle_cut(text: str, limit: int = 34) -> str:
    """Long names keep their start and their end (`autograd::engine…ConvolutionBackward0`), what tells them apart."""
    if len(text) <= limit:
        return text
    tail = limit // 2
    return text[: limit - tail - 1] + "…" + text[-tail:]


def key_annotation(entries: list[KeyEntry]) -> dict[str, Any] | None:
    """The key as one annotation right of the plot, top-aligned with the lanes: each group's title in
    bold, then a line per entry."""
    if not entries:
        return None
    lines: list[str] = []
    for index, entry in enumerate(entries):
        if index and entry.group != entries[index - 1].group:
            lines.append("")  # a blank line between groups (plotly keeps an empty line's height)
        if index == 0 or entry.group != entries[index - 1].group:
            lines.append(f"<b>{html.escape(entry.title)}</b>")
        lines.append(f"<span style='color:{entry.colour}'>{_SQUARE}</span> {html.escape(entry.name)}")
    return {"text": "<br>".join(lines), "name": LANE_KEY, "xref": "paper", "yref": "paper", "x": 1.0, "y": 1.0,
            "xanchor": "left", "yanchor": "top", "xshift": 12, "align": "left", "showarrow": False,
            "font": {"size": KEY_FONT_PX}}


def key_px(entries: list[KeyEntry]) -> int:
    """Right margin (px) that holds the key: its widest line (square, space, name) or bold group title."""
    names = [text_px(f"{_SQUARE} {entry.name}", KEY_FONT_PX) for entry in entries]
    titles = [text_px(title, KEY_FONT_PX) * 1.1 for title in {entry.title for entry in entries}]  # bold: ~10 % wider
    return max([LEGEND_PX, *(int(width) + 30 for width in names + titles)])
