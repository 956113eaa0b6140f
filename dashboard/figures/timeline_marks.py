"""Marks of the timeline figure: bucket heatmaps, exact-event bars, colours and the time axis.

Aggregated lanes are one heatmap (a bucket is a cell: its colour is the
dominant name's, paler when the bucket is less busy), which the browser
draws as a single image whatever the bucket count; exact events are
horizontal bars (`orientation="h", base=start, x=duration`), one trace per
kernel name so the full name is sent once, not per event. Traces are plain
dicts with numpy arrays (see timeline.timeline_figure_dict).
"""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from dashboard.analysis.timeline import TimelineView
from dashboard.analysis.units import time_unit_for
from dashboard.figures.theme import PASS_COLOURS, colour_for

GREY = "#ced4da"  # kernels outside the selection
LEVELS = 4  # busy-fraction shades per colour: up to 25, 50, 75, 100 %
MIN_BAR_FRACTION = 1 / 1500  # thinner events are widened to this share of the window so they stay visible
FULL_NAME_LINE = 90
FULL_NAME_LINES = 24  # hover carries the full demangled name (issue 15); only a pathological one is cut
# One distinct colour per copy kind (hues far apart); kinds outside the table take the spare ones.
COPY_COLOURS = {
    "memcpy HtoD": "#5D3A9B", "memcpy DtoH": "#1B9E77", "memcpy DtoD": "#E6AB02", "memcpy HtoH": "#A6761D",
    "memcpy PtoP": "#E7298A", "memset": "#6C757D", "memcpy": "#495057",
}
_SPARE_COPY_COLOURS = ("#66A61E", "#1F78B4", "#B15928", "#6A3D9A", "#FB9A99", "#17BECF")
STACK_COLOUR = "#495057"
PASS_ORDER = ("forward", "backward", "optimizer")
PASS_STRIPE = 0.8 / len(PASS_ORDER)  # each pass has its stripe of the passes lane, so bands of one step may overlap
LANE_LEGEND = "legend2"  # the key to the passes and ranges lanes; the default legend holds the copy kinds
LEGEND_RANGE_NAMES = 5
Trace = dict[str, Any]


@lru_cache(maxsize=8192)  # colour_for walks every byte of a (long) kernel name
def event_colour(name: str | None, kind: str | None) -> str:
    """Kernels and ranges by name (theme.colour_for), copies by kind, passes by pass."""
    if name is None:
        return GREY
    if kind == "memcpy":
        return copy_colour(name)
    if kind == "pass":
        return PASS_COLOURS.get(name, PASS_COLOURS["none"])
    return colour_for(name)


def copy_colour(series: str) -> str:
    """The colour of a copy kind (`memcpy HtoD`, `memset`...): fixed for known kinds, else a spare one."""
    if series in COPY_COLOURS:
        return COPY_COLOURS[series]
    return _SPARE_COPY_COLOURS[sum(series.encode("utf-8")) % len(_SPARE_COPY_COLOURS)]


def blend(colour: str, level: int) -> str:
    """`colour` mixed with white: level LEVELS-1 is the colour itself, level 0 the palest."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    share = 0.3 + 0.7 * level / (LEVELS - 1)
    mix = [round(255 - (255 - c) * share) for c in (red, green, blue)]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def escape_html(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all("&", "&amp;", literal=True).str.replace_all("<", "&lt;", literal=True).str.replace_all(
        ">", "&gt;", literal=True)


def wrapped_name(name: str) -> str:
    """A full name for hover: escaped, cut into lines, at most FULL_NAME_LINES of them."""
    lines = [name[i:i + FULL_NAME_LINE] for i in range(0, len(name), FULL_NAME_LINE)]
    text = "<br>".join(html.escape(line) for line in lines[:FULL_NAME_LINES])
    return text + ("…" if len(lines) > FULL_NAME_LINES else "")


class TimeAxis:
    """Nanoseconds on the run clock -> the axis value: time since run start in a fitted unit."""

    def __init__(self, view: TimelineView) -> None:
        self.origin_ns = view.run_start_ns
        self.divisor, self.unit = time_unit_for(view.end_ns - view.start_ns)

    def __call__(self, ns: Any) -> Any:
        return (ns - self.origin_ns) / self.divisor

    def expr(self, column: str) -> pl.Expr:
        return (pl.col(column) - self.origin_ns) / self.divisor


def colour_table(pairs: pl.DataFrame) -> pl.DataFrame:
    """name, kind, colour for distinct (name, kind) pairs: Python once per distinct name."""
    pairs = pairs.unique()
    colours = [event_colour(name, kind) for name, kind in pairs.select("name", "kind").iter_rows()]
    return pairs.with_columns(pl.Series("colour", colours, dtype=pl.String))


def _cell_colours(cells: pl.DataFrame, selection_active: bool) -> pl.DataFrame:
    """Add `colour` (dominant name's, or the selected kernel's, or grey) and `level` (busy shade)."""
    own = colour_table(cells.select("name", "kind"))
    cells = cells.join(own, on=["name", "kind"], how="left", nulls_equal=True)
    if selection_active:
        chosen = colour_table(cells.select(pl.col("selected_name").alias("name"), pl.lit("kernel").alias("kind")))
        cells = cells.join(chosen.select(pl.col("name").alias("selected_name"), pl.col("colour").alias("chosen")),
                           on="selected_name", how="left", nulls_equal=True)
        cells = cells.with_columns(
            pl.when(pl.col("selected_busy") > 0).then(pl.col("chosen"))
            .when(pl.col("kind") == "kernel").then(pl.lit(GREY)).otherwise(pl.col("colour")).alias("colour"))
    level = ((pl.col("busy") * LEVELS).ceil() - 1).clip(0, LEVELS - 1).cast(pl.Int32)
    return cells.with_columns(pl.col("colour").fill_null(GREY), level.alias("level"))


def lane_heatmap(cells: pl.DataFrame, rows: dict[int, int], y_values: list[float], view: TimelineView,
                 axis: TimeAxis, selection_active: bool) -> Trace | None:
    """The aggregated buckets of the lanes in `rows` (lane -> row number) as one heatmap trace.

    Per cell the payload is one shade number, two or three numbers for the
    hover (busy %, events starting, selected %) and the name that coloured
    it; everything else lives once in the hover template.
    """
    cells = cells.filter(pl.col("lane").is_in(list(rows)))
    if cells.is_empty():
        return None
    cells = _cell_colours(cells, selection_active)
    shades = cells.select("colour", "level").unique().sort("colour", "level")
    shades = shades.with_columns(pl.int_range(pl.len()).alias("shade"))
    shown = pl.col("short")
    if selection_active:
        shown = pl.when(pl.col("selected_busy") > 0).then(pl.col("selected_short")).otherwise(pl.col("short"))
    cells = cells.join(shades, on=["colour", "level"], how="left").with_columns(
        pl.col("lane").replace_strict(rows, return_dtype=pl.Int64).alias("row"),
        shown.fill_null("–").alias("text"))
    n_rows, n_buckets = len(y_values), view.buckets
    flat = (cells.get_column("row") * n_buckets + cells.get_column("bucket")).to_numpy()
    z = np.full(n_rows * n_buckets, np.nan, dtype=np.float32)
    z[flat] = cells.get_column("shade").to_numpy()
    texts = cells.get_column("text").to_numpy().astype(str)
    hover = np.full(n_rows * n_buckets, "", dtype=texts.dtype)
    hover[flat] = texts
    numbers = np.zeros((n_rows * n_buckets, 3), dtype=np.float32)
    numbers[flat] = cells.select(pl.col("busy") * 100, "events", pl.col("selected_busy") * 100).to_numpy()
    palette = [blend(colour, level) for colour, level in shades.select("colour", "level").iter_rows()]
    count = len(palette)
    # A discrete colour scale: shade i owns [i, i+1) / count of the z range [-0.5, count - 0.5].
    scale = [[position / count, colour] for i, colour in enumerate(palette) for position in (i, i + 1)]
    width = (view.end_ns - view.start_ns) / n_buckets
    selected = "<br>selected kernels: %{customdata[2]:.0f}%" if selection_active else ""
    return dict(
        type="heatmap", z=z.reshape(n_rows, n_buckets), text=hover.reshape(n_rows, n_buckets),
        customdata=numbers.reshape(n_rows, n_buckets, 3),
        x0=axis(view.start_ns + width / 2), dx=width / axis.divisor, y=np.asarray(y_values, dtype=np.float64),
        zmin=-0.5, zmax=count - 0.5, colorscale=scale, showscale=False, hoverongaps=False, ygap=3, name="buckets",
        hovertemplate=("<b>%{text}</b><br>%{customdata[0]:.0f}% busy · %{customdata[1]:.0f} starting" + selected
                       + f"<br>t ≈ %{{x:.6~g}} {axis.unit}<extra></extra>"),
    )


def numbers(frame: pl.DataFrame, *columns: str) -> np.ndarray:
    """Columns as one float matrix (NaN for unknown): sent base64-encoded, not as JSON lists."""
    return np.column_stack([frame.get_column(c).to_numpy().astype(np.float64) for c in columns])


def bar_trace(group: pl.DataFrame, y: str, colour: str, **properties: Any) -> Trace:
    # Plain dicts take plotly.js's nested names (marker.color), not plotly.py's `marker_color` shorthand.
    return dict(type="bar", base=group.get_column("x0").to_numpy(), x=group.get_column("length").to_numpy(),
                y=group.get_column(y).to_numpy().astype(np.float64), orientation="h",
                marker={"color": colour, "line": {"width": 0}}, showlegend=False, textposition="none", **properties)


def groups(frame: pl.DataFrame, *keys: str) -> list[tuple[tuple[Any, ...], pl.DataFrame]]:
    """(key values, rows) per distinct key, in order of first appearance: one query for all groups."""
    if frame.is_empty():
        return []
    return list(frame.partition_by(*keys, as_dict=True, maintain_order=True).items())


def with_geometry(events: pl.DataFrame, view: TimelineView, axis: TimeAxis) -> pl.DataFrame:
    min_width = (view.end_ns - view.start_ns) * MIN_BAR_FRACTION
    duration = pl.col("end_ns") - pl.col("start_ns")
    return events.with_columns(
        axis.expr("start_ns").alias("x0"),
        (pl.max_horizontal(duration, pl.lit(min_width)) / axis.divisor).alias("length"),
        ((pl.col("start_ns") - view.run_start_ns) / 1e9).alias("start_s"),
        (duration / 1e9).alias("duration_s"))


def exact_bars(events: pl.DataFrame, rows: dict[int, float], view: TimelineView, axis: TimeAxis,
               selection_active: bool, by_name: bool = True) -> list[Trace]:
    """One bar per event of the exact lanes in `rows` (lane -> y).

    With `by_name`, a trace per kernel or copy name, so its full name is sent
    once, in the hover template; otherwise (the kernels under a stack panel) a
    trace per colour with short names per bar. Ranges and passes: a trace per
    colour. Kernel bars carry their kernel key as `text`, for click-to-select.
    """
    events = events.filter(pl.col("lane").is_in(list(rows)))
    if events.is_empty():
        return []
    duration_s = ((pl.col("end_ns") - pl.col("start_ns")).clip(1) / 1e9)
    events = with_geometry(events, view, axis).with_columns(
        pl.col("lane").replace_strict(rows, return_dtype=pl.Float64).alias("y"),
        (pl.col("flops") / duration_s).alias("flop_rate"),
        (pl.col("bytes") / duration_s).alias("byte_rate"))
    events = events.join(colour_table(events.select("name", "kind")), on=["name", "kind"], how="left")
    if selection_active:
        greyed = (pl.col("kind") == "kernel") & ~pl.col("selected")
        events = events.with_columns(pl.when(greyed).then(pl.lit(GREY)).otherwise(pl.col("colour")).alias("colour"))
    traces: list[Trace] = []
    timing = "start %{customdata[0]:.5~s}s · duration %{customdata[1]:.3~s}s"
    kernels = events.filter(pl.col("kind") == "kernel").with_columns(
        pl.col("flop_rate").is_not_null().alias("rated"), pl.col("byte_rate").is_not_null().alias("byte_rated"))
    for (colour, rated, byte_rated, *named), group in groups(kernels, "colour", "rated", "byte_rated",
                                                           *(["name", "short"] if by_name else [])):
        rate = ("<br>%{customdata[2]:.3~s}FLOP/s" if rated else "") + \
            ("<br>%{customdata[3]:.3~s}B/s (estimated bytes moved)" if byte_rated else "")
        if named:
            name, short = named
            label = f"<b>{html.escape(short)}</b><br><span style='font-size:11px'>{wrapped_name(name)}</span>"
            extra: dict[str, Any] = {"name": short}
        else:
            label = "<b>%{hovertext}</b>"
            extra = {"name": "kernels", "hovertext": group.get_column("short").to_numpy().astype(str)}
        traces.append(bar_trace(group, "y", colour, width=0.8, opacity=0.7 if colour == GREY else 1.0,
                           customdata=numbers(group, "start_s", "duration_s", "flop_rate", "byte_rate"),
                           text=group.get_column("key").to_numpy().astype(str),
                           hovertemplate=f"{label}<br>{timing}{rate}<extra></extra>", **extra))
    for (name, colour), group in groups(events.filter(pl.col("kind") == "memcpy"), "name", "colour"):
        traces.append(bar_trace(group, "y", colour, width=0.8, name=name,
                           customdata=numbers(group, "start_s", "duration_s", "bytes", "byte_rate"),
                           hovertemplate=f"<b>{html.escape(name)}</b><br>{timing}<br>%{{customdata[2]:.3~s}}B at "
                                         "%{customdata[3]:.3~s}B/s<extra></extra>"))
    traces += _pass_bars(events.filter(pl.col("kind") == "pass"), timing)
    others = events.filter(~pl.col("kind").is_in(["kernel", "memcpy", "pass"])).with_columns(
        pl.concat_str(escape_html(pl.col("short")), pl.lit(" <i>("), pl.col("category").fill_null(""),
                      pl.lit(")</i>")).alias("text"))
    for (colour,), group in groups(others, "colour"):
        traces.append(bar_trace(group, "y", colour, width=0.8, name="ranges",
                           customdata=numbers(group, "start_s", "duration_s"),
                           text=group.get_column("text").to_numpy().astype(str),
                           hovertemplate=f"%{{text}}<br>{timing}<extra></extra>"))
    return traces


def _pass_bars(bands: pl.DataFrame, timing: str) -> list[Trace]:
    """One trace per pass; each pass on its own stripe of the lane (forward on top), hover names the step."""
    traces: list[Trace] = []
    for (name, colour), group in groups(bands, "name", "colour"):
        order = PASS_ORDER.index(name) if name in PASS_ORDER else len(PASS_ORDER) - 1
        offset = -0.4 + PASS_STRIPE * (order + 0.5)
        group = group.with_columns((pl.col("y") + offset).alias("y"))
        text = pl.concat_str(pl.lit(f"<b>{html.escape(name)}</b> pass · "), pl.col("category").fill_null(""))
        traces.append(bar_trace(group, "y", colour, width=PASS_STRIPE * 0.9, name=name, legendgroup=f"pass {name}",
                                customdata=numbers(group, "start_s", "duration_s"),
                                text=group.select(text).to_series().to_numpy().astype(str),
                                hovertemplate=f"%{{text}}<br>{timing}<extra></extra>"))
    return traces


def _key_entry(name: str, colour: str, group: str, title: str) -> Trace:
    """A legend-only entry (no mark): a square of `colour` named `name` in the lane legend."""
    return dict(type="scatter", x=[None], y=[None], mode="markers", name=name, legend=LANE_LEGEND,
                marker={"color": colour, "symbol": "square", "size": 11}, showlegend=True, hoverinfo="skip",
                legendgroup=group, legendgrouptitle={"text": title})


def _visible_ns(start: pl.Expr, end: pl.Expr, view: TimelineView) -> pl.Expr:
    return (pl.min_horizontal(end, pl.lit(view.end_ns)) - pl.max_horizontal(start, pl.lit(view.start_ns))).clip(0)


def lane_legend(view: TimelineView) -> list[Trace]:
    """The key to the passes lane (its pass colours) and the ranges lanes (the names holding most time in view).

    Ranges are coloured by name, so the key lists the LEGEND_RANGE_NAMES
    range names with the most time in the window (exact bars and
    aggregated buckets, whose colour is their dominant name's); every other
    name is in its bar's or bucket's hover. Profiler steps are left out:
    they would fill the key, and each is one bar whose name its hover gives.
    """
    events, cells = view.events, view.cells
    passes = set(events.filter(pl.col("kind") == "pass").get_column("name").to_list())
    passes |= set(cells.filter(pl.col("kind") == "pass").get_column("name").to_list())
    entries = [_key_entry(name, event_colour(name, "pass"), "passes", "passes (per step)")
               for name in PASS_ORDER if name in passes]
    timed = pl.concat([
        events.filter(pl.col("kind") == "range").select(
            "name", "short", _visible_ns(pl.col("start_ns"), pl.col("end_ns"), view).alias("time")),
        cells.filter(pl.col("kind") == "range").select(
            "name", "short", (pl.col("busy") * (pl.col("end_ns") - pl.col("start_ns"))).alias("time")),
    ], how="vertical_relaxed")
    timed = timed.filter(~pl.col("name").str.starts_with("ProfilerStep#"))
    if timed.height:
        top = (timed.group_by("name").agg(pl.col("short").first(), pl.col("time").sum())
               .sort(["time", "name"], descending=[True, False]).head(LEGEND_RANGE_NAMES))
        entries += [_key_entry(_middle_cut(short), event_colour(name, "range"),
                               "ranges", "ranges (colour = name): most time in view")
                    for name, short in top.select("name", pl.col("short").fill_null(pl.col("name"))).iter_rows()]
    return entries


def _middle_cut(text: str, limit: int = 34) -> str:
    """Long names keep their start and their end (`autograd::engine…ConvolutionBackward0`), what tells them apart."""
    if len(text) <= limit:
        return text
    tail = limit // 2
    return text[: limit - tail - 1] + "…" + text[-tail:]


def lane_legend_layout(plot_px: int) -> dict[str, Any]:
    """Above the lanes, right-aligned (the title is on the left): a key, so clicks on it change nothing."""
    return {"orientation": "h", "x": 1.0, "xanchor": "right", "y": 1 + 34 / max(plot_px, 1), "yanchor": "bottom",
            "itemclick": False, "itemdoubleclick": False, "font": {"size": 12}}
