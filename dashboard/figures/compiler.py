"""Compiler page charts: the pass list of one compile, and the memory plan of its final TTGIR.

Pass chart: x is the step (one dump or stage file, in order); the bars are the
IR's line count (left axis), the line the op count (right axis). A changed step
(its IR differs from the previous snapshot) is a full bar, an unchanged one a
faint bar; a failed pass is red; SoftwarePipeliner snapshots are hatched; the
legend says so. The biggest jump in lines is named after the pass that made it.
Stages are shaded bands. The selected step is outlined, the compared one framed.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.units import bytes_unit_for
from dashboard.figures.log_axis import log_axis
from dashboard.figures.theme import MEMORY_COLOURS, TEMPLATE, empty_figure

STAGE_COLOURS = {"source": "#f8f9fa", "ttir": "#e7f1ff", "ttgir": "#e6f4ea", "llvm-mlir": "#fff4e5",
                 "llir": "#fdecef", "mir": "#f3e8fd", "ptx": "#eef2f7", "amdgcn": "#eef2f7", "sass": "#f1f3f5",
                 "cubin": "#f8f9fa", "hsaco": "#f8f9fa"}
CHANGED = "#0072B2"
UNCHANGED = "#c5d9ea"
FAILED = "#dc3545"
OPS_LINE = "#E69F00"
PLOT_HEIGHT_PX = 200  # the pass chart's plot area, for fitting its log axis's labels


def mark_steps(figure: dict[str, Any], selected: int | None, compared: int | None) -> dict[str, Any]:
    """A copy of a pass chart (as a dict) with the selected step outlined and the compared one framed.

    Only the bar trace's outline arrays are new: a step change does not rebuild the chart."""
    bars = figure["data"][0]
    steps = bars["x"]
    marker = dict(bars["marker"])
    marker["line"] = {"width": [3 if s == selected else (2 if s == compared else 0) for s in steps],
                      "color": ["#212529" if s == selected else "#6c757d" for s in steps]}
    return {**figure, "data": [{**bars, "marker": marker}, *figure["data"][1:]]}


def _hover_texts(frame: pl.DataFrame) -> list[str]:
    texts = []
    for row in frame.iter_rows(named=True):
        what = {"before": "IR before", "after": "IR after", "failed": "IR after the FAILED pass",
                "internal": "SoftwarePipeliner snapshot in", "file": "stage file"}.get(row["kind"], row["kind"])
        growth = row.get("growth")
        change = ("unchanged from the previous snapshot" if not row["changed"] else
                  f"changed by {row.get('made_by') or 'the previous pass'}"
                  + (f": {growth:+,} lines" if growth is not None else ""))
        texts.append(f"step {row['step']} · {row['stage']}<br>{what} {row['what']}<br>{row['lines']:,} lines, "
                     f"{row['ops']:,} ops<br>{change}")
    return texts


def _growth_annotation(frame: pl.DataFrame, log: bool) -> dict[str, Any] | None:
    """The biggest jump in lines, said of the pass that made it (a "before X" bar is the previous pass's work),
    pointing at the bar's top from its left."""
    grown = frame.filter(pl.col("changed") & (pl.col("growth") > 0)) if "growth" in frame.columns else frame.head(0)
    if grown.is_empty():
        return None
    top = grown.sort("growth", descending=True, maintain_order=True).row(0, named=True)
    return {"x": top["step"], "y": math.log10(top["lines"]) if log else top["lines"], "showarrow": True,
            "arrowhead": 2, "arrowsize": 0.8, "ax": -36, "ay": 18, "xanchor": "right", "bgcolor": "#ffffffcc",
            "text": f"+{top['growth']:,} lines: {top['made_by'] or top['what']}",
            "font": {"size": 11, "color": "#212529"}, "name": "growth"}


# What the bar kinds mean, drawn as legend entries (no data): a pale bar and a "×" hatch otherwise say nothing.
_BAR_KINDS = (("IR lines, changed by the pass before", CHANGED, ""), ("IR lines, unchanged", UNCHANGED, ""),
              ("failed pass", FAILED, ""), ("SoftwarePipeliner snapshot", UNCHANGED, "x"))


def pass_chart(steps: pl.DataFrame, selected: int | None, compared: int | None, title: str) -> go.Figure:
    """One bar per step (IR lines), ops as a line, stage bands, failed passes red, the biggest growth named
    after the pass that made it. `steps` may carry `made_by` / `growth` (views.compiler.with_made_by)."""
    if steps.is_empty():
        return empty_figure("This compile has no IR snapshots")
    frame = steps.with_columns(
        pl.coalesce(pl.col("pass_name"), pl.col("stage") + " file").alias("what"),
        pl.col("lines").fill_null(0), pl.col("ops").fill_null(0),
    )
    colours = [FAILED if kind == "failed" else (CHANGED if changed else UNCHANGED)
               for kind, changed in zip(frame["kind"], frame["changed"], strict=True)]
    patterns = ["x" if kind == "internal" else "" for kind in frame["kind"]]
    outline = [3 if step == selected else (2 if step == compared else 0) for step in frame["step"]]
    outline_colour = ["#212529" if step == selected else "#6c757d" for step in frame["step"]]
    figure = go.Figure(layout={"template": TEMPLATE})
    figure.add_bar(
        x=frame["step"].to_list(), y=frame["lines"].to_list(), name="IR lines (left axis)", showlegend=False,
        marker={"color": colours, "pattern": {"shape": patterns}, "line": {"width": outline, "color": outline_colour}},
        hovertext=_hover_texts(frame), hovertemplate="%{hovertext}<extra></extra>",
    )
    figure.add_scatter(x=frame["step"].to_list(), y=frame["ops"].to_list(), name="ops (right axis)", yaxis="y2",
                       mode="lines", line={"color": OPS_LINE, "width": 2}, hoverinfo="skip")
    present = {"IR lines, changed by the pass before": bool(frame["changed"].any()),
               "IR lines, unchanged": bool((~frame["changed"]).any()),
               "failed pass": "failed" in frame["kind"].to_list(),
               "SoftwarePipeliner snapshot": "internal" in frame["kind"].to_list()}
    for name, colour, pattern in _BAR_KINDS:
        if present[name]:
            figure.add_bar(x=[None], y=[None], name=name,
                           marker={"color": colour, "pattern": {"shape": pattern}}, hoverinfo="skip")
    for stage, first, last in _stage_runs(frame):
        figure.add_vrect(x0=first - 0.5, x1=last + 0.5, fillcolor=STAGE_COLOURS.get(stage, "#f8f9fa"), opacity=1,
                         layer="below", line_width=0, annotation_text=stage, annotation_position="top left",
                         annotation_font={"size": 11, "color": "#495057"})
    positive = frame.filter(pl.col("lines") > 0)["lines"]
    spread = positive.len() > 0 and positive.max() > 20 * positive.min()
    failed = frame.filter(pl.col("kind") == "failed")
    for step in failed["step"]:
        figure.add_vline(x=step, line={"color": FAILED, "width": 1, "dash": "dot"})
    # Log scale when the LLVM dialect dwarfs TTIR/TTGIR (10k lines against 200), so every stage reads;
    # its ticks are the app's 1-2-5 ones (log_axis), not plotly's bare "2, 5" digits.
    yaxis: dict[str, Any] = {"title": {"text": "IR lines" + (" (log scale)" if spread else "")}, "automargin": True}
    if spread:
        yaxis.update(log_axis(float(positive.min()), float(positive.max()), length_px=PLOT_HEIGHT_PX,
                              horizontal=False, si=True))
    else:
        yaxis["rangemode"] = "tozero"
    annotation = _growth_annotation(frame, spread)
    figure.update_layout(
        # l and r hold the two y axes' ticks and titles (IR lines, ops): reserved, plotly draws once.
        title={"text": title}, height=340, bargap=0.15, barmode="overlay",
        margin={"t": 96, "b": 44, "l": 68, "r": 72},
        clickmode="event",
        xaxis={"title": {"text": "step (dump order)"}, "range": [-0.6, frame.height - 0.4]},
        yaxis=yaxis,
        yaxis2={"title": {"text": "ops", "standoff": 8}, "overlaying": "y", "side": "right", "showgrid": False,
                "rangemode": "tozero", "automargin": True, "tickformat": "~s", "tickmode": "auto", "nticks": 5},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom", "font": {"size": 11},
                "itemclick": False, "itemdoubleclick": False},
        annotations=[*figure.layout.annotations, *([annotation] if annotation else [])],
    )
    return figure


def _stage_runs(frame: pl.DataFrame) -> list[tuple[str, int, int]]:
    runs: list[tuple[str, int, int]] = []
    for stage, step in zip(frame["stage"], frame["step"], strict=True):
        if runs and runs[-1][0] == stage:
            runs[-1] = (stage, runs[-1][1], step)
        else:
            runs.append((stage, step, step))
    return runs


def memory_plan_figure(plan: pl.DataFrame, totals: dict[str, int | None], title: str) -> go.Figure:
    """Each allocated buffer as a bar from its offset over its size; one row per op (IR line)."""
    if plan.is_empty():
        return empty_figure("No allocation in this TTGIR: the plan appears after AllocateSharedMemory")
    figure = go.Figure(layout={"template": TEMPLATE})
    smem = plan.filter(pl.col("memory") == "SMEM")
    divisor, unit = bytes_unit_for(max(smem["offset"].max() or 0, (smem["offset"] + smem["size"].fill_null(0)).max()
                                       or 0) if not smem.is_empty() else 1)
    for memory in ("SMEM", "TMEM"):
        part = plan.filter(pl.col("memory") == memory)
        if part.is_empty():
            continue
        scale = divisor if memory == "SMEM" else 1
        labels = [f"L{line} {value} {op}".strip() for line, value, op in
                  zip(part["ir_line"], part["value"], part["op"], strict=True)]
        figure.add_bar(
            y=labels, x=[(size or 0) / scale for size in part["size"]],
            base=[offset / scale for offset in part["offset"]], orientation="h",
            name=f"{memory} ({unit if memory == 'SMEM' else 'columns'})",
            marker={"color": MEMORY_COLOURS[memory]}, xaxis="x" if memory == "SMEM" else "x2",
            customdata=list(zip(part["offset"], part["size"], part["shape"], strict=True)),
            hovertemplate="%{y}<br>offset %{customdata[0]}, size %{customdata[1]} "
                          + ("bytes" if memory == "SMEM" else "columns") + "<br>shape %{customdata[2]}<extra></extra>",
        )
    total_text = ", ".join(f"{name} = {value}" for name, value in
                           (("ttg.shared (bytes)", totals.get("shared")),
                            ("ttg.tensor_memory_size (columns)", totals.get("tmem"))) if value is not None)
    figure.update_layout(
        title=f"{title}<br><sup>{total_text}</sup>" if total_text else title, barmode="overlay",
        # Room above the plot for the title, its subtitle and the TMEM axis's ticks and title on top.
        # b: the legend under the axis title (y = -0.25), reserved so plotly draws once.
        height=max(260, 140 + 28 * plan.height), margin={"t": 120, "l": 260, "b": 84},
        xaxis={"title": f"SMEM offset ({unit})", "rangemode": "tozero"},
        xaxis2={"title": "TMEM column", "overlaying": "x", "side": "top", "rangemode": "tozero", "showgrid": False},
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": -0.25},
    )
    return figure
