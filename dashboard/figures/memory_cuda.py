"""Figures of CUDA allocator memory: allocated / reserved over time per device, slack, and (snapshots)
fragmentation.

x is milliseconds since the run's first memory event; every point carries
`customdata` = its exact time in ns since that event (run-clock ns exceed the
2^53 a browser number holds exactly), which a click reads.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.analysis.cuda_memory import Peak
from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.theme import TEMPLATE, colour_for, empty_figure

_MS = 1e6
_AT_COLOUR = "#D55E00"


def curves_figure(curves: dict[str, pl.DataFrame], origin_ns: int, peak: Peak | None, at_ns: int | None,
                  relative: bool, window: tuple[int, int] | None,
                  fragmentation: dict[str, pl.DataFrame] | None = None,
                  held_before: dict[str, int] | None = None) -> go.Figure:
    """Allocated (solid) and reserved (dotted) per device on top, over a grey base per device of what it held
    before the profiler started (`held_before`, bytes); slack (reserved − allocated) below it where reserved
    is known; and where segments are known, fragmentation (`cuda_fragmentation.over_time` frames per device)
    at the bottom. The legend stands above the plot, clear of the curves."""
    if not any(frame.height for frame in curves.values()):
        return empty_figure("No memory events in this window")
    highest = max(float(frame.select(pl.max_horizontal("allocated", "reserved")).max().item() or 0)
                  for frame in curves.values() if frame.height)
    divisor, unit = bytes_unit_for(highest)
    fragmentation = {d: f for d, f in (fragmentation or {}).items() if f.height}
    # The slack row only where some device's reserved bytes are known (a 2021 trace has none): an empty
    # row below the curves took the shared x axis's labels with it.
    slack = any(frame.height and frame["reserved"].null_count() < frame.height for frame in curves.values())
    heights = [0.52, 0.24, 0.24] if slack and fragmentation else [0.72, 0.28] if slack or fragmentation else [1.0]
    rows = len(heights)
    slack_row, fragmentation_row = 2, (3 if slack else 2)
    figure = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=heights)
    for device, held in (held_before or {}).items():
        frame = curves.get(device)
        if frame is None or frame.height == 0 or held <= 0:
            continue
        ends = (frame["time_ns"].to_numpy()[[0, -1]] - origin_ns) / _MS
        figure.add_trace(go.Scatter(
            x=ends, y=[held / divisor] * 2, mode="lines", fill="tozeroy", line={"width": 0},
            fillcolor="rgba(134, 142, 150, 0.22)", name=f"{device} held before the profiler started",
            legendgroup=device, hovertemplate=f"{device}: {format_bytes(held)} held before the profiler started "
                                              "(allocations the trace did not record)<extra></extra>"), row=1, col=1)
    for device, frame in curves.items():
        if frame.height == 0:
            continue
        x = (frame["time_ns"].to_numpy() - origin_ns) / _MS
        custom = frame["time_ns"].to_numpy() - origin_ns
        colour = colour_for(device)
        allocated = frame["allocated"].to_numpy() / divisor
        # Scatter, not Scattergl: the app's plotly.js bundle (tools/plotly-bundle) has no WebGL traces.
        figure.add_trace(go.Scatter(
            x=x, y=allocated, customdata=custom, mode="lines", line={"shape": "hv", "color": colour, "width": 2},
            name=f"{device} allocated", legendgroup=device,
            hovertemplate=f"{device} allocated %{{y:.4g}} {unit}<br>%{{x:.3f}} ms<extra></extra>"), row=1, col=1)
        if frame["reserved"].null_count() < frame.height:
            reserved = frame["reserved"].to_numpy().astype(float) / divisor
            figure.add_trace(go.Scatter(
                x=x, y=reserved, customdata=custom, mode="lines", name=f"{device} reserved", legendgroup=device,
                line={"shape": "hv", "color": colour, "width": 1, "dash": "dot"},
                hovertemplate=f"{device} reserved %{{y:.4g}} {unit}<br>%{{x:.3f}} ms<extra></extra>"), row=1, col=1)
            figure.add_trace(go.Scatter(
                x=x, y=reserved - allocated, customdata=custom, mode="lines", name=f"{device} slack",
                legendgroup=device, showlegend=False, line={"shape": "hv", "color": colour, "width": 1},
                hovertemplate=f"{device} slack %{{y:.4g}} {unit}<br>%{{x:.3f}} ms<extra></extra>"),
                row=slack_row, col=1)
    for device, frame in fragmentation.items():
        figure.add_trace(go.Scatter(
            x=(frame["time_ns"].to_numpy() - origin_ns) / _MS, y=frame["fragmentation"].to_numpy() * 100,
            customdata=frame["time_ns"].to_numpy() - origin_ns,
            hovertext=[f"largest free block {format_bytes(largest)} of {format_bytes(free)} free in the segments"
                       for largest, free in frame.select("largest_free", "free").iter_rows()],
            mode="lines", name=f"{device} fragmentation", legendgroup=device, showlegend=False,
            line={"shape": "hv", "color": colour_for(device), "width": 1},
            hovertemplate=f"{device} fragmentation %{{y:.1f}} %<br>%{{hovertext}}<br>%{{x:.3f}} ms<extra></extra>"),
            row=fragmentation_row, col=1)
    if peak is not None:
        figure.add_trace(go.Scatter(
            x=[(peak.time_ns - origin_ns) / _MS], y=[peak.allocated / divisor],
            customdata=np.array([peak.time_ns - origin_ns]),
            mode="markers", marker={"symbol": "star", "size": 14, "color": _AT_COLOUR}, name="peak",
            hovertemplate=f"peak {format_bytes(peak.allocated)}<br>%{{x:.3f}} ms<extra></extra>"), row=1, col=1)
    if at_ns is not None:
        figure.add_vline(x=(at_ns - origin_ns) / _MS, line={"color": _AT_COLOUR, "width": 1, "dash": "dash"})
    # Short axis titles: what the curves count from (0 at the trace start for a trace without allocator
    # totals) is said in the page's note, not in a sentence the axis would clip.
    figure.update_layout(template=TEMPLATE, height=640 if rows == 3 else 460 if rows == 2 else 400,
                         margin={"l": 70, "r": 20, "t": 62, "b": 48},  # t: the legend above the plot
                         legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom",
                                 "font": {"size": 11}},
                         hovermode="closest", dragmode="zoom", uirevision="memory-cuda")
    figure.update_yaxes(title_text=f"{'allocated (from 0)' if relative else 'memory'} ({unit})", row=1, col=1,
                        rangemode="tozero")
    if slack:
        figure.update_yaxes(title_text=f"slack ({unit})", row=slack_row, col=1, rangemode="tozero")
    if fragmentation:
        figure.update_yaxes(title_text="fragmentation (%)", row=fragmentation_row, col=1, range=[0, 100])
    figure.update_xaxes(title_text="time since the first memory event (ms)", row=rows, col=1)
    if window is not None:
        figure.update_xaxes(range=[(window[0] - origin_ns) / _MS, (window[1] - origin_ns) / _MS])
    return figure
