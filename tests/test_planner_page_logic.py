"""The /planner page's pure helpers: URL state, groups, selections, partition filter, selection marks."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.analysis import planner_liveness as liveness
from dashboard.analysis import planner_view as view
from dashboard.collectors import registry
from dashboard.demo import ws_dumps
from dashboard.figures.planner import MARK, channel_graph_elements, live_memory_figure, liveness_timeline
from dashboard.figures.planner_big_graph import BIG_GRAPH_ELEMENTS, OP_HEIGHT, OP_WIDTH, flat_partitions, is_big
from dashboard.figures.planner_selection import graph_selection, selection_shapes
from dashboard.views.planner import State as PlannerState
from dashboard.views.planner import partition_of_node

G1, G2 = "ws#1", "ws#2"  # the attention kernel (op ids) and the GEMM (no op ids)
PLAIN_DOT = """digraph pipeline {
  subgraph cluster_stage { label="stage"; load [label="load"]; mma; }
  load -> mma [label="smem"];
  mma -> store;
}
"""


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    root = tmp_path_factory.mktemp("planner")
    paths = ws_dumps.write(root / "ws")
    plain = root / "pipeline.dot"
    plain.write_text(PLAIN_DOT)
    return registry.collect([*paths, plain]).tables


def _frames(tables: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    return tables["ws_buffers"], tables["ws_channels"], tables["ws_ops"]


def test_url_state_parsers_accept_good_values_and_drop_bad_ones() -> None:
    assert view.buffer_key("SMEM", 3) == "SMEM-3"
    parse = PlannerState.from_query
    assert parse({"buffer": "SMEM-3"}).buffer == ("SMEM", 3)
    assert parse({"buffer": "tmem-0"}).buffer == ("TMEM", 0)
    for bad in (None, "", "SMEM", "DRAM-1", "SMEM-x", "SMEM--1", 7):
        assert parse({"buffer": bad}).buffer is None
    assert parse({"op": "61"}).op == 61
    assert parse({"op": 61}).op == 61
    assert parse({"op": "op_op_12345"}).op == "op_op_12345"
    assert parse({"op": ""}).op is None and parse({}).op is None
    assert parse({"partition": "2"}).partition == 2 and parse({"partition": 0}).partition == 0
    assert parse({"partition": ""}).partition is None and parse({"partition": "all"}).partition is None
    state = PlannerState(group=G1, buffer=("TMEM", 2), op=61, partition=1)
    assert parse(state.url_state()) == state  # the URL's text is read back to the same state
    assert partition_of_node("partition-4") == 4
    assert partition_of_node("op_op_61") is None and partition_of_node(None) is None


def test_group_choices_list_planner_groups_then_plain_graphs(tables: dict[str, pl.DataFrame]) -> None:
    buffers, channels, ops = _frames(tables)
    summary = liveness.group_summary(buffers, ops, channels)
    choices = view.group_choices(buffers, ops, channels, tables["dot_nodes"], summary, {G1: "attn_fwd"})
    assert [(c.group, c.kind) for c in choices] == [(G1, "planner"), (G2, "planner"), ("pipeline.dot", "dot")]
    assert "attn_fwd" in choices[0].label and "13 SMEM / 6 TMEM buffers" in choices[0].label
    assert "plain graph, 3 nodes" in choices[2].label
    assert view.choose_group(choices, G2).group == G2
    assert view.choose_group(choices, "no such group").group == G1  # a stale link opens the first group
    assert view.choose_group([], G1) is None


def test_buffer_selection_finds_its_channels_and_endpoint_ops(tables: dict[str, pl.DataFrame]) -> None:
    buffers, channels, ops = _frames(tables)
    k = buffers.filter((pl.col("group") == G1) & (pl.col("name") == "k")).row(0, named=True)
    selected = view.buffer_selection(buffers, channels, ops, G1, ("SMEM", k["buffer_index"]))
    assert selected is not None and selected.row["name"] == "k"
    assert selected.uids == sorted(k["channels"])
    mine = channels.filter((pl.col("group") == G1) & pl.col("uid").is_in(k["channels"]))
    assert selected.nodes == sorted(set(mine["src_node"].to_list()) | set(mine["dst_node"].to_list()))
    assert {op["role"] for op in selected.ops} == {"producer", "consumer"}
    assert view.buffer_selection(buffers, channels, ops, G1, ("SMEM", 999)) is None
    assert view.buffer_selection(buffers, channels, ops, G1, None) is None


def test_a_tapped_channel_selects_its_buffer(tables: dict[str, pl.DataFrame]) -> None:
    buffers, channels, _ops = _frames(tables)
    for row in channels.filter(pl.col("group") == G1).iter_rows(named=True):
        found = view.buffer_of_channel(buffers, channels, G1, row["uid"])
        assert found is not None and found[0] == row["memory"]
        owner = buffers.filter((pl.col("group") == G1) & (pl.col("memory") == found[0])
                               & (pl.col("buffer_index") == found[1])).row(0, named=True)
        assert row["uid"] in owner["channels"]
    assert view.buffer_of_channel(buffers, channels, G1, 10_000) is None


def test_marking_an_op_lists_what_is_live_there(tables: dict[str, pl.DataFrame]) -> None:
    buffers, channels, ops = _frames(tables)
    first_mma = ops.filter((pl.col("group") == G1) & (pl.col("op") == "tc_gen5_mma")).sort("op_id").row(0, named=True)
    mark = view.mark_op(buffers, channels, ops, G1, first_mma["op_id"])
    assert mark is not None and mark.op_id == first_mma["op_id"] and mark.nodes == [first_mma["node"]]
    assert mark.label.startswith(f"op {first_mma['op_id']}: tc_gen5_mma")
    at = first_mma["op_id"]
    expected = buffers.filter((pl.col("group") == G1) & (pl.col("start_op") <= at) & (pl.col("end_op") > at))
    assert sorted(mark.live["name"].to_list()) == sorted(expected["name"].to_list())
    totals = view.live_totals(mark.live)
    smem_live = expected.filter(pl.col("memory") == "SMEM")
    assert totals["SMEM"] == {"count": smem_live.height, "size": smem_live["bytes"].sum(),
                              "capacity": liveness.SMEM_CAPACITY_BYTES}
    assert totals["TMEM"]["capacity"] == 512
    assert set(mark.touched["name"].to_list()) >= {"k"}  # the QK MMA reads k through a channel
    # The same op by its node id; an op id the graph does not show still marks the timelines.
    assert view.mark_op(buffers, channels, ops, G1, first_mma["node"]).op_id == first_mma["op_id"]
    hidden = view.mark_op(buffers, channels, ops, G1, first_mma["op_id"] - 1)
    assert hidden is not None and hidden.nodes == [] and "not a key op" in hidden.label
    assert view.mark_op(buffers, channels, ops, G1, "op_op_nowhere") is None


def test_an_op_without_op_id_is_marked_by_node_but_not_placed(tables: dict[str, pl.DataFrame]) -> None:
    buffers, channels, ops = _frames(tables)
    gemm_op = channels.filter((pl.col("group") == G2) & (pl.col("memory") == "TMEM")).row(0, named=True)["src_node"]
    mark = view.mark_op(buffers, channels, ops, G2, gemm_op)
    assert mark is not None and mark.op_id is None and mark.live.is_empty()
    assert mark.nodes == [gemm_op] and mark.touched.height >= 1


def test_partition_view_keeps_the_partition_and_its_boundary(tables: dict[str, pl.DataFrame]) -> None:
    _buffers, channels, ops = _frames(tables)
    everything_ops, everything_channels = view.partition_view(ops, channels, G1, None)
    assert everything_ops.height == ops.filter(pl.col("group") == G1).height
    assert everything_channels.height == channels.filter(pl.col("group") == G1).height
    shown_ops, shown_channels = view.partition_view(ops, channels, G1, 1)  # the MMA partition
    inside = set(ops.filter((pl.col("group") == G1) & pl.col("partitions").list.contains(1))["node"].to_list())
    assert inside <= set(shown_ops["node"].to_list())
    assert shown_channels.height > 0
    for row in shown_channels.iter_rows(named=True):
        assert row["src_node"] in inside or row["dst_node"] in inside
        assert {row["src_node"], row["dst_node"]} <= set(shown_ops["node"].to_list())
    assert shown_ops.height < everything_ops.height
    # The filtered elements still draw: every channel edge has both ends.
    elements = channel_graph_elements(shown_ops, shown_channels, G1)
    ids = {e["data"]["id"] for e in elements}
    assert all(e["data"]["source"] in ids and e["data"]["target"] in ids for e in elements if "source" in e["data"])


def test_graph_selection_is_sorted_plain_data() -> None:
    selection = graph_selection({5, 2}, {"op_op_9", "op_op_1"}, ["op_op_3"], fade=False)
    assert selection == {"uids": [2, 5], "nodes": ["op_op_1", "op_op_9"], "marked": ["op_op_3"], "fade": False}
    assert graph_selection()["uids"] == [] and graph_selection()["fade"] is True


def test_selection_shapes_box_the_selected_bar_and_band_the_marked_op(tables: dict[str, pl.DataFrame]) -> None:
    buffers = tables["ws_buffers"]
    figure = liveness_timeline(buffers, G1, "SMEM")
    bars = figure.data[0]
    position = list(bars.customdata).index(2)
    shapes = selection_shapes(figure, buffer_index=2, marked_op=80)
    box = next(s for s in shapes if s["name"] == "selected-buffer")
    assert (box["x0"], box["x1"]) == (bars.base[position], bars.base[position] + bars.x[position])
    assert box["y0"] < position < box["y1"] and box["line"]["color"] == MARK
    band = next(s for s in shapes if s["name"] == "marked-op")
    assert (band["x0"], band["x1"]) == (80, 81)
    assert next(s for s in shapes if s["name"] == "marked-op-line")["label"]["text"] == "op 80"
    go.Figure(figure).update_layout(shapes=shapes)  # plotly accepts them
    # Nothing selected: the figure's own shapes only; an unknown buffer draws no box.
    assert selection_shapes(figure) == []
    assert not [s for s in selection_shapes(figure, buffer_index=999) if s["name"] == "selected-buffer"]
    # The live-memory chart keeps its over-capacity shading under the band.
    tight = live_memory_figure(buffers, G1, "TMEM", capacity=300)
    own = len(tight.layout.shapes)
    shapes = selection_shapes(tight, marked_op=70, label=False)
    assert own > 0 and len(shapes) == own + 2 and "label" not in shapes[-1]
    go.Figure(tight).update_layout(shapes=shapes)


def test_flat_partitions_draw_boxes_behind_the_same_ops(tables: dict[str, pl.DataFrame]) -> None:
    _buffers, channels, ops = _frames(tables)
    elements = channel_graph_elements(ops, channels, G1)
    flat = flat_partitions(elements)
    assert not is_big(elements) and is_big(elements * (BIG_GRAPH_ELEMENTS // len(elements) + 1))
    by_id = {e["data"]["id"]: e for e in flat}
    assert set(by_id) == {e["data"]["id"] for e in elements}  # same elements, same ids
    boxes = [e for e in flat if "partition-box" in e.get("classes", "")]
    assert sorted(b["data"]["id"] for b in boxes) == sorted(
        e["data"]["id"] for e in elements if e.get("classes") == "partition")
    for element in elements:
        parent = element["data"].get("parent")
        if parent is None:
            continue
        op = by_id[element["data"]["id"]]
        assert "parent" not in op["data"] and op["position"] == element["position"]
        box = by_id[parent]
        half_w, half_h = box["data"]["width"] / 2, box["data"]["height"] / 2
        # The box covers the whole op node, as the compound parent did.
        assert box["position"]["x"] - half_w <= op["position"]["x"] - OP_WIDTH / 2
        assert op["position"]["x"] + OP_WIDTH / 2 <= box["position"]["x"] + half_w
        assert box["position"]["y"] - half_h <= op["position"]["y"] - OP_HEIGHT / 2
        assert op["position"]["y"] + OP_HEIGHT / 2 <= box["position"]["y"] + half_h
    assert [e for e in flat if "source" in e["data"]] == [e for e in elements if "source" in e["data"]]


def test_demo_graph_of_2000_ops_builds_fast(tmp_path: Path) -> None:
    import time

    kernel = ws_dumps.attention_kernel(sub_tiles=70)
    folder = tmp_path / "big"
    ws_dumps.write_dump_folder(folder, [(kernel, True)])
    big = registry.collect([folder]).tables
    group = big["ws_ops"]["group"][0]
    assert big["ws_ops"].height >= 1900
    started = time.perf_counter()
    buffers, channels, ops = _frames(big)
    mark = view.mark_op(buffers, channels, ops, group, int(ops["op_id"][1000]))
    chosen = view.buffer_selection(buffers, channels, ops, group, ("SMEM", 5))
    elapsed = time.perf_counter() - started
    assert mark is not None and chosen is not None
    assert elapsed < 1.0, f"a selection on a 2000-op graph took {elapsed:.2f} s"
