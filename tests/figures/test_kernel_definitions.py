"""Every number with its definition (issue 15 items 3-5): bar axis and table headers agree, sums and
per-rank means both shown with several ranks, full names in the CSV, one colour per kernel, GPU busy text."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis import kernels as ka
from dashboard.analysis.compare import kernel_comparison
from dashboard.analysis.gpu_busy import gpu_busy
from dashboard.figures.compare import totals_scatter
from dashboard.figures.kernels import duration_scatter_figure, top_kernels_figure
from dashboard.schema import conform
from dashboard.views.kernel_table import busy_text, csv_columns, kernel_column_defs, kernel_rows

NAMES = [f"void ns::kernel_{i}<float>(float*)" for i in range(30)]


@pytest.fixture
def two_ranks() -> pl.DataFrame:
    # kernel_i: on rank 0 (i+1) launches of 1 ms; on rank 1 one launch of 1 ms.
    rows = []
    for i, name in enumerate(NAMES):
        for j in range(i + 1):
            start = (i * 100 + j) * 10_000_000
            rows.append((0, name, start, start + 1_000_000))
        rows.append((1, name, 0, 1_000_000))
    frame = conform("kernels", pl.DataFrame(rows, schema=["rank", "name", "start_ns", "end_ns"], orient="row"))
    return ka.filter_kernels(ka.prepare_kernels(frame))


def header(columns: list[dict], field: str) -> str:
    return next(c["headerName"] for c in columns if c.get("field") == field)


def test_several_ranks_table_shows_sum_and_mean_axis_names_the_mean(two_ranks: pl.DataFrame) -> None:
    summary, spread = ka.kernel_summary(two_ranks), ka.rank_spread(two_ranks)
    figure = top_kernels_figure(summary, 5, spread=spread)
    assert figure.layout.xaxis.title.text == "total time, mean per rank (ms)"
    rows, units = kernel_rows(summary, spread)
    columns = kernel_column_defs("name", units, spread=True, ranks=2)
    assert header(columns, "total") == "total time, sum over 2 ranks (ms)"
    assert header(columns, "rank_mean") == "total time, mean per rank (ms)"
    top = rows[0]  # kernel_29: 30 ms on rank 0 + 1 ms on rank 1
    assert (top["total"], top["rank_mean"], top["rank_min"], top["rank_max"]) == (31.0, 15.5, 1.0, 30.0)
    assert figure.data[0].x[0] == pytest.approx(15.5)  # the bar is the column named like its axis
    assert "31 ms summed over ranks · 15.5 ms mean per rank" in figure.data[0].hovertext[0]


def test_one_rank_has_one_total(two_ranks: pl.DataFrame) -> None:
    summary = ka.kernel_summary(two_ranks.filter(pl.col("rank") == 0))
    assert top_kernels_figure(summary, 5).layout.xaxis.title.text == "total time (ms)"
    rows, units = kernel_rows(summary)
    columns = kernel_column_defs("name", units)
    assert header(columns, "total") == "total time (ms)"
    assert "rank_mean" not in rows[0] and all(c.get("field") != "rank_mean" for c in columns)
    assert header(columns, "mean") == "mean per launch (ms)"


def test_csv_holds_full_names_not_chart_labels() -> None:
    columns = kernel_column_defs("name", {"total": "ms", "duration": "µs"})
    assert columns[0]["field"] == "label"  # the table leads with the chart's label...
    keys = csv_columns(columns)
    assert "label" not in keys and "group" in keys  # ...the CSV carries the full demangled name
    assert header(columns, "group") == "full name"


def test_one_colour_per_kernel_within_a_chart(two_ranks: pl.DataFrame) -> None:
    summary = ka.kernel_summary(two_ranks)
    bars = top_kernels_figure(summary, 30).data[0].marker.color
    assert len(bars) == 30 and len(set(bars)) == 30  # more kernels than palette colours, still distinct
    scatter = duration_scatter_figure(summary).data[0].marker.color
    assert len(set(scatter)) == 30
    assert list(scatter[:30]) == list(bars)  # the same kernel has the same colour in both charts


def test_compare_scatter_colours_are_distinct(two_ranks: pl.DataFrame) -> None:
    a = ka.kernel_summary(two_ranks.filter(pl.col("rank") == 0))
    b = ka.kernel_summary(two_ranks.filter(pl.col("rank") == 1))
    points = totals_scatter(kernel_comparison(a, b), (), "rank 0", "rank 1").data[1]
    assert len(set(points.marker.color)) == len(points.marker.color) == 30


def test_busy_text_one_rank_and_range_over_ranks() -> None:
    one = gpu_busy(pl.DataFrame({"rank": [0, 0], "start_ns": [0, 600_000_000],
                                 "end_ns": [320_000_000, 1_000_000_000]}))
    assert busy_text(one) == "GPU busy 72.0% of its 1 s span (rank 0)"
    both = gpu_busy(pl.DataFrame({"rank": [0, 1, 1], "start_ns": [0, 0, 1_500_000],
                                  "end_ns": [1_000_000, 500_000, 2_000_000]}))
    # rank 0: busy 1 ms of 1 ms; rank 1: busy 1 ms of 2 ms.
    assert busy_text(both) == "GPU busy 50.0–100.0% of span over 2 ranks (span 1 ms–2 ms per rank)"
    assert busy_text(gpu_busy(pl.DataFrame({"rank": [], "start_ns": [], "end_ns": []},
                                           schema={"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64}))) == ""


def test_compare_labels_kernels_of_both_sides_apart() -> None:
    # Each side alone labels its one wgrad kernel `wgrad_alg0_engine`: together they must differ.
    wgrad = "void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 8, 3, 3, 5, false, 512>(int)"
    other = wgrad.replace("128, 6, 8", "512, 6, 5")

    def side(name: str) -> pl.DataFrame:
        frame = conform("kernels", pl.DataFrame({"rank": [0], "name": [name], "start_ns": [0], "end_ns": [10]}))
        return ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(frame)))

    assert side(wgrad).get_column("label").to_list() == side(other).get_column("label").to_list()
    labels = dict(kernel_comparison(side(wgrad), side(other)).select("group", "label").rows())
    assert labels == {wgrad: "wgrad_alg0_engine‹…, 128, …, 8, …›",  # only what tells them apart
                      other: "wgrad_alg0_engine‹…, 512, …, 5, …›"}
