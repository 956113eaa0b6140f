"""Run-to-run and rank-to-rank comparison of kernel time, on hand-checked numbers."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis import kernels as ka
from dashboard.analysis.compare import (
    BOTH,
    ONLY_A,
    ONLY_B,
    Side,
    comparison_totals,
    default_sides,
    kernel_comparison,
    layer_comparison,
)
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.figures.compare import (
    FASTER,
    SLOWER,
    delta_figure,
    layer_delta_figure,
    layer_from_click,
    totals_scatter,
)


def summary(*launches: tuple[str, int]) -> pl.DataFrame:
    """kernel_summary of kernels given as (name, duration ns), launched back to back."""
    start, rows = 0, []
    for name, duration in launches:
        rows.append({"name": name, "start_ns": start, "end_ns": start + duration, "rank": 0})
        start += duration + 10
    kernels = schema.conform("kernels", pl.DataFrame(rows))
    return ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(kernels)))


@pytest.fixture
def comparison() -> pl.DataFrame:
    a = summary(("gemm", 40), ("gemm", 60), ("add", 50))
    b = summary(("gemm", 70), ("gemm", 90), ("relu", 30))
    return kernel_comparison(a, b)


def test_rows_are_ordered_by_the_size_of_the_change(comparison: pl.DataFrame) -> None:
    rows = comparison.select("group", "count_a", "count_b", "total_a_ns", "total_b_ns", "delta_ns", "presence").rows()
    assert rows == [
        ("gemm", 2, 2, 100, 160, 60, BOTH),
        ("add", 1, None, 50, None, -50, ONLY_A),
        ("relu", None, 1, None, 30, 30, ONLY_B),
    ]
    ratio = dict(zip(comparison.get_column("group"), comparison.get_column("ratio"), strict=True))
    assert ratio["gemm"] == pytest.approx(1.6)
    assert ratio["add"] == 0.0  # gone in B
    assert ratio["relu"] is None  # nothing to divide by
    assert comparison.get_column("key").to_list() == [kernel_key(n) for n in ("gemm", "add", "relu")]
    assert comparison.get_column("mean_b_ns").to_list()[0] == 80.0


def test_totals_and_change(comparison: pl.DataFrame) -> None:
    totals = comparison_totals(comparison)
    assert (totals.total_a_ns, totals.total_b_ns, totals.launches_a, totals.launches_b) == (150, 190, 3, 3)
    assert (totals.both, totals.only_a, totals.only_b) == (1, 1, 1)
    assert totals.change == pytest.approx(40 / 150)


def test_default_sides_compare_ranks_of_one_run_first() -> None:
    assert default_sides(Side("r", None), [1, 0], "q") == (Side("r", 0), Side("r", 1))
    assert default_sides(Side("r", 1), [0, 1, 2], None) == (Side("r", 1), Side("r", 0))
    # One rank: the previous run of the same name, else nothing (the page asks for B, never guesses).
    assert default_sides(Side("r", None), [0], "earlier") == (Side("r", None), Side("earlier", None))
    assert default_sides(Side("r", None), [0], None) is None


def test_delta_bars_say_which_way_time_moved(comparison: pl.DataFrame) -> None:
    figure = delta_figure(comparison, 10, [kernel_key("add")], "A", "B")
    bars = figure.data[0]
    assert list(bars.x) == [60, -50, 30]  # ns: the largest change is 60 ns
    assert list(bars.marker.color) == [SLOWER, FASTER, SLOWER]
    assert list(bars.text) == ["×1.60", "gone in B", "new in B"]
    assert list(bars.customdata) == [kernel_key(n) for n in ("gemm", "add", "relu")]
    assert list(bars.selectedpoints) == [1]
    assert "B − A total time (ns)" in figure.layout.xaxis.title.text
    assert "+60 ns" in bars.hovertext[0] and "absent" in bars.hovertext[2]


def test_scatter_shows_kernels_on_both_sides_against_the_diagonal(comparison: pl.DataFrame) -> None:
    figure = totals_scatter(comparison, [], "A", "B")
    diagonal, points = figure.data
    assert list(points.x) == [100] and list(points.y) == [160]
    assert diagonal.x == diagonal.y and figure.layout.xaxis.type == "log"
    empty = totals_scatter(comparison.filter(pl.col("presence") != BOTH), [], "A", "B")
    assert len(empty.data) == 0 and "No kernel runs on both sides" in str(empty.layout.annotations[0].text)


def _stats(*rows: tuple[str, str, int, int, float]) -> pl.DataFrame:
    """layer_stats-like frames: (layer, pass, order, count, median ns)."""
    return pl.DataFrame(rows, schema={"layer": pl.String, "pass": pl.String, "order": pl.UInt32,
                                      "count": pl.UInt32, "time_median": pl.Float64}, orient="row")


def test_layers_compare_medians_in_the_baselines_model_order() -> None:
    a = _stats(("embed", "forward", 0, 4, 100.0), ("block", "forward", 1, 4, 400.0),
               ("block", "backward", 1, 4, 800.0), ("head", "forward", 2, 4, 50.0))
    b = _stats(("block", "backward", 0, 4, 600.0), ("block", "forward", 0, 4, 500.0),
               ("embed", "forward", 1, 4, 100.0), ("extra", "forward", 2, 4, 70.0))
    layers = layer_comparison(a, b)
    assert layers.select("layer", "pass", "delta_ns", "presence").rows() == [
        ("embed", "forward", 0.0, BOTH),
        ("block", "forward", 100.0, BOTH),
        ("block", "backward", -200.0, BOTH),
        ("head", "forward", None, ONLY_A),
        ("extra", "forward", None, ONLY_B),  # B's own layers after A's
    ]
    assert layers.get_column("ratio").to_list()[:3] == pytest.approx([1.0, 1.25, 0.75])
    figure = layer_delta_figure(layers, ("block", "backward"), "A", "B")
    bars = figure.data[0]
    assert list(bars.y) == ["embed · forward", "block · forward", "block · backward", "head · forward",
                            "extra · forward"]
    assert list(bars.x) == [0, 100, -200, 0, 0]
    assert list(bars.text) == ["×1.00", "×1.25", "×0.75", "gone in B", "new in B"]
    assert list(bars.selectedpoints) == [2]
    assert layer_from_click({"points": [{"customdata": ["block", "backward"]}]}) == ("block", "backward")
    assert layer_from_click({"points": [{"customdata": "k"}]}) is None
    assert len(layer_delta_figure(layer_comparison(a.clear(), b.clear()), None, "A", "B").data) == 0
