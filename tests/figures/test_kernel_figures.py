"""Kernel and layer figures: what they draw, how selections show, units and colours."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis import kernels as ka
from dashboard.analysis import layers as la
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.figures.kernels import duration_scatter_figure, keys_from_event, top_kernels_figure
from dashboard.figures.layers import layer_box_figure, layer_from_event, rate_unit_for
from dashboard.figures.theme import colour_for
from dashboard.schema import conform

NAMES = [f"void ns::kernel_{i}<float>(float*)" for i in range(30)]


@pytest.fixture
def summary() -> pl.DataFrame:
    # kernel_i runs i+1 times for (i+1) ms each on rank 0, and once more on rank 1.
    rows = []
    for i, name in enumerate(NAMES):
        for j in range(i + 1):
            start = (i * 100 + j) * 10_000_000
            rows.append((0, name, start, start + (i + 1) * 1_000_000))
        rows.append((1, name, 0, 1_000_000))
    frame = conform("kernels", pl.DataFrame(rows, schema=["rank", "name", "start_ns", "end_ns"], orient="row"))
    return ka.prepare_kernels(frame)


def test_top_bars_limit_order_units_and_colours(summary: pl.DataFrame) -> None:
    table = ka.kernel_summary(ka.filter_kernels(summary, rank=0))
    figure = top_kernels_figure(table, top_n=10)
    bars = figure.data[0]
    assert len(bars.y) == 10
    assert bars.y[0] == "kernel_29"  # largest first, shortened: one kernel of its name needs no template arguments
    assert figure.layout.xaxis.title.text == "total time (ms)"
    assert bars.x[0] == pytest.approx(900.0)  # 30 launches x 30 ms
    assert bars.marker.color[0] == colour_for(NAMES[29])
    assert bars.customdata[0] == kernel_key(NAMES[29])
    assert "void ns::kernel_29<float>(float*)" in bars.hovertext[0]  # full name on hover
    assert bars.text[0].endswith("%")
    assert bars.selectedpoints is None


def test_selection_marks_points_in_bars_and_scatter(summary: pl.DataFrame) -> None:
    table = ka.kernel_summary(ka.filter_kernels(summary, rank=0))
    chosen = [kernel_key(NAMES[28])]
    assert top_kernels_figure(table, 10, chosen).data[0].selectedpoints == (1,)
    scatter = duration_scatter_figure(table, chosen)
    assert scatter.data[0].selectedpoints == (table.get_column("key").to_list().index(chosen[0]),)
    assert scatter.layout.xaxis.type == "log" and scatter.layout.yaxis.type == "log"
    assert scatter.layout.dragmode == "select"
    assert scatter.layout.yaxis.title.text == "mean duration (ms)"


def test_all_ranks_adds_spread_whiskers_and_rank_ticks(summary: pl.DataFrame) -> None:
    frame = ka.filter_kernels(summary)
    figure = top_kernels_figure(ka.kernel_summary(frame), 5, spread=ka.rank_spread(frame))
    bars, ticks = figure.data
    # kernel_29: rank 0 = 900 ms, rank 1 = 1 ms -> mean 450.5, whiskers to 900 and 1.
    assert bars.x[0] == pytest.approx(450.5)
    assert bars.error_x.array[0] == pytest.approx(449.5) and bars.error_x.arrayminus[0] == pytest.approx(449.5)
    assert len(ticks.x) == 10  # 5 kernels x 2 ranks
    assert "rank 1: 1 ms" in ticks.hovertext


def test_empty_summary_says_so() -> None:
    empty = ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(conform("kernels", pl.DataFrame(
        schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64, "rank": pl.Int32})))))
    assert "No kernels" in top_kernels_figure(empty).layout.annotations[0].text
    assert "No launching ops" in duration_scatter_figure(empty, group="op").layout.annotations[0].text


def test_keys_from_events() -> None:
    event = {"points": [{"customdata": ["aaaaaaaa"]}, {"customdata": ["bbbbbbbb"]}, {"customdata": ["aaaaaaaa"]}]}
    assert keys_from_event(event) == ["aaaaaaaa", "bbbbbbbb"]
    assert keys_from_event(None) == []


@pytest.fixture
def layer_stats() -> pl.DataFrame:
    rows = [(0, layer, pass_, 1000 * i, 1000 * i + 100 + i, 1e6 if layer != "embed" else None)
            for i, (layer, pass_) in enumerate([("embed", "forward"), ("fc", "forward"), ("fc", "backward")] * 4)]
    frame = pl.DataFrame(rows, schema=["rank", "layer", "pass", "start_ns", "end_ns", "flops"], orient="row")
    ranges = conform("ranges", frame.with_columns(pl.col("layer").alias("name"), pl.lit("module").alias("category")))
    return la.layer_stats(la.layer_occurrences(ranges, conform("kernels", pl.DataFrame({"rank": [0]}))).occurrences)


def test_runtime_boxes_side_by_side_in_model_order(layer_stats: pl.DataFrame) -> None:
    figure = layer_box_figure(layer_stats, "time", selected=("fc", "backward"))
    boxes = [t for t in figure.data if t.type == "box"]
    assert [b.name for b in boxes] == ["forward", "backward"]
    assert figure.layout.boxmode == "group"
    assert list(figure.layout.xaxis.categoryarray) == ["embed", "fc"]
    assert boxes[0].boxmean is True and boxes[0].median is not None
    assert figure.layout.yaxis.title.text == "duration per occurrence (ns)"
    assert len(figure.layout.shapes) == 1  # the selected layer is shaded
    assert layer_from_event({"points": [{"x": "fc", "customdata": ["backward", 4]}]}) == ("fc", "backward")


def test_throughput_marks_unknown_flops_and_peak(layer_stats: pl.DataFrame) -> None:
    figure = layer_box_figure(layer_stats, "rate", peak=2e13, peak_label="BF16")
    texts = [a.text for a in figure.layout.annotations]
    (unknown,) = [t for t in figure.data if t.name == "FLOPs unknown"]  # embed has no FLOPs: said, not drawn as 0
    assert list(unknown.x) == ["embed"]
    assert any("peak BF16" in t for t in texts)
    assert figure.layout.yaxis2.title.text == "% of peak" and figure.layout.yaxis2.tickmode == "auto"
    boxes = [t for t in figure.data if t.type == "box"]
    assert all("embed" not in b.x for b in boxes)
    assert figure.layout.yaxis.title.text == "throughput (TFLOP/s)"
    no_flops = layer_stats.with_columns(pl.lit(0, pl.UInt32).alias("rate_n"))
    assert "FLOPs unknown for every layer" in layer_box_figure(no_flops, "rate").layout.annotations[0].text
    assert rate_unit_for(3e9) == (1e9, "GFLOP/s")
