"""Channel graphs with thousands of ops: the same picture, drawn in a way cytoscape keeps fast.

Cytoscape restyles every child of a compound node on each frame it draws
(measured on a 2000-op graph: ~9,000 style updates per pan; a pan frame took
~280 ms with the partitions as compound nodes and ~80 ms without, and marking
one op ~310 ms against ~60 ms). Above `BIG_GRAPH_ELEMENTS` elements the page
therefore draws each partition as a plain box node behind its ops, sized and
placed from the ops' preset positions, so it reads exactly like the compound
layout: same colours, same "Partition N" label on top, same columns; tapping
the box still means "this partition". Labels too small to read at the current
zoom are skipped as well.
"""

from __future__ import annotations

from typing import Any

BIG_GRAPH_ELEMENTS = 400
OP_WIDTH, OP_HEIGHT = 210, 40  # as CHANNEL_GRAPH_STYLESHEET sizes node.op
BOX_PADDING = 14

# Appended to CHANNEL_GRAPH_STYLESHEET for big graphs.
BIG_GRAPH_STYLESHEET: list[dict[str, Any]] = [
    {"selector": "node.partition-box", "style": {
        "shape": "rectangle", "width": "data(width)", "height": "data(height)", "padding": 0, "z-index": 0,
        "z-index-compare": "manual"}},
    {"selector": "edge", "style": {"z-index": 1, "z-index-compare": "manual", "min-zoomed-font-size": 7}},
    {"selector": "edge.highlight", "style": {"z-index": 3}},
    {"selector": "node.op", "style": {"z-index": 2, "z-index-compare": "manual", "min-zoomed-font-size": 7}},
]


def is_big(elements: list[dict[str, Any]]) -> bool:
    return len(elements) >= BIG_GRAPH_ELEMENTS


def flat_partitions(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`channel_graph_elements` output with each compound partition turned into a box node behind its ops.

    Ops keep their ids, data (including `partition`) and positions; they only
    lose `parent`. A partition without ops keeps no box.
    """
    extents: dict[str, list[float]] = {}
    for element in elements:
        parent = element["data"].get("parent")
        position = element.get("position")
        if parent is None or position is None:
            continue
        x, y = position["x"], position["y"]
        box = extents.setdefault(parent, [x, y, x, y])
        box[0], box[1] = min(box[0], x), min(box[1], y)
        box[2], box[3] = max(box[2], x), max(box[3], y)
    flat: list[dict[str, Any]] = []
    for element in elements:
        data = element["data"]
        if "partition" in element.get("classes", "").split() and "source" not in data:
            if data["id"] not in extents:
                continue
            x1, y1, x2, y2 = extents[data["id"]]
            width = x2 - x1 + OP_WIDTH + 2 * BOX_PADDING
            height = y2 - y1 + OP_HEIGHT + 2 * BOX_PADDING
            flat.append({**element, "data": {**data, "width": width, "height": height},
                         "position": {"x": (x1 + x2) / 2, "y": (y1 + y2) / 2},
                         "classes": f"{element['classes']} partition-box"})
        elif "parent" in data:
            flat.append({**element, "data": {key: value for key, value in data.items() if key != "parent"}})
        else:
            flat.append(element)
    return flat
