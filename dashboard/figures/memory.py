"""Figures of per-operation device memory: curves per buffer type, fragmentation, growth bars.

x is always the op index (the order ops ran in), so a click anywhere gives
`points[0].x` = op index, and every trace carries `customdata[0]` = op index
too. Cross-filter arguments: `highlight_ops` (marked on every curve),
`selected_op` (a vertical line), `op_range` (a shaded band).

A page that updates the curves in place (plotly Patches) reads
`layout.meta["tracks"]`: per buffer type its row, unit divisor and the indices
of its traces; `track_points` and `mark_shapes` give the new trace data and
shapes in the figure's own terms.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.analysis import memory as analysis
from dashboard.analysis.units import bytes_unit_for, format_bytes
from dashboard.figures.text_width import label_margin
from dashboard.figures.theme import TEMPLATE, colour_for, empty_figure

_RANGE_FILL = "rgba(0, 114, 178, 0.10)"
_CONST_EVAL_FILL = "rgba(108, 117, 125, 0.12)"
_HIGHLIGHT = "#D55E00"
_MAX_REGIONS = 150
_HOVER = ("op %{customdata[0]} · %{customdata[1]}<br>%{customdata[2]}<br>%{customdata[3]}"
          "<br>%{fullData.name}: %{y:.4g} %{meta}<extra></extra>")
# Free and largest free share the allocated curve's points: the op's names are on that one's hover,
# and leaving them out here halves what the curves weigh in the browser.
_HOVER_VALUE = "op %{x} · %{fullData.name}: %{y:.4g} %{meta}<extra></extra>"


def _custom(frame: pl.DataFrame) -> np.ndarray:
    """Per point: op index, MLIR op, loc, program (numpy: plotly validates lists item by item)."""
    return frame.select(
        "op_index", pl.col("mlir_op").fill_null("?"), pl.col("loc").fill_null(""),
        pl.col("program").fill_null("") if "program" in frame.columns else pl.lit(""),
    ).to_numpy()


def _label(mlir_op: str | None, op_index: int | None) -> str:
    return f"{mlir_op or '?'} #{op_index}" if op_index is not None else "(first op)"


def track_points(curve: pl.DataFrame, column: str, divisor: float, max_points: int,
                 by: str = "allocated") -> dict[str, np.ndarray]:
    """x, y (in the track's unit) and customdata of one curve, capped at ~max_points.

    Rows are picked by the extremes of `by` per op-index bucket, so the curves of
    one track share their x positions (hover lines them up) and peaks survive.
    """
    return _points(analysis.downsample(curve, by, max_points), column, divisor)


def track_curves(curve: pl.DataFrame, divisor: float, max_points: int) -> dict[str, dict[str, np.ndarray]]:
    """Allocated, free and largest-free points of one track (one downsampling; names on allocated only)."""
    shown = analysis.downsample(curve, "allocated", max_points)
    x = shown["op_index"].to_numpy()
    curves = {column: {"x": x, "y": (shown[column] / divisor).to_numpy()} for column in ("free", "largest_free")}
    return {"allocated": _points(shown, "allocated", divisor), **curves}


def _points(shown: pl.DataFrame, column: str, divisor: float, custom: np.ndarray | None = None) -> dict:
    return {"x": shown["op_index"].to_numpy(), "y": (shown[column] / divisor).to_numpy(),
            "customdata": _custom(shown) if custom is None else custom}


def const_eval_spans(op_memory: pl.DataFrame, rank: int = 0) -> list[tuple[int, int]]:
    """Const-eval ranges to shade, merged when there are too many to draw as shapes."""
    return _regions(op_memory, rank)


def _regions(op_memory: pl.DataFrame, rank: int) -> list[tuple[int, int]]:
    """Const-eval ranges, merged when there are too many to draw as shapes."""
    regions = analysis.const_eval_regions(op_memory.filter(pl.col("rank") == rank))
    spans = [(int(a), int(b)) for a, b in regions.select("start_op_index", "end_op_index").iter_rows()]
    if len(spans) <= _MAX_REGIONS:
        return spans
    gap = (spans[-1][1] - spans[0][0]) // _MAX_REGIONS
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start - merged[-1][1] <= gap:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _axis(row: int) -> str:
    return "" if row == 1 else str(row)


def _band(row: int) -> dict:
    return {"type": "rect", "xref": f"x{_axis(row)}", "yref": f"y{_axis(row)} domain", "y0": 0, "y1": 1,
            "line": {"width": 0}, "layer": "below"}


def mark_shapes(rows: int, op_range: tuple[int, int] | None, selected_op: int | None) -> list[dict]:
    """The op-range band and the selected-op line on each of `rows` tracks (plain shape dicts)."""
    shapes: list[dict] = []
    for row in range(1, rows + 1):
        if op_range is not None:
            shapes.append({**_band(row), "x0": op_range[0] - 0.5, "x1": op_range[1] + 0.5, "fillcolor": _RANGE_FILL})
        if selected_op is not None:
            shapes.append({"type": "line", "xref": f"x{_axis(row)}", "yref": f"y{_axis(row)} domain",
                           "x0": selected_op, "x1": selected_op, "y0": 0, "y1": 1,
                           "line": {"color": _HIGHLIGHT, "width": 1.5, "dash": "dot"}})
    return shapes


def _cross_filter_marks(figure: go.Figure, rows: int, regions: Sequence[tuple[int, int]],
                        op_range: tuple[int, int] | None, selected_op: int | None) -> None:
    """Const-eval shading, the op-range band and the selected-op line on every track.

    Shapes are built as plain dicts and set once: `add_vrect(row="all")` revalidates
    the whole layout per call and takes seconds for a few hundred regions.
    """
    shapes = list(figure.layout.shapes)
    for row in range(1, rows + 1):
        shapes += [{**_band(row), "x0": a - 0.5, "x1": b + 0.5, "fillcolor": _CONST_EVAL_FILL} for a, b in regions]
    figure.update_layout(shapes=shapes + mark_shapes(rows, op_range, selected_op))


def _capacity_line(figure: go.Figure, row: int, value: float, text: str) -> None:
    axis = _axis(row)
    figure.add_shape(type="line", xref=f"x{axis} domain", yref=f"y{axis}", x0=0, x1=1, y0=value, y1=value,
                     line={"color": "#6c757d", "width": 1, "dash": "dash"})
    figure.add_annotation(xref=f"x{axis} domain", yref=f"y{axis}", x=0, y=value, text=text, showarrow=False,
                          xanchor="left", yanchor="bottom", font={"size": 11, "color": "#6c757d"})


def memory_curves_figure(
    op_memory: pl.DataFrame,
    *,
    per_bank: bool = True,
    buffer_types: Sequence[str] | None = None,
    rank: int = 0,
    highlight_ops: Iterable[int] = (),
    selected_op: int | None = None,
    op_range: tuple[int, int] | None = None,
    show_fragmentation: bool = True,
    max_points: int = 4000,
    title: str = "Device memory before each op",
    peak_rows: pl.DataFrame | None = None,
    regions: Sequence[tuple[int, int]] | None = None,
    highlight_slots: bool = False,
) -> go.Figure:
    """One track per buffer type (allocated, free, largest free block, capacity, peak) plus fragmentation.

    `peak_rows` (an `analysis.peaks` result, e.g. the profiler's view) and `regions`
    (`const_eval_spans`) may be given when the caller has them already;
    `highlight_slots` keeps a (possibly empty) highlight trace on every track so a
    page can fill it in place. `layout.meta["tracks"]` indexes the traces.
    """
    mine = op_memory.filter(pl.col("rank") == rank) if op_memory.height else op_memory
    if buffer_types is not None:
        mine = mine.filter(pl.col("buffer_type").is_in(list(buffer_types)))
    curves = analysis.memory_curves(mine, per_bank=per_bank)
    # A buffer type without capacity (TRACE with no trace region) has nothing to draw.
    present = set(curves.filter(pl.col("capacity") > 0)["buffer_type"].unique())
    drawn = [bt for bt in analysis.BUFFER_ORDER if bt in present] + sorted(present - set(analysis.BUFFER_ORDER))
    if not drawn:
        return empty_figure("No per-op memory to show for this run")
    rows = len(drawn) + (1 if show_fragmentation else 0)
    unit_text = "/bank" if per_bank else " (device)"
    subtitles = [f"{bt}{' per bank' if per_bank else ' (device total)'}" for bt in drawn]
    if show_fragmentation:
        subtitles.append("Fragmentation: 1 − largest free block / free")
    figure = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                           subplot_titles=subtitles)
    peak_rows = analysis.peaks(mine) if peak_rows is None else peak_rows
    highlight = sorted(set(highlight_ops))
    tracks: list[dict] = []
    for row, bt in enumerate(drawn, start=1):
        curve = curves.filter(pl.col("buffer_type") == bt)
        capacity = int(curve["capacity"].max() or 0)
        divisor, unit = bytes_unit_for(capacity)
        colour = colour_for(bt)
        common = {"customdata": None, "meta": unit + unit_text, "hovertemplate": _HOVER, "legendgroup": bt,
                  "mode": "lines"}
        track = {"buffer_type": bt, "row": row, "divisor": divisor, "unit": unit + unit_text}
        lines = (("allocated", f"{bt} allocated", {"color": colour, "width": 1.5}, {"fill": "tozeroy"}),
                 ("free", f"{bt} free", {"color": colour, "width": 1}, {"opacity": 0.6}),
                 ("largest_free", f"{bt} largest free block", {"color": colour, "width": 1, "dash": "dot"}, {}))
        points = track_curves(curve, divisor, max_points)
        for column, name, line, extra in lines:
            track[column] = len(figure.data)
            hover = {} if column == "allocated" else {"hovertemplate": _HOVER_VALUE}
            figure.add_trace(go.Scatter(**{**common, **points[column], **hover}, name=name, line=line, **extra),
                             row=row, col=1)
        _capacity_line(figure, row, capacity / divisor, f"capacity {format_bytes(capacity, 4)}")
        if highlight or highlight_slots:
            marked = curve.filter(pl.col("op_index").is_in(highlight))
            track["highlight"] = len(figure.data)
            figure.add_trace(go.Scatter(
                x=marked["op_index"].to_numpy(), y=(marked["allocated"] / divisor).to_numpy(), mode="markers",
                name="highlighted ops", marker={"color": _HIGHLIGHT, "size": 7, "symbol": "circle-open"},
                customdata=_custom(marked), meta=unit + unit_text, hovertemplate=_HOVER,
                showlegend=row == 1 and bool(highlight), legendgroup="highlight",
            ), row=row, col=1)
        middle = (int(curve["op_index"].min()) + int(curve["op_index"].max())) // 2
        track["peak"] = len(figure.data)
        _add_peak(figure, peak_rows.filter((pl.col("buffer_type") == bt) & (pl.col("rank") == rank)), row,
                  divisor, unit + unit_text, per_bank, middle)
        if track["peak"] == len(figure.data):
            track["peak"] = None
        figure.update_yaxes(title_text=f"{unit}{unit_text}", rangemode="tozero", row=row, col=1)
        tracks.append(track)
    fragmentation: dict[str, int] = {}
    if show_fragmentation:
        first = len(figure.data)
        _add_fragmentation(figure, curves.filter(pl.col("buffer_type").is_in(drawn)), rows, max_points)
        fragmentation = {trace.name.removesuffix(" fragmentation"): i
                         for i, trace in enumerate(figure.data) if i >= first}
    spans = _regions(mine, rank) if regions is None else regions
    _cross_filter_marks(figure, rows, spans, op_range, selected_op)
    figure.update_xaxes(title_text="op index (snapshot taken before the op runs)", row=rows, col=1)
    figure.update_layout(template=TEMPLATE, title=title, height=200 + 190 * rows, hovermode="closest",
                         clickmode="event+select",
                         meta={"tracks": tracks, "fragmentation": fragmentation, "rows": rows,
                               "per_bank": per_bank})
    return figure


def _add_peak(figure: go.Figure, peak: pl.DataFrame, row: int, divisor: float, unit: str, per_bank: bool,
              middle: int) -> None:
    if peak.is_empty() or not peak["allocated_per_bank"][0]:
        return
    p = peak.row(0, named=True)
    value = p["allocated_per_bank"] if per_bank else p["allocated"]
    culprit = _label(p["culprit_mlir_op"], p["culprit_op_index"])
    where = f" ({p['culprit_loc']})" if p["culprit_loc"] else ""
    text = (f"peak {format_bytes(value, 4)} ({p['utilisation']:.0%}) before "
            f"{_label(p['next_mlir_op'], p['peak_op_index'])}<br>allocated by {culprit}{where}")
    on_right = p["peak_op_index"] > middle
    figure.add_trace(go.Scatter(
        x=[p["peak_op_index"]], y=[value / divisor], mode="markers", name=f"{p['buffer_type']} peak",
        marker={"symbol": "star", "size": 13, "color": _HIGHLIGHT, "line": {"color": "white", "width": 1}},
        customdata=[[p["peak_op_index"], p["next_mlir_op"] or "?", p["next_loc"] or "", culprit]],
        meta=unit, hovertemplate=_HOVER, showlegend=False,
    ), row=row, col=1)
    figure.add_annotation(x=p["peak_op_index"], y=value / divisor, text=text, showarrow=True, arrowhead=2,
                          ax=-30 if on_right else 30, ay=-25, xanchor="right" if on_right else "left",
                          font={"size": 11}, align="left", bgcolor="rgba(255,255,255,0.85)", row=row, col=1)


def _add_fragmentation(figure: go.Figure, curves: pl.DataFrame, row: int, max_points: int) -> None:
    for bt in curves["buffer_type"].unique(maintain_order=True):
        curve = analysis.downsample(curves.filter(pl.col("buffer_type") == bt), "fragmentation", max_points)
        figure.add_trace(go.Scatter(
            x=curve["op_index"].to_numpy(), y=(curve["fragmentation"] * 100).to_numpy(), name=f"{bt} fragmentation",
            mode="lines", line={"color": colour_for(bt), "width": 1.2}, customdata=_custom(curve), meta="%",
            hovertemplate=_HOVER, legendgroup=bt,
        ), row=row, col=1)
    figure.update_yaxes(title_text="%", range=[0, 100], row=row, col=1)


def top_growth_figure(growth: pl.DataFrame, *, per_bank: bool = True, selected_op: int | None = None,
                      title: str = "Ops that left the most memory behind") -> go.Figure:
    """Horizontal bars of `analysis.top_growth` output, one panel per buffer type (scales differ).

    Panels are as tall as their bars. The layout is written as one dict rather than
    through make_subplots: this figure is redrawn on every brush and click, and
    make_subplots alone takes ~30 ms.
    """
    if growth.is_empty():
        return empty_figure("No op grew device memory")
    kinds = list(growth["buffer_type"].unique(maintain_order=True))
    column = "delta_per_bank" if per_bank else "delta"
    suffix = "/bank" if per_bank else ""
    panels = [growth.filter(pl.col("buffer_type") == bt).sort(column) for bt in kinds]
    gap, weights = 70, [40 + 22 * bars.height for bars in panels]
    plot_height = sum(weights) + gap * (len(kinds) - 1)
    traces: list[dict] = []
    annotations: list[dict] = []
    layout: dict = {"template": TEMPLATE, "title": {"text": title}, "showlegend": False,
                    "height": 130 + plot_height, "margin": {"t": 90}}
    top = plot_height
    all_labels: list[str] = []
    for row, (bt, bars) in enumerate(zip(kinds, panels, strict=True), start=1):
        divisor, unit = bytes_unit_for(float(bars[column].max() or 0))
        labels = [f"#{i} {op or '?'}" + (f" ({loc})" if loc else "") for i, op, loc in
                  bars.select("op_index", "mlir_op", "loc").iter_rows()]
        all_labels += labels
        outline = [2 if i == selected_op else 0 for i in bars["op_index"]]
        axis = _axis(row)
        traces.append({
            "type": "bar", "x": (bars[column] / divisor).to_list(), "y": labels, "orientation": "h", "name": bt,
            "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "marker": {"color": colour_for(bt), "line": {"color": _HIGHLIGHT, "width": outline}},
            "customdata": _custom(bars), "meta": unit + suffix,
            "hovertemplate": "op %{customdata[0]} · %{customdata[1]}<br>%{customdata[2]}<br>"
                             "left behind %{x:.4g} %{meta}<extra></extra>",
        })
        bottom = top - weights[row - 1]
        domain = [max(bottom / plot_height, 0.0), min(top / plot_height, 1.0)]
        layout[f"xaxis{axis}"] = {"anchor": f"y{axis}", "domain": [0.0, 1.0]}
        layout[f"yaxis{axis}"] = {"anchor": f"x{axis}", "domain": domain, "automargin": True}
        annotations.append({"text": f"{bt}: {unit}{suffix} left behind", "x": 0.5, "y": domain[1],
                            "xref": "paper", "yref": "paper", "xanchor": "center", "yanchor": "bottom",
                            "showarrow": False, "font": {"size": 14}})
        top = bottom - gap
    layout["annotations"] = annotations
    layout["margin"]["l"] = label_margin(all_labels, least=60)
    return go.Figure({"data": traces, "layout": layout})
