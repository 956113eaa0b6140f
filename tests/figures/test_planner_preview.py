"""The channel graph's drawing list (figures/planner_preview.py): what /planner paints before Cytoscape."""

from __future__ import annotations

import pytest

from dashboard.collectors import registry
from dashboard.demo import ws_dumps
from dashboard.figures import planner
from dashboard.figures.planner_big_graph import BIG_GRAPH_STYLESHEET, flat_partitions
from dashboard.figures.planner_preview import bounds_margin, packed, preview_spec, resolve_style
from dashboard.figures.planner_selection import graph_selection
from dashboard.figures.theme import MEMORY_COLOURS

G1 = "ws#1"


@pytest.fixture(scope="module")
def elements(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    tables = registry.collect(ws_dumps.write(tmp_path_factory.mktemp("demo") / "ws")).tables
    return planner.channel_graph_elements(tables["ws_ops"], tables["ws_channels"], G1)


def _ops(elements: list[dict]) -> list[dict]:
    return [e for e in elements if "op" in (e.get("classes") or "").split()]


def _edges(elements: list[dict]) -> list[dict]:
    return [e for e in elements if "source" in e["data"]]


def test_styles_follow_the_stylesheet_in_order_with_data_mappings() -> None:
    sheet = [{"selector": "node", "style": {"background-color": "data(colour)", "width": 10}},
             {"selector": "node.op", "style": {"width": 20}},
             {"selector": ".faded", "style": {"opacity": 0.2}},
             {"selector": "node.op.detail", "style": {"font-size": 9}},
             {"selector": ":selected", "style": {"opacity": 0.9}},
             {"selector": "edge", "style": {"width": 7}}]
    style = resolve_style(sheet, "node", {"op", "faded"}, {"colour": "#123456"})
    assert (style["background-color"], style["width"], style["opacity"], style["font-size"]) == ("#123456", 20, 0.2, 16)
    assert resolve_style(sheet, "node", {"op", "detail"}, {})["font-size"] == 9
    assert resolve_style(sheet, "node", set(), {})["width"] == 10  # `node.op` needs the class
    assert resolve_style(sheet, "edge", {"faded"}, {})["width"] == 7  # `node` rules never reach an edge
    assert resolve_style(sheet, "edge", {"faded"}, {})["opacity"] == 0.2  # a bare class reaches both


def test_every_op_and_channel_is_drawn_with_the_stylesheets_colours(elements: list[dict]) -> None:
    spec = preview_spec(elements, planner.CHANNEL_GRAPH_STYLESHEET)
    ops, edges = _ops(elements), _edges(elements)
    assert len(spec["nodes"]) == len(ops) and len(spec["edges"]) == len(edges)
    for op, node in zip(ops, spec["nodes"], strict=True):
        assert (node["x"], node["y"], node["w"], node["h"]) == (op["position"]["x"], op["position"]["y"], 210, 40)
        classes = op["classes"].split()
        expected = (MEMORY_COLOURS["TMEM"] if "tmem-endpoint" in classes else
                    MEMORY_COLOURS["SMEM"] if "smem-endpoint" in classes else "#212529")
        assert node["border"] == expected and node["shape"] == "round-rectangle"
        assert node["label"]["text"] == op["data"]["short"] and node["detail"]["text"] == op["data"]["label"]
        assert node["label"]["size"] > node["detail"]["size"]  # the short label reads at fit zoom
    ids = [op["data"]["id"] for op in ops]
    for edge, drawn in zip(edges, spec["edges"], strict=True):
        assert (ids[drawn["s"]], ids[drawn["t"]]) == (edge["data"]["source"], edge["data"]["target"])
        memory = edge["data"]["memory"]
        assert drawn["colour"] == MEMORY_COLOURS[memory] and drawn["arrow"]
        assert drawn["width"] == (4 if edge["data"]["operand_d"] else 1.5)


def test_partitions_hold_their_ops_as_cytoscape_sizes_compound_nodes(elements: list[dict]) -> None:
    spec = preview_spec(elements, planner.CHANNEL_GRAPH_STYLESHEET)
    partitions = [e for e in elements if e.get("classes") == "partition"]
    assert [p["label"]["text"] for p in spec["parents"]] == [p["data"]["label"] for p in partitions]
    for parent, box in zip(partitions, spec["parents"], strict=True):
        members = [n for n, op in zip(spec["nodes"], _ops(elements), strict=True)
                   if op["data"]["parent"] == parent["data"]["id"]]
        # Children's bounding boxes (body, half the border, 1 px) plus the partition's 14 px padding.
        top = min(m["y"] - m["h"] / 2 - bounds_margin(m) for m in members) - 14
        left = min(m["x"] - m["w"] / 2 - bounds_margin(m) for m in members) - 14
        assert (box["y"] - box["h"] / 2, box["x"] - box["w"] / 2) == pytest.approx((top, left))
        assert box["fill"] == parent["data"]["colour"] and box["fill_opacity"] == 0.45
        assert box["label"]["valign"] == "top"
    assert bounds_margin({"border_width": 2}) == 2  # 210 x 40 with a 2 px border: 214 x 44, as Cytoscape measures


def test_the_selection_fades_and_lights_what_the_page_would(elements: list[dict]) -> None:
    tmem = [e for e in _edges(elements) if e["data"]["memory"] == "TMEM"][:2]
    uids = {e["data"]["uid"] for e in tmem}
    ends = {e["data"]["source"] for e in tmem} | {e["data"]["target"] for e in tmem}
    lit_nodes = {op["data"]["node"] for op in _ops(elements) if op["data"]["id"] in ends}
    marked = _ops(elements)[0]["data"]["node"]
    spec = preview_spec(elements, planner.CHANNEL_GRAPH_STYLESHEET, graph_selection(uids, lit_nodes, [marked]))
    for edge, drawn in zip(_edges(elements), spec["edges"], strict=True):
        lit = edge["data"]["uid"] in uids
        assert drawn["opacity"] == (1 if lit else 0.18)
        assert drawn["width"] >= 4 if lit else drawn["width"] in (1.5, 4)
    for op, node in zip(_ops(elements), spec["nodes"], strict=True):
        if op["data"]["node"] == marked:
            assert (node["fill"], node["border"]) == ("#e2d9f3", "#6f42c1")
        elif op["data"]["node"] in lit_nodes:
            assert (node["border"], node["border_width"], node["opacity"]) == ("#6f42c1", 4, 1)
        else:
            assert node["opacity"] == 0.18
    unfaded = preview_spec(elements, planner.CHANNEL_GRAPH_STYLESHEET, graph_selection(uids, lit_nodes, fade=False))
    assert {node["opacity"] for node in unfaded["nodes"]} == {1}


def test_a_big_graphs_flat_partition_boxes_are_drawn_behind_their_ops(elements: list[dict]) -> None:
    sheet = planner.CHANNEL_GRAPH_STYLESHEET + BIG_GRAPH_STYLESHEET
    flat = flat_partitions(elements)
    spec = preview_spec(flat, sheet)
    boxes = [n for n in spec["nodes"] if n["shape"] == "rectangle"]
    assert spec["parents"] == [] and len(boxes) == 6
    assert all(box["label"]["text"].startswith("Partition ") for box in boxes)
    drawn_ops = [n for n in spec["nodes"] if n["shape"] == "round-rectangle"]
    assert len(drawn_ops) == len(_ops(elements))
    for box in boxes:  # each box holds a column of ops
        inside = [n for n in drawn_ops if abs(n["x"] - box["x"]) < 1e-9]
        assert inside and all(abs(n["y"] - box["y"]) <= box["h"] / 2 for n in inside)


def _unpacked(wire: dict) -> dict:
    """What assets/graph-preview.js's unpack makes of the packed list."""
    def label(text: str | None, style: int | None) -> dict | None:
        return None if style is None else {"text": text, **wire["labels"][style]}

    def box(row: list) -> dict:
        return {"x": row[0], "y": row[1], "w": row[2], "h": row[3], **wire["boxes"][row[4]], "label": label(*row[5:7])}

    nodes = [{**box(row), **({"detail": label(*row[7:9])} if len(row) > 7 else {})} for row in wire["nodes"]]
    edges = [{"s": row[0], "t": row[1], **wire["edge_styles"][row[2]], "label": label(*row[3:5])}
             for row in wire["edges"]]
    return {"parents": [box(row) for row in wire["parents"]], "nodes": nodes, "edges": edges}


def test_the_packed_list_holds_each_style_once_and_unpacks_to_the_same_drawing(elements: list[dict]) -> None:
    spec = preview_spec(elements, planner.CHANNEL_GRAPH_STYLESHEET, graph_selection({0}, {"op_op_44"}, ["op_op_44"]))
    wire = packed(spec)
    assert _unpacked(wire) == spec
    for table in ("boxes", "labels", "edge_styles"):
        rows = [tuple(sorted(item.items())) for item in wire[table]]
        assert len(rows) == len(set(rows)) < 20  # a few styles shared by 60 ops and their channels
    assert packed({"parents": [], "nodes": [], "edges": []})["nodes"] == []


def test_edges_to_elements_the_graph_lacks_are_left_out() -> None:
    graph = [{"data": {"id": "a"}, "position": {"x": 0, "y": 0}, "classes": "op"},
             {"data": {"id": "e", "source": "a", "target": "gone"}, "classes": "smem"}]
    spec = preview_spec(graph, planner.CHANNEL_GRAPH_STYLESHEET)
    assert len(spec["nodes"]) == 1 and spec["edges"] == []
    assert preview_spec([], planner.CHANNEL_GRAPH_STYLESHEET) == {"parents": [], "nodes": [], "edges": []}


def test_the_page_sends_the_preview_with_the_graph(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The layout of /planner holds the preview, its fit as the graph's layout, and the graph after the charts."""
    from dashboard.ingest.pipeline import ingest_paths
    from dashboard.layouts import planner as layout
    from dashboard.store import RunStore
    from dashboard.views import planner as view

    store = RunStore(tmp_path_factory.mktemp("store"))
    run = store.open(ingest_paths(store, ws_dumps.write(tmp_path_factory.mktemp("ws") / "ws"), name="ws"))
    state = view.State(group=G1)
    found = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("GraphPreview", "AfterCharts", "Cytoscape"):
                found.setdefault(node["type"], node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    import json

    import plotly

    walk(json.loads(json.dumps(layout.group_body(run, state), cls=plotly.utils.PlotlyJSONEncoder)))
    preview = found["GraphPreview"]["props"]
    assert preview["graph_id"] == layout.GRAPH_ID
    assert preview["fit"] == {"padding": planner.CHANNEL_GRAPH_LAYOUT["padding"], "min_zoom": 0.02, "max_zoom": 4}
    assert preview["spec"] == view.graph_preview(run, G1, None, view.selection_view(run, state).graph)
    assert preview["style"] == found["Cytoscape"]["props"]["style"]
    assert found["AfterCharts"]["props"]["children"]["type"] == "Cytoscape"
    assert len(preview["spec"]["nodes"]) == len([e for e in view.graph_elements(run, G1, None)
                                                 if "op" in e.get("classes", "").split()])
