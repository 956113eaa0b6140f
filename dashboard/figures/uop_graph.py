"""dash-cytoscape elements for a tinygrad UOp graph, laid out here, left to right as VIZ draws it.

Sources sit left of their users and the root at the right (VIZ: dagre, `rankdir: LR`). Positions
are computed here (a `preset` layout): a node's column is its longest path to the root, so every
edge points right; within a column nodes follow the mean row of their users, one sweep from the
root. That is linear in the nodes shown, deterministic, and needs no extra cytoscape bundle; only
the step's graph shown is laid out. Colours per op are VIZ's (`viz/serve.py: uops_colors`); the
nodes a match changed carry `changed` (a thick orange frame, as VIZ frames them), and nodes with a
neighbour the page's bound left out carry `cut` (a dashed frame: "n more" shows them).
"""

from __future__ import annotations

from typing import Any

from dashboard.analysis.uop_shown import MOVEMENT, ShownGraph

ALU = frozenset({"EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "NEG", "TRUNC", "ADD", "MUL", "CDIV", "MAX", "CMOD",
                 "CMPLT", "CMPNE", "CMPEQ", "XOR", "SHL", "SHR", "OR", "AND", "THREEFRY", "SUB", "FDIV", "POW",
                 "FLOORDIV", "FLOORMOD", "WHERE", "MULACC", "IDIV", "MOD"})
# tinygrad 0.14's uops_colors, by op name (an op a release lacks simply never occurs).
OP_COLOURS: dict[str, str] = {
    **dict.fromkeys(MOVEMENT, "#D8F9E4"), **dict.fromkeys(ALU, "#ffffc0"),
    "LOAD": "#ffc0c0", "STORE": "#87CEEB", "CONST": "#e0e0e0", "REDUCE": "#FF5B5B", "RANGE": "#c8a0e0",
    "BARRIER": "#ff8080", "IF": "#c8b0c0", "SPECIAL": "#c0c0ff", "INDEX": "#CEF9B7", "STACK": "#D8F9E4",
    "WMMA": "#efefc0", "UNSHARD": "#f6ccff", "INS": "#eec4ff", "THREEFRY": "#ffff80", "BUFFER": "#B0BDFF",
    "GETADDR": "#9DB1F0", "COPY": "#a040a0", "CUSTOM_FUNCTION": "#bf71b6", "CALL": "#00B7C8",
    "FUNCTION": "#C07788", "PARAM": "#14686F", "SOURCE": "#c0c0c0", "BINARY": "#404040", "LINEAR": "#7DF4FF",
    "ALLREDUCE": "#ff40a0", "MSELECT": "#d040a0", "MSTACK": "#d040a0", "CONTIGUOUS": "#FFC14D",
    "STAGE": "#AC640D", "REWRITE_ERROR": "#1a1b26", "AFTER": "#8A7866", "END": "#524C46",
}
DEFAULT_COLOUR = "#ffffff"
# Dark fills get white text.
_DARK = frozenset({"#14686F", "#404040", "#a040a0", "#1a1b26", "#524C46", "#8A7866", "#AC640D", "#d040a0",
                   "#C07788", "#00B7C8", "#bf71b6"})
CHAR_WIDTH, LINE_HEIGHT, PADDING = 6.2, 13.0, 8.0
COLUMN_GAP, ROW_GAP = 60.0, 14.0
MAX_LABEL_CHARS = 80


def node_size(label: str) -> tuple[float, float]:
    lines = label.split("\n")
    width = min(max(len(line) for line in lines), MAX_LABEL_CHARS) * CHAR_WIDTH + 2 * PADDING
    return max(width, 40.0), len(lines) * LINE_HEIGHT + 2 * PADDING


def layout(shown: ShownGraph) -> dict[int, tuple[float, float]]:
    """Node -> (x, y) of its centre: columns by rank (the root rightmost), rows by the users' mean row."""
    sizes = {node: node_size(shown.labels[node]) for node in shown.nodes}
    columns: dict[int, list[int]] = {}
    for node in shown.nodes:
        columns.setdefault(shown.rank[node], []).append(node)
    users: dict[int, list[int]] = {}
    for source, user, _ in shown.edges:
        users.setdefault(source, []).append(user)
    order_in_column: dict[int, float] = {}
    for rank in sorted(columns):
        nodes = columns[rank]
        keyed = []
        for position, node in enumerate(nodes):
            placed = [order_in_column[user] for user in users.get(node, ()) if user in order_in_column]
            keyed.append((sum(placed) / len(placed) if placed else float(position), position, node))
        keyed.sort()
        columns[rank] = [node for _, _, node in keyed]
        for index, node in enumerate(columns[rank]):
            order_in_column[node] = float(index)
    positions: dict[int, tuple[float, float]] = {}
    right = 0.0
    for rank in sorted(columns):  # the root's column first, each next one to its left
        nodes = columns[rank]
        width = max(sizes[node][0] for node in nodes)
        total = sum(sizes[node][1] for node in nodes) + ROW_GAP * (len(nodes) - 1)
        y = -total / 2
        for node in nodes:
            height = sizes[node][1]
            positions[node] = (right - width / 2, y + height / 2)
            y += height + ROW_GAP
        right -= width + COLUMN_GAP
    return positions


def uop_graph_elements(shown: ShownGraph) -> list[dict[str, Any]]:
    """Cytoscape nodes (label, colour, size, position) and edges (source -> user, the port as label)."""
    positions = layout(shown)
    ops = {node: shown.labels[node].split("\n", 1)[0] for node in shown.nodes}
    elements: list[dict[str, Any]] = []
    for node in shown.nodes:
        colour = OP_COLOURS.get(ops[node], DEFAULT_COLOUR)
        width, height = node_size(shown.labels[node])
        classes = ["uop"]
        if node in shown.changed:
            classes.append("changed")
        if node in shown.cut:
            classes.append("cut")
        if colour in _DARK:
            classes.append("dark")
        x, y = positions[node]
        elements.append({"data": {"id": f"u{node}", "label": shown.labels[node], "colour": colour, "op": ops[node],
                                  "w": width, "h": height},
                         "position": {"x": round(x, 1), "y": round(y, 1)}, "classes": " ".join(classes)})
    counts: dict[tuple[int, int], int] = {}
    for source, user, _ in shown.edges:
        counts[(source, user)] = counts.get((source, user), 0) + 1
    for number, (source, user, port) in enumerate(shown.edges):
        # VIZ labels an edge with its port, or with how many times the user takes the source.
        text = f"×{counts[(source, user)]}" if counts[(source, user)] > 1 else str(port)
        elements.append({"data": {"id": f"e{number}", "source": f"u{source}", "target": f"u{user}", "label": text},
                         "classes": "changed" if source in shown.changed and user in shown.changed else ""})
    return elements


UOP_GRAPH_STYLESHEET: list[dict[str, Any]] = [
    {"selector": "node.uop", "style": {
        "shape": "round-rectangle", "label": "data(label)", "text-wrap": "wrap", "text-valign": "center",
        "text-halign": "center", "font-family": "monospace", "font-size": 10, "width": "data(w)", "height": "data(h)",
        "background-color": "data(colour)", "border-width": 1, "border-color": "#6c757d", "text-justification": "left",
        "min-zoomed-font-size": 6}},
    {"selector": "node.dark", "style": {"color": "#ffffff"}},
    {"selector": "node.changed", "style": {"border-width": 5, "border-color": "#fd7e14"}},
    {"selector": "node.cut", "style": {"border-style": "dashed", "border-width": 2, "border-color": "#6f42c1"}},
    {"selector": "node.changed.cut", "style": {"border-width": 5, "border-color": "#fd7e14"}},
    {"selector": "edge", "style": {
        "curve-style": "bezier", "target-arrow-shape": "triangle", "width": 1, "line-color": "#adb5bd",
        "target-arrow-color": "#adb5bd", "label": "data(label)", "font-size": 8, "color": "#6c757d",
        "min-zoomed-font-size": 8}},
    {"selector": "edge.changed", "style": {"line-color": "#fd7e14", "target-arrow-color": "#fd7e14", "width": 2}},
    {"selector": ":selected", "style": {"overlay-color": "#0d6efd", "overlay-opacity": 0.15}},
]
UOP_GRAPH_LAYOUT: dict[str, Any] = {"name": "preset", "fit": True, "padding": 20, "animate": False}
