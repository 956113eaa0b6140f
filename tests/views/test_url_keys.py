import polars as pl

from dashboard.analysis.kernel_keys import format_keys, kernel_key, with_kernel_keys
from dashboard.views.chart_events import x_range_from_relayout
from dashboard.views.params import format_window, parse_keys, parse_window


def test_kernel_keys_are_stable_short_and_url_safe() -> None:
    name = "void at::native::vectorized_elementwise_kernel<4, float, (int)2>(int, float*)"
    # Pinned: links shared today must still select the same kernel tomorrow.
    assert kernel_key(name) == kernel_key(name) == "fd220ff7"
    assert kernel_key(name + " ") != kernel_key(name)
    keys = [kernel_key("a"), kernel_key("b")]
    assert parse_keys(format_keys(keys)) == keys
    assert parse_keys("zzzzzzzz.12345678.short") == ["12345678"]  # malformed keys are dropped


def test_with_kernel_keys_hashes_each_name_once_and_keeps_nulls() -> None:
    frame = with_kernel_keys(pl.DataFrame({"name": ["a", "b", "a", None]}))
    assert frame["key"].to_list() == [kernel_key("a"), kernel_key("b"), kernel_key("a"), None]


def test_windows_round_trip_and_reject_nonsense() -> None:
    assert parse_window(format_window(100, 250)) == (100, 250)
    assert parse_window("250-100") is None
    assert parse_window("abc") is None
    assert parse_window(None) is None


def test_x_range_from_relayout_reads_both_plotly_forms() -> None:
    assert x_range_from_relayout({"xaxis.range[0]": 5.5, "xaxis.range[1]": 2}) == (2.0, 5.5)
    assert x_range_from_relayout({"xaxis2.range": [1, 3]}) == (1.0, 3.0)
    assert x_range_from_relayout({"xaxis.autorange": True}) == "all"
    assert x_range_from_relayout({"yaxis.range[0]": 1, "yaxis.range[1]": 2}) is None
    assert x_range_from_relayout({"xaxis.range[0]": 1}) is None
    assert x_range_from_relayout(None) is None
