"""Log axes read 1-2-5 with the unit at every decade, thinned when labels would collide (issue 15 item 7)."""

from __future__ import annotations

import math

import polars as pl

from dashboard.analysis import kernels as ka
from dashboard.analysis.compare import kernel_comparison
from dashboard.figures.compare import delta_figure, totals_scatter
from dashboard.figures.kernels import duration_scatter_figure
from dashboard.figures.log_axis import log_axis
from dashboard.schema import conform


def shown(axis: dict) -> list[str]:
    low, high = axis["range"]
    return [t for v, t in zip(axis["tickvals"], axis["ticktext"], strict=True) if low <= math.log10(v) <= high]


def test_one_two_five_with_the_unit_at_each_decade() -> None:
    axis = log_axis(6, 400, "µs", length_px=440)
    assert axis["type"] == "log" and axis["tickmode"] == "array"
    assert shown(axis) == ["5", "10 µs", "20", "50", "100 µs", "200", "500"]


def test_many_decades_keep_only_the_decades() -> None:
    axis = log_axis(0.002, 900, "ms", length_px=440)
    assert shown(axis) == ["0.001 ms", "0.01 ms", "0.1 ms", "1 ms", "10 ms", "100 ms", "1000 ms"]
    # A short vertical axis thins by line height instead of label width.
    # 90 px over 6.6 decades leaves 14 px a decade, under a line: every other decade.
    assert shown(log_axis(0.002, 900, "ms", length_px=90, horizontal=False)) == ["0.01 ms", "1 ms", "100 ms"]


def test_counts_use_si_suffixes() -> None:
    assert shown(log_axis(1, 2_000_000, length_px=440, si=True)) == ["1", "10", "100", "1k", "10k", "100k", "1M"]


def test_labels_that_would_touch_drop_to_decades() -> None:
    # 137 px a decade: "0.05" and "0.1 ms" 41 px apart need 46 px, so the 2s and 5s go.
    assert shown(log_axis(0.05, 30, "ms", length_px=440)) == ["0.1 ms", "1 ms", "10 ms"]
    # Twice as wide, all of 1-2-5 fits.
    assert shown(log_axis(0.05, 30, "ms", length_px=880)) == [
        "0.05", "0.1 ms", "0.2", "0.5", "1 ms", "2", "5", "10 ms", "20", "50"]


def _summary(rows: list[tuple]) -> pl.DataFrame:
    frame = conform("kernels", pl.DataFrame(rows, schema=["rank", "name", "start_ns", "end_ns"], orient="row"))
    return ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(frame)))


def test_charts_use_explicit_log_ticks_and_compare_ratios_stand_in_a_column() -> None:
    a = _summary([(0, "k1", 0, 1_000), (0, "k2", 0, 50_000), (0, "k3", 0, 5)])
    b = _summary([(0, "k1", 0, 3_000), (0, "k2", 0, 20_000), (0, "k4", 0, 7)])
    scatter = duration_scatter_figure(a)
    assert scatter.layout.xaxis.tickmode == "array" and scatter.layout.yaxis.tickmode == "array"
    assert any(t.endswith(" µs") for t in scatter.layout.yaxis.ticktext)
    comparison = kernel_comparison(a, b)
    assert totals_scatter(comparison, (), "A", "B").layout.xaxis.tickmode == "array"
    delta = delta_figure(comparison, 10, (), "A", "B")
    assert delta.data[0].textposition == "none"  # no label at a bar's end, where it hit the kernel names
    ratios = delta.layout.yaxis2  # a right-hand axis whose tick labels are the B / A column, row by row
    column = dict(zip(delta.data[0].y, (ratios.ticktext[int(v)] for v in ratios.tickvals), strict=True))
    assert column == {"k2": "×0.40", "k1": "×3.00", "k3": "gone in B", "k4": "new in B"}
    assert ratios.side == "right" and ratios.overlaying == "y" and list(ratios.range) == [3.5, -0.5]
    assert [t.yaxis for t in delta.data] == [None, "y2"] and len(delta.data[1].x) == 0  # None: the first y axis
