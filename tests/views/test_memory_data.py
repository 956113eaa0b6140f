"""The /memory page's pure helpers on the demo run: state, slices that must equal whole-run analysis, events."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis import memory as analysis
from dashboard.collectors import registry
from dashboard.demo import tt_memory_log
from dashboard.views import memory_data as view
from dashboard.views import memory_events as events
from dashboard.views.memory import State as ViewState
from dashboard.views.memory import checked


def _table(data: view.MemoryData, state: ViewState, sort: tuple[tuple[str, bool], ...] = ()) -> pl.DataFrame:
    return view.table_view(data, state.unit, state.ops, state.optypes, state.programs, sort)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    run = tt_memory_log.write(tmp_path_factory.mktemp("tt"))[0]
    return registry.collect([run]).tables


@pytest.fixture(scope="module")
def data(tables: dict[str, pl.DataFrame]) -> view.MemoryData:
    # Shuffled on purpose: prepare must not rely on the stored order.
    return view.prepare(tables["op_memory"].sample(fraction=1.0, shuffle=True, seed=1),
                        tables["op_meta"].sample(fraction=1.0, shuffle=True, seed=2))


def test_ranges_and_url_state(data: view.MemoryData) -> None:
    parse = ViewState.from_query
    assert parse({"ops": "40-120"}).ops == (40, 120) and parse({"ops": "7"}).ops is None
    assert parse({"ops": "120-40"}).ops is None  # high before low: malformed, like any other bad value
    assert parse({}).ops is None and ViewState(ops=(3, 9)).url_state()["ops"] == "3-9"
    state = checked(data, parse({"ops": "100-99999", "op": "12", "optype": "MatmulOp,NoSuchOp,MatmulOp",
                                 "program": "main,elsewhere", "unit": "device", "peaks": "bogus"}))
    assert state == ViewState(ops=(100, data.last_op), op=12, optypes=("MatmulOp",), programs=("main",),
                              unit="device", peaks="all")
    assert state.to_query() == {"ops": f"100-{data.last_op}", "op": "12", "optype": "MatmulOp", "program": "main",
                                "unit": "device"}  # defaults are left out of the address bar
    # A range entirely outside the run and an op that does not exist are dropped, not kept as broken state.
    assert checked(data, parse({"ops": "90000-90010", "op": "-3"}).replace(zoom=(5, 10))) == ViewState(zoom=(5, 10))
    assert parse(state.url_state()) == state  # the URL's text reads back to the same state


def test_prepare(data: view.MemoryData, tables: dict[str, pl.DataFrame]) -> None:
    assert data.buffer_types == ("DRAM", "L1", "L1_SMALL")  # TRACE has no region in the demo
    assert "DeallocateOp" not in dict(data.op_types) and dict(data.op_types)["MatmulOp"] > 0
    assert data.ops["op_index"].is_sorted() and data.ops.height == tables["op_memory"]["op_index"].n_unique()
    bank, device = data.curves["bank"]["DRAM"], data.curves["device"]["DRAM"]
    assert (device["allocated"] == bank["allocated"] * bank["banks"]).all()
    assert data.peaks["profiler"]["allocated_per_bank"].max() <= data.peaks["all"]["allocated_per_bank"].max()


@pytest.mark.parametrize("op_range", [None, (40, 120), (300, 308), (0, 0)])
def test_range_statistics_equal_the_whole_run_analysis(data: view.MemoryData,
                                                       op_range: tuple[int, int] | None) -> None:
    start, end = op_range or (data.first_op, data.last_op)
    expected = analysis.range_stats(data.op_memory, start, end).filter(
        pl.col("buffer_type").is_in(data.buffer_types))
    assert view.range_view(data, op_range).equals(expected)


@pytest.mark.parametrize("op", [0, 120, 301])
def test_op_detail_equals_the_whole_run_analysis(data: view.MemoryData, op: int) -> None:
    expected = analysis.op_detail(data.op_memory, data.op_meta, op).filter(
        pl.col("buffer_type").is_in(data.buffer_types))
    detail = view.op_detail(data, op)
    assert detail.equals(expected) and detail["mlir_op"][0] == view.op_summary(data, op)["mlir_op"]
    if op == data.last_op:
        assert detail["after_per_bank"].is_null().all()  # no snapshot after the last op


def test_table_filters_sort_blocks_and_csv(data: view.MemoryData) -> None:
    whole = _table(data, ViewState())
    assert whole["op_index"].to_list() == data.ops.filter(~pl.col("housekeeping"))["op_index"].to_list()
    assert not any(c.startswith("TRACE") for c in whole.columns) and "DRAM_delta" in whole.columns
    state = ViewState(ops=(100, 200), optypes=("MatmulOp", "LinearOp"))
    table = _table(data, state)
    assert table.height > 0 and table["op_index"].is_between(100, 200).all()
    assert set(table["op_type"]) == {"MatmulOp", "LinearOp"}
    by_growth = _table(data, state, view.sort_key([{"colId": "L1_delta", "sort": "desc"}]))
    assert by_growth["L1_delta"].to_list() == sorted(table["L1_delta"].to_list(), reverse=True)
    assert view.sort_key([{"colId": "x", "sort": None}]) == ()
    block = view.table_block(by_growth, 2, 5)
    assert [row["op_index"] for row in block] == by_growth["op_index"][2:5].to_list()
    assert len(view.table_block(whole, 0, 10**6)) == min(whole.height, view.MAX_TABLE_BLOCK)
    csv = view.table_csv(table, per_bank=True)
    assert csv.splitlines()[0].count("_bytes_per_bank") == 2 * len(data.buffer_types)
    assert len(csv.splitlines()) == table.height + 1
    device = _table(data, ViewState(unit="device"))
    assert (device["DRAM_allocated"] == whole["DRAM_allocated"] * 12).all()


def test_growth_respects_range_and_program(data: view.MemoryData) -> None:
    whole = view.growth_view(data, None, ())
    assert whole.equals(analysis.top_growth(data.op_memory, n=view.TOP_GROWTH, buffer_types=data.buffer_types))
    ranged = view.growth_view(data, (50, 150), ())
    assert ranged.height and ranged["op_index"].is_between(50, 150).all()
    # Deltas are taken before the range cut: the op at the range's end keeps its real delta.
    deltas = analysis.with_deltas(data.op_memory).filter(pl.col("op_index").is_between(50, 150)
                                                         & (pl.col("buffer_type") == "L1"))
    assert ranged.filter(pl.col("buffer_type") == "L1")["delta_per_bank"].max() == deltas["delta_per_bank"].max()
    assert set(view.growth_view(data, None, ("main_const_eval_0",))["program"]) == {"main_const_eval_0"}


def test_highlights_and_zoom_windows(data: view.MemoryData, monkeypatch: pytest.MonkeyPatch) -> None:
    ops = view.highlighted_ops(data, ("MatmulOp",), ())
    assert ops.len() == dict(data.op_types)["MatmulOp"]
    assert view.highlighted_ops(data, (), ("main",)).len() == 0  # a program alone highlights nothing
    rows = view.highlight_rows(data, "bank", ("MatmulOp",), ())
    assert set(rows) == set(data.buffer_types) and sorted(rows["L1"]["op_index"]) == sorted(ops)
    monkeypatch.setattr(view, "MAX_HIGHLIGHT_POINTS", 6)
    capped = view.highlight_rows(data, "device", ("EltwiseBinaryOp",), ())
    assert 0 < capped["DRAM"].height <= 6
    zoomed = view.highlight_rows(data, "device", ("EltwiseBinaryOp",), (), (100, 140))
    inside = sorted(op for op in view.highlighted_ops(data, ("EltwiseBinaryOp",), ()) if 100 <= op <= 140)
    assert 0 < len(inside) <= 6 and not set(inside) <= set(capped["DRAM"]["op_index"])
    assert sorted(zoomed["DRAM"]["op_index"]) == inside  # a zoom shows every highlighted op again
    window = view.window_rows(data, "bank", (100, 140))
    assert window["L1"]["op_index"].to_list() == list(range(99, 142))


def test_reading_plotly_events() -> None:
    assert events.range_from_selection({"range": {"x3": [99.6, 140.2], "y3": [0, 1]}}) == (100, 140)
    assert events.range_from_selection({"range": {"x": [10.2, 10.4]}}) == (10, 10)  # a sliver takes the nearest op
    assert events.range_from_selection({"points": [{"x": 3}]}) is None and events.range_from_selection(None) is None
    assert events.range_from_relayout({"xaxis2.range[0]": 4.4, "xaxis2.range[1]": 20.5}) == (5, 20)
    assert events.range_from_relayout({"xaxis.range": [7, 3]}) == (3, 7)
    assert events.range_from_relayout({"xaxis.autorange": True, "xaxis2.autorange": True}) == "all"
    assert events.range_from_relayout({"autosize": True}) is None
    assert events.range_from_relayout({"dragmode": "zoom"}) is None
    assert events.op_from_click({"points": [{"x": 12, "customdata": [11, "ttnn.add"]}]}) == 11
    assert events.op_from_click({"points": [{"x": 12.0}]}) == 12 and events.op_from_click({"points": []}) is None


def test_events_change_the_state(data: view.MemoryData) -> None:
    start = ViewState(op=3)
    assert events.after_event(data, start, "select", {"range": {"x": [20, 60]}}) == ViewState(ops=(20, 60), op=3)
    zoomed = events.after_event(data, start, "relayout", {"xaxis.range[0]": 20, "xaxis.range[1]": 60})
    assert zoomed == ViewState(ops=(20, 60), op=3, zoom=(20, 60))
    assert events.after_event(data, zoomed, "relayout", {"xaxis.autorange": True}) == start
    assert events.after_event(data, start, "relayout", {"autosize": True}) is None
    assert events.after_event(data, zoomed, "clear-range", 1) == start
    top = view.growth_view(data, None, ()).row(0, named=True)
    grown = events.after_event(data, start, "growth", {"points": [{"customdata": [top["op_index"], "x"]}]})
    assert grown == ViewState(op=top["op_index"], optypes=(top["op_type"],))
    assert events.after_event(data, start, "cell", {"rowId": "42", "colId": "mlir_op"}) == ViewState(op=42)
    assert events.after_event(data, start, "cell", {"rowId": "99999"}) is None
    assert events.after_event(data, start, "optype", ["LinearOp", "NotAnOp"]).optypes == ("LinearOp",)
    assert events.after_event(data, start, "program", ["main"]).programs == ("main",)
    assert events.after_event(data, start, "unit", "device").unit == "device"
    assert events.after_event(data, start, "peaks", "profiler").peaks == "profiler"
    assert events.after_event(data, start, "clear-op", 1) == ViewState()
    profiler = ViewState(peaks="profiler")
    culprit = data.peaks["profiler"].filter(pl.col("buffer_type") == "L1")["culprit_op_index"][0]
    assert events.after_event(data, profiler, "peak", "L1") == ViewState(op=culprit, peaks="profiler")
    assert events.after_event(data, start, "something-else", None) is None


def test_runs_without_metadata_or_capacity(tables: dict[str, pl.DataFrame]) -> None:
    bare = view.prepare(tables["op_memory"], None)
    detail = view.op_detail(bare, 120)
    assert detail.height == 3 and "output_shapes" not in detail.columns
    assert "input_shapes" not in _table(bare, ViewState()).columns
    empty = view.prepare(tables["op_memory"].with_columns(pl.lit(0, pl.Int64).alias("total_per_bank")), None)
    assert empty.buffer_types == () and empty.ops.height == 0
