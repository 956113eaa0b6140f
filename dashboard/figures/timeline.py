"""The `/timeline` figure: lanes, copy panels and Python-stack panels on one time axis.

The lanes panel holds bucket heatmaps and exact-event bars (timeline_marks);
below it come copy bandwidth and bytes in flight, then one panel per Python
stack thread with that rank's kernels under it. Time is shown relative to the
run start in a unit fitted to the window.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import polars as pl

from dashboard.analysis.timeline import MIN_WINDOW_NS, OVERLAY_GROUP, TimelineView
from dashboard.analysis.units import bytes_unit_for, format_ns, window_span_text
from dashboard.figures.theme import TEMPLATE, empty_figure
from dashboard.figures.timeline_colours import STACK_COLOUR, colour_table, copy_colour
from dashboard.figures.timeline_legend import key_annotation, key_px, lane_key
from dashboard.figures.timeline_marks import (
    TEXT_SIZE,
    TimeAxis,
    Trace,
    bar_colours,
    bar_trace,
    escape_html,
    exact_bars,
    groups,
    lane_heatmap,
    numbers,
    row_gaps,
    with_geometry,
)
from dashboard.figures.timeline_overlays import MATCH_ROW, flow_traces, focus_trace, match_trace

LANE_PX = 26
SERIES_PX = 120
STACK_PX = 160
GAP_PX = 34


def _step_line(starts: np.ndarray, values: np.ndarray, view: TimelineView, axis: TimeAxis) -> dict[str, Any]:
    """x / y of a step line over buckets: one more point closes the last bucket."""
    return {"x": axis(np.append(starts, view.end_ns).astype(np.float64)), "y": np.append(values, values[-1])}


def _copy_traces(view: TimelineView, axis: TimeAxis) -> tuple[list[Trace], list[Trace], str, str, str]:
    """Bandwidth and bytes-in-flight step lines per copy kind, their axis units, and a note on
    copies without a byte count.

    Where copies without a byte count ran, the lines break (their rate is not
    known, it is not 0 B/s) and a dotted "bytes unknown" mark runs along the
    panel's floor instead, named in the legend.
    """
    copies = view.copies
    rate_divisor, rate_unit = bytes_unit_for(float(copies.get_column("bandwidth").max() or 0))  # type: ignore[arg-type]
    size_divisor, size_unit = bytes_unit_for(float(copies.get_column("in_flight").max() or 0))  # type: ignore[arg-type]
    bandwidth, in_flight, unknown_kinds = [], [], []
    for (series,), group in groups(copies, "series"):
        starts = group.get_column("start_ns").to_numpy()
        colour = copy_colour(series)
        unknown = group.get_column("unknown_ns").to_numpy() > 0
        unknown_copies = int(group.get_column("unknown_copies").max() or 0)  # type: ignore[arg-type]
        all_unknown = bool(unknown_copies) and not group.get_column("in_flight").to_numpy().any()
        common = {"mode": "lines", "line": {"shape": "hv", "color": colour, "width": 1.5}, "name": series,
                  "legendgroup": series}
        if not all_unknown:
            rate = np.where(unknown, np.nan, group.get_column("bandwidth").to_numpy() / rate_divisor)
            size = np.where(unknown, np.nan, group.get_column("in_flight").to_numpy() / size_divisor)
            bandwidth.append(dict(type="scatter", **_step_line(starts, rate, view, axis), showlegend=True, **common,
                                  hovertemplate=f"{series}: %{{y:.3~g}} {rate_unit}/s<extra></extra>"))
            in_flight.append(dict(type="scatter", **_step_line(starts, size, view, axis), showlegend=False, **common,
                                  hovertemplate=f"{series}: %{{y:.3~g}} {size_unit} in flight<extra></extra>"))
        if unknown_copies:
            unknown_kinds.append(f"{series} ({unknown_copies:,})")
            mark = np.where(unknown, 0.0, np.nan)
            for panel_traces, legend in ((bandwidth, True), (in_flight, False)):
                panel_traces.append(dict(
                    type="scatter", **_step_line(starts, mark, view, axis), mode="lines", showlegend=legend,
                    name=f"{series}: bytes unknown", legendgroup=f"{series} unknown",
                    line={"shape": "hv", "color": colour, "width": 5, "dash": "dot"},
                    hovertemplate=f"{series}: bytes unknown (no byte count in the trace)<extra></extra>"))
    note = ""
    if unknown_kinds:
        note = ("bytes unknown (no byte count in the trace, e.g. AMD): " + ", ".join(unknown_kinds)
                + " copies · dotted, not 0 B/s")
    return bandwidth, in_flight, f"{rate_unit}/s", size_unit, note


def _stack_traces(view: TimelineView, stack: int, axis: TimeAxis) -> tuple[list[Trace], int]:
    """Depth silhouette (aggregated) or frames (exact) of one thread; and its deepest level."""
    depth = view.stack_depth.filter(pl.col("stack") == stack)
    frames = view.stack_frames.filter(pl.col("stack") == stack)
    traces: list[Trace] = []
    deepest = 0
    if depth.height:
        values = depth.get_column("depth").to_numpy()
        deepest = int(values.max())
        traces.append(dict(
            type="scatter", **_step_line(depth.get_column("start_ns").to_numpy(), values, view, axis), mode="lines",
            fill="tozeroy", showlegend=False, line={"shape": "hv", "color": STACK_COLOUR, "width": 1},
            fillcolor="rgba(73,80,87,0.25)", hovertemplate="deepest %{y} frames<extra></extra>", name="stack depth"))
    if frames.height:
        deepest = max(deepest, int(frames.get_column("depth").max()) + 1)  # type: ignore[arg-type]
        functions = frames.select(pl.col("function").alias("name"), pl.lit("range").alias("kind"))
        frames = with_geometry(frames.drop("short", strict=False), view, axis).join(
            colour_table(functions).select(pl.col("name").alias("function"), "colour"), on="function", how="left")
        frames = frames.with_columns(escape_html(pl.col("function")).alias("text"), (pl.col("depth") + 0.5).alias("y"))
        traces.append(bar_trace(frames, "y", bar_colours(frames), width=0.9, name="frames",
                                text=frames.get_column("text").to_numpy().astype(str),
                                customdata=numbers(frames, "depth", "duration_s"),
                                hovertemplate="%{text}<br>depth %{customdata[0]} · %{customdata[1]:.3~s}s"
                                              "<extra></extra>"))
    return traces, deepest


def _window_text(view: TimelineView) -> str:
    if view.is_full:
        return f"whole run ({format_ns(view.run_end_ns - view.run_start_ns)})"
    return (f"{window_span_text(view.start_ns, view.end_ns, view.run_start_ns)} of "
            f"{format_ns(view.run_end_ns - view.run_start_ns)}")


@lru_cache(maxsize=1)
def _template() -> dict[str, Any]:
    return pio.templates[TEMPLATE].to_plotly_json()


def _domains(heights: list[int]) -> list[list[float]]:
    """Vertical [bottom, top] fractions of stacked panels of these pixel heights, top panel first."""
    total = sum(heights) + GAP_PX * (len(heights) - 1)
    domains, top = [], float(total)
    for height in heights:
        domains.append([max(0.0, (top - height) / total), top / total])
        top -= height + GAP_PX
    return domains


def timeline_figure(view: TimelineView, title: str = "Timeline", colour: str = "kernel") -> go.Figure:
    """Lanes on top, then copy bandwidth and bytes in flight, then one panel per Python-stack thread.

    All panels share one x axis (time since run start), so a zoom or pan
    anywhere reports a single `xaxis.range`; the panels are y axes stacked
    by domain rather than plotly subplots.
    """
    return go.Figure(_figure_spec(view, title, colour), _validate=False)


def timeline_figure_dict(view: TimelineView, title: str = "Timeline", colour: str = "kernel") -> dict[str, Any]:
    """`timeline_figure` as the plain dict plotly.js reads, for callbacks that must answer fast.

    Building plotly's trace objects costs more than computing the whole view
    (per-property bookkeeping, even unvalidated), and Dash sends a dict just
    as well. Numeric arrays become plotly.js typed-array specs (base64, as
    go.Figure.to_dict makes them), text arrays plain lists.
    """
    spec = _figure_spec(view, title, colour)
    spec["data"] = [{key: _jsonable(value) for key, value in trace.items()} for trace in spec["data"]]
    return spec


# numpy dtype -> plotly.js typed array name
_TYPED = {"float64": "f8", "float32": "f4", "int32": "i4", "uint32": "u4", "int16": "i2", "uint16": "u2",
          "int8": "i1", "uint8": "u1"}


def _jsonable(value: Any) -> Any:
    """A numpy array as a typed-array spec (numbers) or a list (text), also inside nested properties
    (marker.size, marker.line.width); anything else as is."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype.kind in "US":
        return value.tolist()
    if value.dtype == np.int64:
        value = value.astype(np.float64)
    spec: dict[str, Any] = {"dtype": _TYPED[str(value.dtype)],
                            "bdata": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")}
    if value.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in value.shape)
    return spec


def _focus_range(view: TimelineView, axis: TimeAxis) -> list[float] | None:
    if view.focus.is_empty():
        return None
    event = view.focus.row(0, named=True)
    return [axis(float(event["start_ns"])), axis(float(event["end_ns"]))]


def _figure_spec(view: TimelineView, title: str, colour: str = "kernel") -> dict[str, Any]:
    """The figure as a dict whose arrays are still numpy arrays."""
    main = view.lanes.filter(pl.col("group") != OVERLAY_GROUP)
    has_copies = view.copies.height > 0
    stacks = view.stacks
    if main.is_empty() and not has_copies and stacks.is_empty():
        return empty_figure("This run has no kernels, copies, ranges or stacks to draw.").to_dict()
    axis = TimeAxis(view)
    selection_active = bool(view.selected_keys)
    heights = [max(3, main.height + (view.search is not None)) * LANE_PX] + (
        [SERIES_PX, SERIES_PX] if has_copies else [])
    heights += [STACK_PX] * stacks.height
    domains = _domains(heights)
    layout: dict[str, Any] = {}
    traces: list[Trace] = []

    def panel(number: int, panel_traces: list[Trace], **yaxis: Any) -> None:
        name = "y" if number == 1 else f"y{number}"
        for trace in panel_traces:
            trace.update(xaxis="x", yaxis=name)
        traces.extend(panel_traces)
        layout["yaxis" if number == 1 else f"yaxis{number}"] = {
            "domain": domains[number - 1], "anchor": "x", "fixedrange": True, **yaxis}

    rows = {lane: float(row) for row, lane in enumerate(main.get_column("lane").to_list())}
    key = lane_key(view, colour)
    if (key_note := key_annotation(key)) is not None:
        layout["annotations"] = [key_note]
    heatmap = lane_heatmap(view.cells, rows, list(rows.values()), view, axis, selection_active, colour)
    bars = exact_bars(view.events, rows, view, axis, selection_active, mode=colour)
    overlays = [trace for trace in (match_trace(view, axis), focus_trace(view, rows, axis)) if trace is not None]
    top = MATCH_ROW if view.search is not None else 0.0
    ticks = ([MATCH_ROW] if view.search is not None else []) + list(rows.values())
    labels = ([view.search] if view.search is not None else []) + main.get_column("label").to_list()
    buckets = [heatmap, row_gaps(list(rows.values()), view, axis)] if heatmap is not None else []
    panel(1, [*buckets, *bars, *overlays,
              *flow_traces(view.flows, rows, axis)],
          tickmode="array", tickvals=ticks, ticktext=labels,
          range=[max(3, len(rows)) - 0.5, top - 0.5], showgrid=False, zeroline=False, ticks="")
    number = 2
    if has_copies:
        bandwidth, in_flight, rate_unit, size_unit, note = _copy_traces(view, axis)
        panel(number, bandwidth, title={"text": f"copy bandwidth<br>({rate_unit})"}, rangemode="tozero")
        if note:
            layout.setdefault("annotations", []).append({
                "text": note, "xref": "paper", "yref": f"y{number} domain", "x": 0.0, "y": 1.0,
                "xanchor": "left", "yanchor": "bottom", "showarrow": False,
                "font": {"size": 11, "color": "#6c757d"}, "name": "bytes-unknown"})
        panel(number + 1, in_flight, title={"text": f"bytes in flight<br>({size_unit})"}, rangemode="tozero")
        number += 2
    overlay = view.lanes.filter(pl.col("group") == OVERLAY_GROUP)
    for stack, rank, label in stacks.select("stack", "rank", "label").iter_rows():
        stack_traces, deepest = _stack_traces(view, stack, axis)
        under = {lane: -1.0 for lane in overlay.filter(pl.col("rank") == rank).get_column("lane").to_list()}
        kernels = lane_heatmap(view.cells, {lane: 0 for lane in under}, [-1.0], view, axis, selection_active,
                               colour)
        step = max(1, (deepest + 4) // 5)
        ticks = list(range(0, deepest + 1, step))
        panel(number, [*stack_traces, *([kernels, row_gaps([-1.0], view, axis)] if kernels is not None else []),
                       *exact_bars(view.events, under, view, axis, selection_active, by_name=False, mode=colour)],
              title={"text": f"Python stack<br>{label}"}, range=[-1.6, deepest + 1], tickmode="array",
              tickvals=[-1, *ticks], ticktext=["kernels", *map(str, ticks)], zeroline=False)
        number += 1
    x_range = [axis(view.start_ns), axis(view.end_ns)]
    spikes = {"showspikes": True, "spikemode": "across", "spikethickness": 1, "spikecolor": "#adb5bd",
              "spikesnap": "cursor"}
    layout["xaxis"] = {"range": x_range, "anchor": f"y{number - 1}" if number > 2 else "y", "domain": [0, 1],
                       "title": {"text": f"time since run start ({axis.unit})"}, **spikes}
    # The same axis repeated above the lanes, so time is readable without scrolling down; plotly only
    # draws an axis some trace uses, hence the empty trace.
    layout["xaxis2"] = {"matches": "x", "overlaying": "x", "side": "top", "anchor": "y", "showgrid": False,
                        "range": x_range, "ticks": "outside"}
    traces.append({"type": "scatter", "x": [], "y": [], "xaxis": "x2", "yaxis": "y", "showlegend": False,
                   "hoverinfo": "skip", "name": "time"})
    plot_px = sum(heights) + GAP_PX * (len(heights) - 1)
    # Built unvalidated (the tests validate it): plotly's per-element validation of ~20 k marks
    # costs several times the whole view's computation.
    return {"data": traces, "layout": {
        # A plain dict keeps a template *name* as is, which plotly.js cannot resolve: send the template.
        **layout, "template": _template(), "height": plot_px + 200,
        "barmode": "overlay", "bargap": 0,
        # A constant uirevision keeps what the user set and the figure does not change (legend clicks)
        # across re-queries; the x range changes with every window, so it is applied.
        # A box selection becomes the window; a new window clears the (now meaningless) selection box.
        "uirevision": "timeline", "selectionrevision": f"{view.start_ns}-{view.end_ns}",
        "dragmode": "zoom", "hovermode": "closest",
        "title": {"text": f"{title} · {_window_text(view)}"},
        # The key's widest entry (or group title) sets the right margin, the copy legend under the axis the
        # bottom one: reserved here, plotly draws the figure once instead of growing the margins and redrawing.
        "margin": {"l": 150, "r": key_px(key), "t": 100, "b": 112},
        # Names inside bars only where they fit at a legible size (never shrunk to a smudge).
        "uniformtext": {"mode": "hide", "minsize": TEXT_SIZE - 2},
        # Legend (copy kinds) under the time axis title: the top edge holds the repeated time axis.
        "legend": {"orientation": "h", "y": -70 / plot_px, "yanchor": "top", "x": 0.0, "xanchor": "left"},
        # What the browser's keys need (assets/timeline-keys.js): the run's extent and the selected
        # event's on this axis, the narrowest window, and the window drawn.
        "meta": {"origin_ns": view.run_start_ns, "divisor": axis.divisor, "unit": axis.unit,
                 "window": [view.start_ns, view.end_ns],
                 "run_range": [axis(view.run_start_ns), axis(view.run_end_ns)],
                 "min_span": MIN_WINDOW_NS / axis.divisor,
                 "focus": _focus_range(view, axis)},
    }}

