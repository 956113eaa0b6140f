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
from typing import Any

import numpy as np
import polars as pl

from dashboard.analysis.timeline import TimelineView
from dashboard.analysis.units import time_unit_for
from dashboard.figures.timeline_colours import (
    COPY_COLOURS,
    GREY,
    LEVELS,
    PASS_ORDER,
    STACK_COLOUR,
    blend,
    colour_table,
    copy_colour,
    event_colour,
)

# Re-exported: the figure modules and tests know them as the marks'.
__all__ = ["COPY_COLOURS", "GREY", "LEVELS", "PASS_ORDER", "PASS_STRIPE", "STACK_COLOUR", "TimeAxis", "blend",
           "colour_table", "copy_colour", "event_colour", "exact_bars", "lane_heatmap", "row_gaps"]

MIN_BAR_FRACTION = 1 / 1500  # thinner events are widened to this share of the window so they stay visible
FULL_NAME_LINE = 90
FULL_NAME_LINES = 24  # hover carries the full demangled name (issue 15); only a pathological one is cut
PASS_STRIPE = 0.8 / len(PASS_ORDER)  # each pass has its stripe of the passes lane, so bands of one step may overlap
# Names are written inside bars wide enough for them at the chart's narrowest usual width (plotly
# hides any that still do not fit: layout.uniformtext); thinner bars send no text at all.
PLOT_PX = 1_000
CHAR_PX = 6.5
TEXT_SIZE = 10
# The first columns of every clickable bar's customdata name its event (analysis.timeline_details.EventRef):
# kind code, rank, track, sub (device or depth), start - run start in ns (exact in a float64 for 104 days).
KIND_CODES = {"kernel": 0, "memcpy": 1, "range": 2, "step": 3, "api": 4, "pass": 5}
REF_COLUMNS = ("kind_code", "rank", "track", "sub", "offset_ns")
MATCH_OUTLINE = "#212529"
Trace = dict[str, Any]


ROW_GAP_PX = 3  # white between aggregated rows, as plotly's heatmap `ygap` drew it


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


def _cell_colours(cells: pl.DataFrame, selection_active: bool, mode: str) -> pl.DataFrame:
    """Add `colour` (dominant name's, or the selected kernel's, or grey) and `level` (busy shade)."""
    own = colour_table(cells.select("name", "kind", "klass"), mode)
    cells = cells.join(own, on=["name", "kind", "klass"], how="left", nulls_equal=True)
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
                 axis: TimeAxis, selection_active: bool, mode: str = "kernel") -> Trace | None:
    """The aggregated buckets of the lanes in `rows` (lane -> row number) as one heatmap trace.

    Per cell the payload is one shade number, two or three numbers for the
    hover (busy %, events starting, selected %) and the name that coloured
    it; everything else lives once in the hover template.
    """
    cells = cells.filter(pl.col("lane").is_in(list(rows)))
    if cells.is_empty():
        return None
    cells = _cell_colours(cells, selection_active, mode)
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
        zmin=-0.5, zmax=count - 0.5, colorscale=scale, showscale=False, hoverongaps=False, name="buckets",
        # No ygap (row_gaps parts the rows): without gaps, on evenly spaced rows and buckets, plotly draws one
        # image pixel per cell that the browser scales up unsmoothed; with gaps it paints every cell on a
        # canvas the size of the plot and encodes that as a PNG (~30 ms of a page's first render).
        hovertemplate=("<b>%{text}</b><br>%{customdata[0]:.0f}% busy · %{customdata[1]:.0f} starting" + selected
                       + f"<br>t ≈ %{{x:.6~g}} {axis.unit}<extra></extra>"),
    )


def row_gaps(y_values: list[float], view: TimelineView, axis: TimeAxis) -> Trace:
    """White lines between the heatmap's rows (and at its edges), so that lanes read apart: one path.

    The heatmap's `ygap` would do it, but only in plotly's slow drawing (see lane_heatmap); the exact
    bars, 0.8 of a row tall, already stand apart.
    """
    x_ends = [axis(view.start_ns), axis(view.end_ns), None]
    edges = sorted({edge for y in y_values for edge in (y - 0.5, y + 0.5)})
    return dict(type="scatter", mode="lines", x=x_ends * len(edges),
                y=[value for edge in edges for value in (edge, edge, None)],
                line={"color": "white", "width": ROW_GAP_PX}, hoverinfo="skip", showlegend=False, name="row gaps")


def numbers(frame: pl.DataFrame, *columns: str) -> np.ndarray:
    """Columns as one float matrix (NaN for unknown): sent base64-encoded, not as JSON lists."""
    return np.column_stack([frame.get_column(c).to_numpy().astype(np.float64) for c in columns])


def clickable(frame: pl.DataFrame, *columns: str) -> list[list[float | None]]:
    """customdata of clickable bars: REF_COLUMNS, then `columns`, as plain lists (nulls for unknown).

    Not a typed array: Dash's click events copy a point's customdata from the figure as sent, where a
    typed array is still its base64 spec and yields nothing.
    """
    matrix = numbers(frame, *REF_COLUMNS, *columns)
    return [[None if value != value else value for value in row] for row in matrix.tolist()]


def bar_colours(group: pl.DataFrame) -> str | np.ndarray:
    """The `colour` column as one colour when the bars share it, else one per bar.

    Bars of many colours go in one trace: plotly.js sets every trace up and
    styles it on its own, so a trace per colour cost a page's first draw
    more than its bars did (the lanes' ranges, a stack panel's frames).
    """
    colours = group.get_column("colour")
    return str(colours[0]) if colours.n_unique() == 1 else colours.to_numpy().astype(str)


def bar_trace(group: pl.DataFrame, y: str, colour: str | np.ndarray, **properties: Any) -> Trace:
    # Plain dicts take plotly.js's nested names (marker.color), not plotly.py's `marker_color` shorthand.
    trace = dict(type="bar", base=group.get_column("x0").to_numpy(), x=group.get_column("length").to_numpy(),
                 y=group.get_column(y).to_numpy().astype(np.float64), orientation="h",
                 marker={"color": colour, "line": {"width": 0}}, showlegend=False, textposition="none")
    if "label" in group.columns and group.get_column("label").str.len_chars().max():
        # Names inside the bars wide enough to hold them, from their left end.
        trace.update(text=group.get_column("label").to_numpy().astype(str), textposition="inside",
                     insidetextanchor="start", textfont={"size": TEXT_SIZE}, constraintext="none")
    if "matched" in group.columns and group.get_column("matched").any():
        # Search matches: outlined, so they stand out whatever their colour.
        trace["marker"]["line"] = {"color": MATCH_OUTLINE,
                                   "width": np.where(group.get_column("matched").to_numpy(), 2.0, 0.0)}
    trace.update(properties)
    return trace


def groups(frame: pl.DataFrame, *keys: str) -> list[tuple[tuple[Any, ...], pl.DataFrame]]:
    """(key values, rows) per distinct key, in order of first appearance: one query for all groups."""
    if frame.is_empty():
        return []
    return list(frame.partition_by(*keys, as_dict=True, maintain_order=True).items())


def with_geometry(events: pl.DataFrame, view: TimelineView, axis: TimeAxis) -> pl.DataFrame:
    span = view.end_ns - view.start_ns
    min_width = span * MIN_BAR_FRACTION
    duration = pl.col("end_ns") - pl.col("start_ns")
    visible = pl.min_horizontal(pl.col("end_ns"), pl.lit(view.end_ns)) - pl.max_horizontal(
        pl.col("start_ns"), pl.lit(view.start_ns))
    frame = events.with_columns(
        axis.expr("start_ns").alias("x0"),
        (pl.max_horizontal(duration, pl.lit(min_width)) / axis.divisor).alias("length"),
        ((pl.col("start_ns") - view.run_start_ns) / 1e9).alias("start_s"),
        (duration / 1e9).alias("duration_s"))
    if "short" in events.columns:
        fits = visible / span * PLOT_PX >= pl.col("short").str.len_chars() * CHAR_PX + 6
        frame = frame.with_columns(pl.when(fits).then(pl.col("short")).otherwise(pl.lit("")).alias("label"))
    return frame


def _with_refs(events: pl.DataFrame, view: TimelineView) -> pl.DataFrame:
    """The event-naming columns of REF_COLUMNS (see analysis.timeline_details.EventRef)."""
    sub = (pl.when(pl.col("kind").is_in(["kernel", "memcpy"])).then(pl.col("device"))
           .when(pl.col("kind") == "api").then(pl.lit(0)).otherwise(pl.col("depth")))
    return events.with_columns(
        pl.col("kind").replace_strict(KIND_CODES, default=-1, return_dtype=pl.Int8).alias("kind_code"),
        pl.col("track").fill_null(-1), sub.fill_null(-1).alias("sub"),
        (pl.col("start_ns") - view.run_start_ns).alias("offset_ns"))


def exact_bars(events: pl.DataFrame, rows: dict[int, float], view: TimelineView, axis: TimeAxis,
               selection_active: bool, by_name: bool = True, mode: str = "kernel") -> list[Trace]:
    """One bar per event of the exact lanes in `rows` (lane -> y).

    With `by_name`, a trace per kernel or copy name, so its full name is sent
    once, in the hover template; otherwise (the kernels under a stack panel)
    short names per bar. Ranges, steps and API calls: a trace per kind, each
    bar in its own colour; passes: a trace per pass. Every bar but a pass band
    names its event in its first customdata columns (REF_COLUMNS), which a
    click reads.
    """
    events = events.filter(pl.col("lane").is_in(list(rows)))
    if events.is_empty():
        return []
    duration_s = ((pl.col("end_ns") - pl.col("start_ns")).clip(1) / 1e9)
    events = _with_refs(with_geometry(events, view, axis), view).with_columns(
        pl.col("lane").replace_strict(rows, return_dtype=pl.Float64).alias("y"),
        (pl.col("flops") / duration_s).alias("flop_rate"),
        (pl.col("bytes") / duration_s).alias("byte_rate"))
    events = events.join(colour_table(events.select("name", "kind", "klass"), mode), on=["name", "kind", "klass"],
                         how="left", nulls_equal=True)
    if selection_active:
        greyed = (pl.col("kind") == "kernel") & ~pl.col("selected")
        events = events.with_columns(pl.when(greyed).then(pl.lit(GREY)).otherwise(pl.col("colour")).alias("colour"))
    traces: list[Trace] = []
    timing = "start %{customdata[5]:.5~s}s · duration %{customdata[6]:.3~s}s"
    kernels = events.filter(pl.col("kind") == "kernel").with_columns(
        pl.col("flop_rate").is_not_null().alias("rated"), pl.col("byte_rate").is_not_null().alias("byte_rated"))
    # By name: a trace per name, whose full name its hover template carries once. Otherwise a trace per
    # hover form (rates known or not) and shade (greyed kernels are see-through), each bar its own colour.
    kernels = kernels.with_columns((pl.col("colour") == GREY).alias("greyed"))
    for (greyed, rated, byte_rated, *named), group in groups(kernels, "greyed", "rated", "byte_rated",
                                                           *(["name", "short"] if by_name else [])):
        rate = ("<br>%{customdata[7]:.3~s}FLOP/s" if rated else "") + \
            ("<br>%{customdata[8]:.3~s}B/s (estimated bytes moved)" if byte_rated else "")
        if named:
            name, short = named
            label = f"<b>{html.escape(short)}</b><br><span style='font-size:11px'>{wrapped_name(name)}</span>"
            extra: dict[str, Any] = {"name": short}
        else:
            label = "<b>%{hovertext}</b>"
            extra = {"name": "kernels", "hovertext": group.get_column("short").to_numpy().astype(str)}
        traces.append(bar_trace(group, "y", bar_colours(group), width=0.8, opacity=0.7 if greyed else 1.0,
                                customdata=clickable(group, "start_s", "duration_s", "flop_rate", "byte_rate"),
                                hovertemplate=f"{label}<br>{timing}{rate}<extra></extra>", **extra))
    for (name, colour), group in groups(events.filter(pl.col("kind") == "memcpy"), "name", "colour"):
        traces.append(bar_trace(group, "y", colour, width=0.8, name=name,
                                customdata=clickable(group, "start_s", "duration_s", "bytes", "byte_rate"),
                                hovertemplate=f"<b>{html.escape(name)}</b><br>{timing}<br>%{{customdata[7]:.3~s}}B "
                                              "at %{customdata[8]:.3~s}B/s<extra></extra>"))
    traces += _pass_bars(events.filter(pl.col("kind") == "pass"), timing)
    others = events.filter(~pl.col("kind").is_in(["kernel", "memcpy", "pass"])).with_columns(
        pl.concat_str(escape_html(pl.col("short")), pl.lit(" <i>("), pl.col("category").fill_null(pl.col("kind")),
                      pl.lit(")</i>")).alias("hover"))
    for (kind,), group in groups(others, "kind"):
        name = {"api": "API calls", "step": "steps"}.get(kind, "ranges")
        traces.append(bar_trace(group, "y", bar_colours(group), width=0.8, name=name,
                                customdata=clickable(group, "start_s", "duration_s"),
                                hovertext=group.get_column("hover").to_numpy().astype(str),
                                hovertemplate=f"%{{hovertext}}<br>{timing}<extra></extra>"))
    return traces


def _pass_bars(bands: pl.DataFrame, timing: str) -> list[Trace]:
    """One trace per pass; each pass on its own stripe of the lane (forward on top), hover names the step."""
    traces: list[Trace] = []
    for (name, colour), group in groups(bands, "name", "colour"):
        order = PASS_ORDER.index(name) if name in PASS_ORDER else len(PASS_ORDER) - 1
        offset = -0.4 + PASS_STRIPE * (order + 0.5)
        group = group.with_columns((pl.col("y") + offset).alias("y"), pl.lit("").alias("label"))
        text = pl.concat_str(pl.lit(f"<b>{html.escape(name)}</b> pass · "), pl.col("category").fill_null(""))
        traces.append(bar_trace(group, "y", colour, width=PASS_STRIPE * 0.9, name=name, legendgroup=f"pass {name}",
                                customdata=numbers(group, *REF_COLUMNS, "start_s", "duration_s"),
                                text=group.select(text).to_series().to_numpy().astype(str),
                                hovertemplate=f"%{{text}}<br>{timing}<extra></extra>"))
    return traces
