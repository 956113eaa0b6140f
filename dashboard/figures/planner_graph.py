"""dash-cytoscape elements for the planner's channel graph and for plain DOT graphs.

Pure functions returning lists of element dicts (no Dash import), plus the
recommended stylesheets and layouts.

Channel graph: each partition is a compound (parent) node holding its key ops
top to bottom in program order (insertion order for dumps without op ids), so
the layout is `preset` with positions computed here: deterministic, and no
extra cytoscape layout bundle is needed. An op the emitter declares in several
partitions (a consumer in each) gets one copy per partition; copies after the
first carry the `replica` class and `data.node` names the original node.
Channel edges: SMEM green (`smem`), TMEM red (`tmem`), MMA operand D bold
(`operand-d`). A selection adds `highlight`, `faded` and `marked` to the elements
concerned: in the browser (layouts/planner_scripts.py), and for the preview
painted before Cytoscape, figures/planner_preview.selection_classes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from dashboard.figures.theme import MEMORY_COLOURS

# The emitter's own partition palette, so the graph reads like the Graphviz rendering.
PARTITION_COLOURS = ("lightblue", "lightgreen", "lightsalmon", "lightyellow", "lightpink", "lightcyan",
                     "lavender", "wheat")
COLUMN_WIDTH = 330  # node width 210 + room for channel labels between partitions
ROW_HEIGHT = 64
NO_PARTITION = "partition-none"


def op_label(row: dict[str, Any]) -> str:
    """The op as the combined graph labels it: `[56] k = descriptor_load()` and shape / loop depth."""
    if row.get("op") is None:
        return str(row.get("node"))
    text = f"{row['op']}({row.get('args') or ''})"
    if row.get("out"):
        text = f"{row['out']} = {text}"
    if row.get("op_id") is not None:
        text = f"[{row['op_id']}] {text}"
    second = ", ".join(p for p in (row.get("shape"), f"L{row['loop_depth']}" if row.get("loop_depth") else None) if p)
    return f"{text}\n{second}" if second else text


def op_short_label(row: dict[str, Any]) -> str:
    """The op as it reads at the zoom that fits the graph: `[56] descriptor_load` (level of detail)."""
    if row.get("op") is None:
        return str(row.get("node"))
    return f"[{row['op_id']}] {row['op']}" if row.get("op_id") is not None else str(row["op"])


def _node_id(node: str, partition: int | None, first: bool) -> str:
    return node if first else f"{node}@p{partition}"


def _parent_id(partition: int | None) -> str:
    return NO_PARTITION if partition is None else f"partition-{partition}"


def channel_graph_elements(
    ops: pl.DataFrame,
    channels: pl.DataFrame,
    group: str | None = None,
) -> list[dict[str, Any]]:
    """Cytoscape elements: partitions (parents), ops (children, positioned), channel edges.

    Frames may hold several groups when `group` names the one to draw.
    """
    if group is not None:
        ops = ops.filter(pl.col("group") == group)
        channels = channels.filter(pl.col("group") == group)
    ops = ops.sort("graph_order")
    border = _endpoint_classes(channels)
    partitions = sorted({p for ps in ops["partitions"].to_list() for p in ps or []})
    columns = {p: i for i, p in enumerate(partitions)}
    elements: list[dict[str, Any]] = [
        {"data": {"id": _parent_id(p), "label": f"Partition {p}", "colour": PARTITION_COLOURS[p % 8]},
         "classes": "partition", "selectable": False}
        for p in partitions
    ]
    copies: dict[str, list[str]] = {}
    rows_used: dict[int | None, int] = {}
    for row in ops.iter_rows(named=True):
        homes: list[int | None] = list(row["partitions"] or []) or [None]
        if None in homes and NO_PARTITION not in {e["data"]["id"] for e in elements}:
            elements.append({"data": {"id": NO_PARTITION, "label": "no partition", "colour": "#f8f9fa"},
                             "classes": "partition", "selectable": False})
        for position, partition in enumerate(homes):
            element_id = _node_id(row["node"], partition, position == 0)
            copies.setdefault(row["node"], []).append(element_id)
            column = columns.get(partition, len(partitions))  # type: ignore[arg-type]
            level = rows_used.get(partition, 0)
            rows_used[partition] = level + 1
            classes = ["op", border.get(row["node"], "no-channel")]
            if position:
                classes.append("replica")
            elements.append({
                "data": {"id": element_id, "parent": _parent_id(partition), "label": op_label(row),
                         "short": op_short_label(row),
                         "node": row["node"], "op_id": row["op_id"], "partition": partition,
                         "op": row["op"]},
                "position": {"x": column * COLUMN_WIDTH, "y": level * ROW_HEIGHT},
                "classes": " ".join(classes),
            })
    for row in channels.sort("uid").iter_rows(named=True):
        sources = copies.get(row["src_node"])
        targets = copies.get(row["dst_node"])
        if not sources or not targets:
            continue  # an endpoint the combined graph does not show (a liveness-only channel)
        classes = [(row["memory"] or "unknown").lower()]
        if row["operand_d"]:
            classes.append("operand-d")
        label = f"ch{row['uid']}" + (f" B{row['buffer_id']}" if row["buffer_id"] is not None else "")
        label += f" {row['name']}" if row["name"] else ""
        # A consumer declared in several partitions consumes in each of them.
        for number, target in enumerate(targets):
            elements.append({
                "data": {"id": f"channel:{row['uid']}" + (f"-{number}" if number else ""), "source": sources[0],
                         "target": target, "label": label, "uid": row["uid"], "memory": row["memory"],
                         "operand_d": bool(row["operand_d"])},
                "classes": " ".join(classes),
            })
    return elements


def _endpoint_classes(channels: pl.DataFrame) -> dict[str, str]:
    """Border class per node as the emitter colours it: TMEM endpoint, else SMEM endpoint."""
    classes: dict[str, str] = {}
    for row in channels.iter_rows(named=True):
        for node in (row["src_node"], row["dst_node"]):
            if node is None:
                continue
            if row["memory"] == "TMEM" or classes.get(node) != "tmem-endpoint":
                classes[node] = "tmem-endpoint" if row["memory"] == "TMEM" else "smem-endpoint"
    return classes


# Labels drawn smaller than this on screen (px) are not drawn at all: at fit zoom a 9 px label shrinks to
# an unreadable smear; zooming in brings it back, and a tap names the op in the selection panel.
MIN_LABEL_PX = 8
SHORT_LABEL_PX = 18  # an op's short label (model px); assets/planner-lod.js grows it as the graph zooms out
CHANNEL_GRAPH_STYLESHEET: list[dict[str, Any]] = [
    {"selector": "node.partition", "style": {
        "label": "data(label)", "text-valign": "top", "text-halign": "center", "font-size": 24,  # named at fit zoom
        "font-weight": "bold", "background-color": "data(colour)", "background-opacity": 0.45,
        "border-color": "#0d6efd", "border-width": 1, "padding": 14, "min-zoomed-font-size": MIN_LABEL_PX}},
    # Level of detail (assets/planner-lod.js): the short label, large, at the zoom that fits the graph;
    # the full one (`detail`) once zoomed in far enough to read it.
    {"selector": "node.op", "style": {
        "label": "data(short)", "shape": "round-rectangle", "width": 210, "height": 40,
        "text-wrap": "wrap", "text-max-width": 204, "text-valign": "center", "font-size": SHORT_LABEL_PX,
        "font-weight": "bold", "background-color": "#ffffff", "border-width": 2, "border-color": "#212529",
        "min-zoomed-font-size": MIN_LABEL_PX}},
    {"selector": "node.op.detail", "style": {
        "label": "data(label)", "text-wrap": "wrap", "text-max-width": 200, "font-size": 9,
        "font-weight": "normal", "min-zoomed-font-size": MIN_LABEL_PX}},
    {"selector": "node.smem-endpoint", "style": {"border-color": MEMORY_COLOURS["SMEM"]}},
    {"selector": "node.tmem-endpoint", "style": {"border-color": MEMORY_COLOURS["TMEM"]}},
    {"selector": "node.replica", "style": {"border-style": "dashed"}},
    {"selector": "edge", "style": {
        "label": "data(label)", "font-size": 8, "curve-style": "bezier", "target-arrow-shape": "triangle",
        "arrow-scale": 0.8, "width": 1.5, "line-color": "#6c757d", "target-arrow-color": "#6c757d",
        "text-background-color": "#ffffff", "text-background-opacity": 0.8, "text-rotation": "autorotate",
        "min-zoomed-font-size": MIN_LABEL_PX}},
    {"selector": "edge.smem", "style": {"line-color": MEMORY_COLOURS["SMEM"],
                                        "target-arrow-color": MEMORY_COLOURS["SMEM"]}},
    {"selector": "edge.tmem", "style": {"line-color": MEMORY_COLOURS["TMEM"],
                                        "target-arrow-color": MEMORY_COLOURS["TMEM"]}},
    {"selector": "edge.operand-d", "style": {"width": 4}},
    {"selector": ".faded", "style": {"opacity": 0.18}},
    {"selector": "node.highlight", "style": {"border-width": 4, "border-color": "#6f42c1"}},
    {"selector": "edge.highlight", "style": {"width": 4, "z-index": 10}},
    {"selector": "edge.highlight.operand-d", "style": {"width": 6}},
    {"selector": "node.marked", "style": {"background-color": "#e2d9f3", "border-color": "#6f42c1",
                                          "border-width": 4}},
    {"selector": ":selected", "style": {"overlay-color": "#6f42c1", "overlay-opacity": 0.15}},
]

# Positions come with the elements (columns = partitions, rows = program order).
CHANNEL_GRAPH_LAYOUT: dict[str, Any] = {"name": "preset", "fit": True, "padding": 24}
# An automatic top-to-bottom alternative; needs `dash_cytoscape.load_extra_layouts()` on the page.
DAGRE_LAYOUT: dict[str, Any] = {"name": "dagre", "rankDir": "TB", "nodeSep": 24, "rankSep": 48, "fit": True}


_TAG = re.compile(r"<[^<>]*>")


def _plain_label(label: str | None, fallback: str) -> str:
    if label is None:
        return fallback
    if label.startswith("<") and label.endswith(">"):  # an HTML label: keep its text
        return " ".join(_TAG.sub(" ", label[1:-1]).split()) or fallback
    return label


def dot_graph_elements(dot_nodes: pl.DataFrame, dot_edges: pl.DataFrame, group: str | None = None
                       ) -> list[dict[str, Any]]:
    """Cytoscape elements for a plain DOT graph: clusters as compound parents, nodes, edges."""
    if group is not None:
        dot_nodes = dot_nodes.filter(pl.col("group") == group)
        dot_edges = dot_edges.filter(pl.col("group") == group)
    elements: list[dict[str, Any]] = []
    for row in dot_nodes.iter_rows(named=True):
        attrs = json.loads(row["attributes"] or "{}")
        is_cluster = row["kind"] == "cluster"
        element_id = f"cluster:{row['node']}" if is_cluster else row["node"]
        data: dict[str, Any] = {"id": element_id, "label": _plain_label(row["label"], row["node"].split("/")[-1])}
        if row["cluster"]:
            data["parent"] = f"cluster:{row['cluster']}"
        colour = attrs.get("fillcolor") or (attrs.get("color") if is_cluster else None)
        if colour:
            data["fill"] = colour
        elements.append({"data": data, "classes": "cluster" if is_cluster else "node"})
    for number, row in enumerate(dot_edges.iter_rows(named=True)):
        attrs = json.loads(row["attributes"] or "{}")
        classes = ["edge"]
        if attrs.get("style") == "invis":
            classes.append("invisible")
        if attrs.get("dir") == "none":
            classes.append("undirected")
        data = {"id": f"edge:{number}", "source": row["src"], "target": row["dst"], "label": row["label"] or ""}
        if attrs.get("color"):
            data["colour"] = attrs["color"]
        elements.append({"data": data, "classes": " ".join(classes)})
    return elements


DOT_GRAPH_STYLESHEET: list[dict[str, Any]] = [
    {"selector": "node.node", "style": {"label": "data(label)", "text-wrap": "wrap", "text-max-width": 180,
                                        "font-size": 10, "shape": "round-rectangle", "width": "label",
                                        "height": "label", "padding": 8, "background-color": "#e9ecef",
                                        "border-width": 1, "border-color": "#495057"}},
    {"selector": "node[fill]", "style": {"background-color": "data(fill)"}},
    {"selector": "node.cluster", "style": {"label": "data(label)", "text-valign": "top", "font-size": 11,
                                           "background-opacity": 0.25, "border-width": 1}},
    {"selector": "edge", "style": {"label": "data(label)", "font-size": 8, "curve-style": "bezier",
                                   "target-arrow-shape": "triangle", "width": 1.2}},
    {"selector": "edge[colour]", "style": {"line-color": "data(colour)", "target-arrow-color": "data(colour)"}},
    {"selector": "edge.undirected", "style": {"target-arrow-shape": "none"}},
    {"selector": "edge.invisible", "style": {"visibility": "hidden"}},
]
DOT_GRAPH_LAYOUT: dict[str, Any] = {"name": "breadthfirst", "directed": True, "spacingFactor": 1.1,
                                    "fit": True, "padding": 16}
