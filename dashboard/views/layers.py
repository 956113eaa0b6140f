"""`/layers`: per-layer runtime and throughput boxes, and the kernels of the selected layer and pass.

URL state: run, rank, window (from the timeline brush), layer + pass (the
selected box, whose kernels are listed), dtype (which peak to compare with:
`auto`, the dtype the kernels compute in, by default) and peak (the user's own
peak in TFLOP/s, over the datasheet's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis.gpu_peak_flops import AUTO, DTYPE_SHORT, DTYPES, Peak, choose_peak
from dashboard.analysis.layers import PASSES
from dashboard.analysis.units import format_ns
from dashboard.figures.kernels import TOTAL_ONE_RANK, top_kernels_figure, total_rank_sum
from dashboard.figures.layers import PASS_LABELS, highlight_shapes, layer_box_figure, layer_order
from dashboard.figures.plain import plain_figures
from dashboard.store import Run
from dashboard.views import params, run_views
from dashboard.views.cache import per_run
from dashboard.views.kernel_table import busy_text, kernel_column_defs, kernel_rows
from dashboard.views.state import ViewState, param
from dashboard.views.text import counted

DEFAULT_DTYPE = AUTO
PEAK_CHOICES = (AUTO, *DTYPES)


def _tflops(value: str | None) -> float | None:
    try:
        number = float(value) if value else None
    except ValueError:
        return None
    return number if number is not None and 0 < number < 1e6 else None


# The user's own peak, TFLOP/s (over the datasheet's): any positive number below an exaFLOP/s.
PEAK_PARAM = params.Param("peak", _tflops, lambda value: "" if value is None else f"{value:g}")
DETAIL_TOP = 15  # bars of the selected layer's kernel chart
# The selected layer's chart and grid exist only while a layer is selected; pattern-matching ids let
# the page's callbacks update them when they exist and skip them (an empty list) when they do not.
DETAIL_BAR = {"type": "layers-kernels-bar", "part": "detail"}
DETAIL_TABLE = {"type": "layers-kernels-table", "part": "detail"}
# Export name of each chart -> the page's component id.
CHARTS: dict[str, Any] = {"layer-runtime": "layers-runtime", "layer-throughput": "layers-throughput",
                          "layer-kernels": DETAIL_BAR}
NO_LAYERS = ("No layer occurrences: this run has no module ranges and no kernel attributed to a layer "
             "(capture with torch module hooks, or profile with with_modules=True). ")
NO_FLOPS = "FLOPs unknown for every layer: no throughput."
DETAIL_HINT = "Click a box to list the kernels of that layer and pass."
NO_BOXES = "No layer occurrence in this selection: no boxes to draw."


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())
    window: tuple[int, int] | None = param(params.window())
    layer: str | None = param(params.text("layer"))
    # `pass` is a keyword: the field is pass_, the URL key "pass"; it only counts with a layer.
    pass_: str = param(params.choice("pass", PASSES, "forward"), "forward")
    dtype: str = param(params.choice("dtype", PEAK_CHOICES, DEFAULT_DTYPE), DEFAULT_DTYPE)
    peak: float | None = param(PEAK_PARAM)

    def resolved(self, run: Run) -> Self:
        rank = params.resolve_rank(self.rank, run_views.kernel_ranks(run))
        return self.replace(rank=rank, pass_=self.pass_ if self.layer else "forward")

    @property
    def selected(self) -> tuple[str, str] | None:
        """The selected box: (layer, pass), or None."""
        return (self.layer, self.pass_) if self.layer else None

    def select(self, selected: Sequence[Any] | None) -> Self:
        """This state with another box selected ((layer, pass) from a click or the page's store; None: none)."""
        layer, pass_ = selected if selected and len(selected) == 2 else (None, None)
        chosen = type(self).from_query({"layer": layer if isinstance(layer, str) else None, "pass": pass_})
        return self.replace(layer=chosen.layer, pass_=chosen.pass_ if chosen.layer else "forward")


@dataclass(frozen=True)
class Detail:
    """The kernels of the selected layer and pass: a title, a chart and the grid (no chart: no selection)."""

    title: str
    figure: go.Figure | None
    rows: list[dict[str, Any]]
    columns: list[dict[str, Any]]


def has_charts(run: Run) -> bool:
    """Whether the run has layers to draw: ranges alone are not enough (a tinygrad profile's or an NVTX-only
    trace's ranges are no modules), so the page and the exports skip a run without layer occurrences."""
    return run_views.run_layer_samples(run).occurrences.height > 0


def view(run: Run, state: State) -> run_views.LayerView:
    return run_views.layer_view(run, state.rank, state.window)  # cached per (run, rank, window)


@per_run(8)
def kernel_time(run: Run) -> pl.DataFrame:
    """name, time_ns of the run's kernels (their names tell the dtype the peak is for)."""
    if not run.has("kernels"):
        return pl.DataFrame(schema={"name": pl.String, "time_ns": pl.Int64})
    return run.scan("kernels").group_by("name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("time_ns")).collect()


def peak(run: Run, state: State) -> Peak:
    """The peak the throughput chart compares with (analysis.gpu_peak_flops.choose_peak), and why."""
    return choose_peak(run.info.metadata, kernel_time(run), state.dtype, state.peak)


def peak_note(chosen: Peak) -> str:
    """`Peak: V100 SXM2 FP32 15.7 TFLOP/s (datasheet, dense) for Tesla V100-DGXS-32GB, 80 SMs, sm_70; FP32: …`."""
    device = f" for {chosen.device.text}" if chosen.device else ""
    dtype = f"; {DTYPE_SHORT[chosen.dtype]}: {chosen.dtype_reason}" if chosen.entry != "set by you" else ""
    return f"Peak: {chosen.label}{device}{dtype}."


def coverage_text(run: Run, state: State) -> str:
    """How much of the kernel time the layers hold: the share of kernel time (in this rank and window) of
    kernels attributed to a layer, and how many layers there are. A page showing one layer that holds 8 % of
    the time must say so, or its boxes read as the whole story."""
    layers = view(run, state).stats
    if layers.height == 0:
        return ""
    kernels = run_views.filtered_kernels(run, state.rank, state.window)
    total = int(kernels.get_column("time_ns").sum() or 0) if kernels.height else 0
    count = counted(layers.get_column("layer").n_unique(), "layer")
    if total == 0 or "layer" not in kernels.columns:
        return f"{count}. "
    inside = int(kernels.filter(pl.col("layer").is_not_null()).get_column("time_ns").sum() or 0)
    if inside == 0:
        return f"{count}; no kernel is attributed to a layer, so their share of kernel time is unknown. "
    return (f"{count} holding {inside / total:.1%} of kernel time ({format_ns(inside)} of {format_ns(total)}: "
            f"kernels attributed to a layer; the rest ran outside every layer). ")


@per_run(16)
def note_texts(run: Run, state: State) -> dict[str, str]:
    """The texts above the charts: where the occurrences come from and how much kernel time the layers hold,
    the peak compared with, GPU busy ("": none). Cached: the coverage sums every kernel of the rank and window
    (~20 ms at 1 M kernels) on each page load otherwise."""
    layers = view(run, state)
    stats = layers.stats
    flops_known = stats.height > 0 and "rate_n" in stats.columns and int(stats.get_column("rate_n").sum()) > 0
    busy = busy_text(run_views.gpu_busy_view(run, state.rank, state.window))
    return {
        "source": (f"{counted(layers.occurrences, 'layer occurrence')} from {layers.source}. "
                   + coverage_text(run, state)) if layers.source else NO_LAYERS,
        "peak": peak_note(peak(run, state)) if flops_known else NO_FLOPS,
        "busy": f" {busy}." if busy else "",
    }


def box_figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The runtime and throughput boxes, as figures (the export's; the page sends `page_box_figures`)."""
    layers = view(run, state)
    chosen = peak(run, state)
    return {
        "layer-runtime": layer_box_figure(layers.stats, "time", layers.time_outliers, state.selected),
        "layer-throughput": layer_box_figure(layers.stats, "rate", layers.rate_outliers, state.selected, chosen.value,
                                             chosen.short if chosen.value else ""),
    }


@per_run(16)
def page_box_figures(run: Run, state: State) -> dict[str, dict[str, Any]]:
    """`box_figures` as the page sends them, plain JSON values built once per run and state (never mutate):
    a load then serialises plain values instead of validating and copying two figures again."""
    return plain_figures(box_figures(run, state))


def highlight(run: Run, state: State) -> list[dict[str, Any]]:
    """The band behind the selected layer (a selection change only moves it: the boxes stay)."""
    return highlight_shapes(layer_order(view(run, state).stats), state.selected)


def detail(run: Run, state: State) -> Detail:
    """The kernels of the selected layer and pass; only a hint while none is selected."""
    if state.selected is None:
        return Detail(DETAIL_HINT, None, [], [])
    layer, pass_ = state.selected
    summary, how = run_views.layer_kernel_view(run, state.rank, state.window, layer, pass_)
    rows, units = kernel_rows(summary)
    named = f"{layer} ({PASS_LABELS.get(pass_, pass_)})"
    ranks = len(run_views.kernel_ranks(run)) if state.rank is None else 1
    total = total_rank_sum(ranks) if ranks > 1 else TOTAL_ONE_RANK  # the chart and the table say the same
    bar = top_kernels_figure(summary, DETAIL_TOP, title=f"Top kernels of {named}", total=total)
    return Detail(f"Kernels of {named}: {summary.height} kernels, {how}", bar, rows,
                  kernel_column_defs("name", units, total=total))


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """Every chart the page draws: the two box charts, and the selected layer's kernels when one is selected."""
    drawn = box_figures(run, state)
    chosen = detail(run, state).figure
    if chosen is not None:
        drawn["layer-kernels"] = chosen
    return drawn


def _meta(figure: go.Figure | dict[str, Any]) -> Any:
    return figure.get("layout", {}).get("meta") if isinstance(figure, dict) else figure.layout.meta


def no_layers(figure: go.Figure | dict[str, Any]) -> bool:
    """Whether a box chart has no layer occurrence to draw (the page shows one line instead of the card)."""
    meta = _meta(figure)
    return isinstance(meta, dict) and bool(meta.get("no_layers"))


def no_flops(figure: go.Figure | dict[str, Any]) -> bool:
    """Whether a throughput chart says it has nothing to draw (the page shows a message instead)."""
    meta = _meta(figure)
    return isinstance(meta, dict) and bool(meta.get("no_flops"))

