"""Planner figures and cytoscape element builders, on the demo dump folder."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.analysis.planner_liveness import SMEM_CAPACITY_BYTES, over_capacity
from dashboard.collectors import registry
from dashboard.demo import ws_dumps
from dashboard.figures import planner
from dashboard.figures.planner import FADED
from dashboard.figures.planner_preview import selection_classes
from dashboard.figures.planner_selection import graph_selection

G1, G2 = "ws#1", "ws#2"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    folder = tmp_path_factory.mktemp("demo") / "ws"
    return registry.collect(ws_dumps.write(folder)).tables


def _bars(figure: go.Figure) -> go.Bar:
    return next(t for t in figure.data if isinstance(t, go.Bar) and t.customdata is not None)


def test_smem_timeline_one_bar_per_buffer(tables: dict[str, pl.DataFrame]) -> None:
    buffers = tables["ws_buffers"]
    figure = planner.liveness_timeline(buffers, G1, "SMEM")
    assert len(figure.data) == 3  # the bars, the colour key, the repeated op axis (no operand D in SMEM)
    bars = _bars(figure)
    smem = buffers.filter((pl.col("group") == G1) & (pl.col("memory") == "SMEM")).sort("start_op", "buffer_index")
    assert len(bars.y) == smem.height == 13
    assert list(bars.base) == smem["start_op"].to_list()
    assert list(bars.x) == (smem["end_op"] - smem["start_op"]).to_list()
    assert list(bars.customdata) == smem["buffer_index"].to_list()
    # Size shows as thickness: the largest buffer is the thickest bar.
    biggest = smem["bytes"].to_list().index(smem["bytes"].max())
    assert bars.width[biggest] == max(bars.width)
    assert "32 KiB" in bars.hovertext[biggest] and "[" in bars.hovertext[biggest]
    assert FADED not in bars.marker.color


def test_tmem_timeline_marks_operand_d(tables: dict[str, pl.DataFrame]) -> None:
    figure = planner.liveness_timeline(tables["ws_buffers"], G1, "TMEM")
    assert len(figure.data) == 4  # bars, colour key, operand-D legend entry, the repeated op axis
    bars = _bars(figure)
    tmem = tables["ws_buffers"].filter((pl.col("group") == G1) & (pl.col("memory") == "TMEM")).sort(
        "start_op", "buffer_index")
    assert list(bars.marker.pattern.shape) == ["/" if d else "" for d in tmem["operand_d"].to_list()]


def test_highlight_changes_colours_and_marked_op_draws_a_band(tables: dict[str, pl.DataFrame]) -> None:
    buffers = tables["ws_buffers"]
    plain = _bars(planner.liveness_timeline(buffers, G1, "SMEM"))
    figure = planner.liveness_timeline(buffers, G1, "SMEM", highlight_buffers={2}, marked_op=80)
    lit = _bars(figure)
    chosen = list(lit.customdata).index(2)
    assert lit.marker.color[chosen] == plain.marker.color[chosen] != FADED
    assert all(c == FADED for i, c in enumerate(lit.marker.color) if i != chosen)
    assert [(s.x0, s.x1) for s in figure.layout.shapes] == [(80, 81)]


def test_empty_smem_timeline_says_why(tables: dict[str, pl.DataFrame]) -> None:
    figure = planner.liveness_timeline(tables["ws_buffers"], G2, "SMEM")
    assert len(figure.data) == 0
    assert "No SMEM buffers" in figure.layout.annotations[0].text


def test_live_memory_against_capacity(tables: dict[str, pl.DataFrame]) -> None:
    buffers = tables["ws_buffers"]
    smem = planner.live_memory_figure(buffers, G1, "SMEM")
    assert len(smem.data) == 2
    live, capacity = smem.data
    assert live.line.shape == "hv"
    assert capacity.y[0] == SMEM_CAPACITY_BYTES / 1024  # KiB axis
    assert "227 KiB" in capacity.name
    assert len(smem.layout.shapes) == 0  # fits
    tight = planner.live_memory_figure(buffers, G1, "TMEM", capacity=300)
    assert tight.data[1].y[0] == 300
    assert len(tight.layout.shapes) == over_capacity(buffers, G1, "TMEM", 300).height > 0


def _nodes(elements: list[dict]) -> list[dict]:
    return [e for e in elements if "source" not in e["data"]]


def _edges(elements: list[dict]) -> list[dict]:
    return [e for e in elements if "source" in e["data"]]


def test_channel_graph_compound_partitions_in_program_order(tables: dict[str, pl.DataFrame]) -> None:
    elements = planner.channel_graph_elements(tables["ws_ops"], tables["ws_channels"], G1)
    parents = [e for e in _nodes(elements) if e["classes"] == "partition"]
    assert [p["data"]["id"] for p in parents] == [f"partition-{p}" for p in range(6)]
    ops = [e for e in _nodes(elements) if "op" in e["classes"].split()]
    assert len(ops) == 60 and {o["data"]["parent"] for o in ops} == {p["data"]["id"] for p in parents}
    for parent in parents:
        members = [o for o in ops if o["data"]["parent"] == parent["data"]["id"]]
        ids = [o["data"]["op_id"] for o in members]
        assert ids == sorted(ids)  # top to bottom in program order
        assert [o["position"]["y"] for o in members] == sorted(o["position"]["y"] for o in members)
        assert len({o["position"]["x"] for o in members}) == 1
    assert ops[0]["data"]["label"].startswith("[")


def test_channel_graph_edge_classes(tables: dict[str, pl.DataFrame]) -> None:
    channels = tables["ws_channels"].filter(pl.col("group") == G1)
    edges = _edges(planner.channel_graph_elements(tables["ws_ops"], channels, G1))
    assert len(edges) == channels.height
    by_uid = {e["data"]["uid"]: e["classes"].split() for e in edges}
    for row in channels.iter_rows(named=True):
        classes = by_uid[row["uid"]]
        assert row["memory"].lower() in classes
        assert ("operand-d" in classes) == row["operand_d"]
    selectors = {rule["selector"] for rule in planner.CHANNEL_GRAPH_STYLESHEET}
    assert {"edge.smem", "edge.tmem", "edge.operand-d", "node.partition", ".faded"} <= selectors
    assert planner.CHANNEL_GRAPH_LAYOUT["name"] == "preset"


def test_channel_graph_highlight_and_marked_op(tables: dict[str, pl.DataFrame]) -> None:
    # A selected buffer's channels and their ends, and a tapped op, as the page's selection classes them.
    channels = tables["ws_channels"].filter(pl.col("group") == G1)
    chosen = channels.filter(pl.col("memory") == "TMEM")["uid"].head(2).to_list()
    ends = set(channels.filter(pl.col("uid").is_in(chosen)).select("src_node", "dst_node").to_numpy().ravel())
    elements = planner.channel_graph_elements(tables["ws_ops"], channels, G1)
    added = selection_classes(elements, graph_selection(chosen, ends, ["op_op_44"]))
    elements = [{**e, "classes": " ".join([e.get("classes", ""), *sorted(added.get(e["data"]["id"], ()))])}
                for e in elements]
    lit = {e["data"]["uid"] for e in _edges(elements) if "highlight" in e["classes"].split()}
    assert lit == set(chosen)
    assert all("faded" in e["classes"] for e in _edges(elements) if e["data"]["uid"] not in lit)
    lit_nodes = {e["data"]["node"] for e in _nodes(elements) if "highlight" in e["classes"].split()}
    assert lit_nodes == ends
    marked = [e for e in _nodes(elements) if "marked" in e["classes"].split()]
    assert [m["data"]["node"] for m in marked] == ["op_op_44"]


def test_channel_graph_replicates_multi_partition_ops() -> None:
    ops = pl.DataFrame({"group": ["g"] * 3, "op_id": [1, 2, 3], "node": ["op_op_1", "op_op_2", "op_op_3"],
                        "graph_order": [0, 1, 2], "partitions": [[0], [1, 2], [2]], "op": ["mma", "load", "x"],
                        "out": [None] * 3, "args": ["a", "b", "c"], "shape": [None] * 3, "loop_depth": [0] * 3},
                       schema_overrides={"partitions": pl.List(pl.Int32)})
    channels = pl.DataFrame({"group": ["g"], "uid": [0], "src_op": [1], "dst_op": [2], "src_node": ["op_op_1"],
                             "dst_node": ["op_op_2"], "memory": ["TMEM"], "buffer_id": [None], "name": ["acc"],
                             "operand_d": [True]}, schema_overrides={"buffer_id": pl.Int64})
    elements = planner.channel_graph_elements(ops, channels)
    copies = [e for e in _nodes(elements) if e["data"].get("node") == "op_op_2"]
    assert [c["data"]["parent"] for c in copies] == ["partition-1", "partition-2"]
    assert "replica" in copies[1]["classes"] and "replica" not in copies[0]["classes"]
    assert sorted(e["data"]["target"] for e in _edges(elements)) == ["op_op_2", "op_op_2@p2"]
    assert all({"tmem", "operand-d"} <= set(e["classes"].split()) for e in _edges(elements))


def test_no_op_id_graph_uses_insertion_order(tables: dict[str, pl.DataFrame]) -> None:
    elements = planner.channel_graph_elements(tables["ws_ops"], tables["ws_channels"], G2)
    ops = [e for e in _nodes(elements) if "op" in e["classes"].split()]
    expected = tables["ws_ops"].filter(pl.col("group") == G2).sort("graph_order")
    first_partition = [o["data"]["node"] for o in ops if o["data"]["partition"] == 0]
    assert first_partition == expected.filter(pl.col("partitions").list.contains(0))["node"].to_list()
    assert not ops[0]["data"]["label"].startswith("[")


def test_plain_dot_elements(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text('digraph { subgraph cluster_a { label="A"; subgraph cluster_b { x [fillcolor=red] } y }\n'
                    "  x -> y [color=blue]; y -> z }\n")
    undirected = tmp_path / "u.dot"
    undirected.write_text("graph { p -- q }\n")
    tables = registry.collect([path, undirected]).tables
    elements = planner.dot_graph_elements(tables["dot_nodes"], tables["dot_edges"], "g.dot")
    by_id = {e["data"]["id"]: e for e in elements}
    assert by_id["cluster:cluster_a/cluster_b"]["data"]["parent"] == "cluster:cluster_a"
    assert by_id["cluster:cluster_a"]["data"]["label"] == "A"
    assert by_id["x"]["data"]["parent"] == "cluster:cluster_a/cluster_b" and by_id["x"]["data"]["fill"] == "red"
    assert "parent" not in by_id["z"]["data"]
    edges = _edges(elements)
    assert [(e["data"]["source"], e["data"]["target"]) for e in edges] == [("x", "y"), ("y", "z")]
    assert edges[0]["data"]["colour"] == "blue"
    plain = planner.dot_graph_elements(tables["dot_nodes"], tables["dot_edges"], "u.dot")
    assert "undirected" in _edges(plain)[0]["classes"]
    assert planner.DOT_GRAPH_LAYOUT["name"] == "breadthfirst"


def test_timeline_repeats_the_op_axis_on_top_and_graph_hides_unreadable_labels(
        tables: dict[str, pl.DataFrame]) -> None:
    # The page shows a long timeline in a scroll box where the bottom axis starts out of view.
    figure = planner.liveness_timeline(tables["ws_buffers"], G1, "SMEM")
    assert figure.layout.xaxis2.side == "top" and figure.layout.xaxis2.matches == "x"
    assert any(t.xaxis == "x2" for t in figure.data)  # plotly draws an axis only when a trace uses it
    assert figure.layout.xaxis.title.text == "operation id"
    from dashboard.figures.planner_graph import CHANNEL_GRAPH_STYLESHEET, MIN_LABEL_PX

    labelled = [rule for rule in CHANNEL_GRAPH_STYLESHEET if "label" in rule["style"]]
    assert labelled and all(rule["style"]["min-zoomed-font-size"] == MIN_LABEL_PX for rule in labelled)
