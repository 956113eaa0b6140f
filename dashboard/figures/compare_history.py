"""The history trend: a row per metric, runs oldest to newest on x; every point carries its run id."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.analysis.compare_history import BUSY, KERNEL, MEMORY, STEP
from dashboard.analysis.units import bytes_unit_for, format_bytes, format_ns, time_unit_for
from dashboard.figures.text_width import bottom_margin, text_px
from dashboard.figures.theme import TEMPLATE, distinct_colours, empty_figure

ROWS = ((STEP, "step time"), (BUSY, "GPU busy share (%)"), (KERNEL, "kernel time"), (MEMORY, "memory peak"))


def _scale(metric: str, values: pl.Series) -> tuple[float, str]:
    largest = float(values.max() or 0)  # type: ignore[arg-type]
    if metric == BUSY:
        return 0.01, "%"
    if metric == MEMORY:
        return bytes_unit_for(largest)
    return time_unit_for(largest)


def _text(metric: str, value: float) -> str:
    if metric == BUSY:
        return f"{value:.1%}"
    return format_bytes(value) if metric == MEMORY else format_ns(value)


def history_figure(frame: pl.DataFrame, run_ids: list[str]) -> go.Figure:
    """Lines with markers per series; x = the runs in order (their ids as tick labels)."""
    rows = [(metric, title) for metric, title in ROWS if frame.filter(pl.col("metric") == metric).height]
    if not rows or len(run_ids) < 2:
        return empty_figure("A history needs at least two runs with kernels or device memory")
    figure = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    colours = distinct_colours(frame.get_column("series").unique(maintain_order=True).to_list())
    for row, (metric, title) in enumerate(rows, start=1):
        mine = frame.filter(pl.col("metric") == metric)
        divisor, unit = _scale(metric, mine.get_column("value"))
        for series in mine.get_column("series").unique(maintain_order=True).to_list():
            # Every run of the series on x, None where this run lacks the series: the line breaks there
            # rather than joining the runs on either side as if the value had held between them.
            found = dict(mine.filter(pl.col("series") == series).select("run_id", "value").rows())
            values = [found.get(run_id) for run_id in run_ids]
            hover = [f"<b>{run_id}</b><br>{series}: " + (_text(metric, value) if value is not None else
                                                         "not in this run") + "<br>click: compare with the run before"
                     for run_id, value in zip(run_ids, values, strict=True)]
            figure.add_trace(go.Scatter(
                x=run_ids, y=[None if value is None else value / divisor for value in values], mode="lines+markers",
                name=f"{title}: {series}" if series != metric else title, customdata=run_ids, connectgaps=False,
                marker={"size": 10, "color": colours[series]}, line={"color": colours[series]},
                hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
            ), row=row, col=1)
        label = title if metric == BUSY else f"{title} ({unit})"
        figure.update_yaxes(title_text=label, row=row, col=1, rangemode="tozero")
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=run_ids, automargin=True)
    figure.update_xaxes(title_text="run (oldest to newest)", row=len(rows), col=1)
    figure.update_layout(
        template=TEMPLATE, height=140 + 240 * len(rows), hovermode="closest", clickmode="event",
        title={"text": "History: one point per run<br><sup>step time = slowest rank's median ProfilerStep range "
                       "(else kernel span); busy share = busy / span; kernel time = the series' top kernels; "
                       "memory peak = highest allocated bytes per bank · click a point to compare its run with the "
                       "one before</sup>"},
        legend={"orientation": "v", "x": 1.02, "y": 1.0},
        # Right: the legend's widest entry; below: the run ids under the last axis and its title. Reserved so
        # plotly draws once instead of growing the margins and drawing again.
        margin={"t": 100, "l": 90, "b": bottom_margin(titled=True),
                "r": math.ceil(max((text_px(str(trace.name)) for trace in figure.data), default=0) + 70)})
    return figure


def run_from_click(event: dict | None) -> str | None:
    points = (event or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    return data if isinstance(data, str) else None
