"""Per-pass kernel time of A and B side by side, and each side's GPU busy / idle split."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.units import format_ns, time_unit_for
from dashboard.figures.compare_memory import COLOUR_A, COLOUR_B
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import TEMPLATE, empty_figure

BUSY, IDLE = "#1971c2", "#dee2e6"


def pass_figure(passes: pl.DataFrame, a: str, b: str) -> go.Figure:
    """Grouped bars: summed kernel time per pass, A and B, B / A and TFLOP/s on hover."""
    if passes.height == 0:
        return empty_figure("Neither side has kernels")
    largest = max(int(passes.get_column(c).fill_null(0).max() or 0) for c in ("time_a_ns", "time_b_ns"))
    factor, unit = time_unit_for(largest)
    traces = []
    for suffix, label, colour in (("a", f"A ({a})", COLOUR_A), ("b", f"B ({b})", COLOUR_B)):
        hover = [f"<b>{p}</b> · {label}<br>kernel time {format_ns(t)}" + (f"<br>{r:.1f} TFLOP/s" if r else "")
                 + (f"<br>B / A ×{ratio:.2f}" if ratio is not None else "")
                 for p, t, r, ratio in passes.select("pass", f"time_{suffix}_ns", f"tflops_{suffix}", "ratio").rows()]
        traces.append(go.Bar(x=passes.get_column("pass").to_list(),
                             y=(passes.get_column(f"time_{suffix}_ns").fill_null(0) / factor).to_list(),
                             name=label, marker={"color": colour}, hovertext=hover,
                             hovertemplate="%{hovertext}<extra></extra>"))
    figure = go.Figure(traces)
    figure.update_layout(template=TEMPLATE, barmode="group", height=360,
                         title={"text": "Kernel time per pass, A and B<br><sup>summed kernel durations of the pass; "
                                        "hover: TFLOP/s over kernels with known FLOPs</sup>"},
                         yaxis={"title": {"text": f"kernel time ({unit})"}}, xaxis={"title": {"text": "pass"}},
                         legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
                         margin={"t": 90})
    return figure


def busy_figure(busy: pl.DataFrame, a: str, b: str) -> go.Figure:
    """One stacked bar per side: busy and idle time of its span, the busy share written on the bar."""
    if busy.get_column("span_ns").sum() == 0:
        return empty_figure("Neither side has GPU activity")
    factor, unit = time_unit_for(int(busy.get_column("span_ns").max() or 0))
    sides = [f"A ({a})", f"B ({b})"]
    shares = [f"{s:.1%} busy" if s is not None else "" for s in busy.get_column("busy_share").to_list()]
    figure = go.Figure([
        go.Bar(y=sides, x=(busy.get_column("busy_ns") / factor).to_list(), orientation="h", name="busy",
               marker={"color": BUSY}, text=shares, textposition="inside",
               hovertemplate="%{y}: busy %{x:.3g} " + unit + "<extra></extra>"),
        go.Bar(y=sides, x=(busy.get_column("idle_ns") / factor).to_list(), orientation="h", name="idle",
               marker={"color": IDLE}, hovertemplate="%{y}: idle %{x:.3g} " + unit + "<extra></extra>"),
    ])
    figure.update_layout(template=TEMPLATE, barmode="stack", height=260,
                         title={"text": "GPU busy and idle time over each side's span<br><sup>busy = union of kernel "
                                        "and copy intervals (overlaps once); idle = span − busy; all ranks summed"
                                        "</sup>"},
                         xaxis={"title": {"text": f"time ({unit})"}},
                         yaxis={"autorange": "reversed", "automargin": True},
                         margin={"t": 100, "l": label_margin(sides)},
                         legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right",
                                 "traceorder": "normal"})
    return figure
