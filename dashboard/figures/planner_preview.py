"""The channel graph as a drawing list: what the page paints at once, before Cytoscape has started.

Cytoscape takes ~130 ms of main-thread time to start on a warm load (two cores), as long as the page's four
plotly charts together; drawn first, it holds them back. `/planner` therefore draws its graph in two steps
(layouts/graph_preview.py): this drawing list, painted on a canvas by assets/graph-preview.js in a few ms,
then Cytoscape over it once the charts are drawn (AfterCharts), which takes over taps, zoom and exports.

The list is resolved from the very elements and stylesheet that Cytoscape gets, by the same rules
(`node` / `edge` / `.class` selectors in order, `data(...)` mappings; `:selected` only applies to a tap),
so both draw the same picture. Compound partitions are sized as Cytoscape sizes them: their children's
bounding boxes plus their padding. The selection (planner_selection.graph_selection) is
applied the way the page's clientside callback applies it to Cytoscape. Level of detail (which op label,
how big) depends on the zoom, which only the browser knows: each op carries its short and its detail
label, and the browser picks one with assets/planner-lod.js's rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Cytoscape's defaults for the properties drawn here (cytoscape.js style/properties.js).
_NODE_DEFAULTS: dict[str, Any] = {
    "shape": "ellipse", "width": 30, "height": 30, "background-color": "#999999", "background-opacity": 1,
    "border-width": 0, "border-color": "#000000", "border-style": "solid", "opacity": 1, "padding": 0,
    "label": "", "font-size": 16, "font-weight": "normal", "text-wrap": "none", "text-max-width": 9999,
    "text-valign": "top", "min-zoomed-font-size": 0,
}
_EDGE_DEFAULTS: dict[str, Any] = {
    "width": 3, "line-color": "#999999", "target-arrow-shape": "none", "target-arrow-color": "#999999",
    "arrow-scale": 1, "opacity": 1, "label": "", "font-size": 16, "font-weight": "normal", "text-wrap": "none",
    "text-max-width": 9999, "text-valign": "center", "min-zoomed-font-size": 0,
    "text-background-color": "#ffffff", "text-background-opacity": 0,
}


def _matches(selector: str, group: str, classes: set[str]) -> bool:
    """Whether a simple Cytoscape selector (`node.op.detail`, `edge`, `.faded`) selects the element."""
    if ":" in selector:  # a state (`:selected`): nothing is selected on a first draw
        return False
    kind, *wanted = selector.strip().split(".")
    return kind in ("", group) and all(name in classes for name in wanted)


def resolve_style(stylesheet: Iterable[dict[str, Any]], group: str, classes: Iterable[str],
                  data: dict[str, Any]) -> dict[str, Any]:
    """The element's style: defaults, then every matching rule in order, `data(key)` read from `data`."""
    return _mapped(_matched(tuple(stylesheet), group, frozenset(classes)), data)


def _matched(stylesheet: tuple[dict[str, Any], ...], group: str, classes: frozenset[str]) -> dict[str, Any]:
    style = dict(_NODE_DEFAULTS if group == "node" else _EDGE_DEFAULTS)
    for rule in stylesheet:
        if _matches(rule["selector"], group, classes):
            style.update(rule["style"])
    return style


def _mapped(style: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    return {key: data.get(value[5:-1]) if isinstance(value, str) and value.startswith("data(")
            and value.endswith(")") else value for key, value in style.items()}


class _Styles:
    """resolve_style for many elements: the rules are matched once per (group, classes)."""

    def __init__(self, stylesheet: list[dict[str, Any]]) -> None:
        self.stylesheet = tuple(stylesheet)
        self.matched: dict[tuple[str, frozenset[str]], dict[str, Any]] = {}

    def __call__(self, group: str, classes: set[str], data: dict[str, Any]) -> dict[str, Any]:
        key = (group, frozenset(classes))
        if key not in self.matched:
            self.matched[key] = _matched(self.stylesheet, *key)
        return _mapped(self.matched[key], data)


def selection_classes(elements: list[dict[str, Any]], selection: dict[str, Any] | None) -> dict[str, set[str]]:
    """Element id -> the classes the page's selection adds (layouts/planner_scripts.APPLY_SELECTION_JS)."""
    if not selection:
        return {}
    uids, lit, marked = set(selection.get("uids") or ()), set(selection.get("nodes") or ()), \
        set(selection.get("marked") or ())
    added: dict[str, set[str]] = {}
    ops = [e for e in elements if "op" in _classes(e)]
    edges = [e for e in elements if "source" in e["data"]]
    lit_edges = {e["data"]["id"] for e in edges if e["data"].get("uid") in uids}
    lit_ops = {e["data"]["id"] for e in ops if e["data"].get("node") in lit}
    for element_id in lit_edges | lit_ops:
        added.setdefault(element_id, set()).add("highlight")
    if selection.get("fade") and (lit_edges or lit_ops):
        for element in ops + edges:
            if element["data"]["id"] not in lit_edges | lit_ops:
                added.setdefault(element["data"]["id"], set()).add("faded")
    for element in ops:
        if element["data"].get("node") in marked:
            added.setdefault(element["data"]["id"], set()).add("marked")
    return added


def _classes(element: dict[str, Any]) -> set[str]:
    return set((element.get("classes") or "").split())


def _label(style: dict[str, Any]) -> dict[str, Any] | None:
    text = style.get("label")
    if text in (None, ""):
        return None
    return {"text": str(text), "size": float(style["font-size"]), "weight": str(style["font-weight"]),
            "wrap": style["text-wrap"] == "wrap", "max_width": float(style["text-max-width"]),
            "valign": style["text-valign"], "min_px": float(style["min-zoomed-font-size"])}


def _box(style: dict[str, Any], x: float, y: float, width: float, height: float) -> dict[str, Any]:
    return {"x": x, "y": y, "w": width, "h": height, "shape": style["shape"],
            "fill": style["background-color"], "fill_opacity": float(style["background-opacity"]),
            "border": style["border-color"], "border_width": float(style["border-width"]),
            "dashed": style["border-style"] == "dashed", "opacity": float(style["opacity"])}


def preview_spec(elements: list[dict[str, Any]], stylesheet: list[dict[str, Any]],
                 selection: dict[str, Any] | None = None, *, detail_class: str = "detail") -> dict[str, Any]:
    """The drawing list of a preset-positioned graph: `parents` (compound boxes), `nodes`, `edges`.

    Nodes and parents: centre, size, shape, fill, border, opacity, `label` (and for nodes with a
    `detail_class` rule, `detail`: the label that class gives). Edges: source and target node indexes,
    colour, width, arrow, opacity, label. Drawing order: parents, edges, nodes (Cytoscape's, here).
    """
    added = selection_classes(elements, selection)
    styles = _Styles(stylesheet)
    nodes: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    children: dict[str, list[int]] = {}
    parent_elements = {e["data"].get("parent") for e in elements if e["data"].get("parent")}
    for element in elements:
        data = element["data"]
        if "source" in data or data["id"] in parent_elements or element.get("position") is None:
            continue
        classes = _classes(element) | added.get(data["id"], set())
        style = styles("node", classes, data)
        position = element["position"]
        node = _box(style, position["x"], position["y"], float(style["width"]), float(style["height"]))
        node["label"] = _label(style)
        detailed = styles("node", classes | {detail_class}, data)
        if detailed != style:
            node["detail"] = _label(detailed)
        index[data["id"]] = len(nodes)
        nodes.append(node)
        if data.get("parent"):
            children.setdefault(data["parent"], []).append(len(nodes) - 1)
    parents = [_parent_box(element, styles, [nodes[i] for i in children[element["data"]["id"]]])
               for element in elements if element["data"]["id"] in children]
    edges = []
    for element in elements:
        data = element["data"]
        if "source" not in data or data["source"] not in index or data["target"] not in index:
            continue
        style = styles("edge", _classes(element) | added.get(data["id"], set()), data)
        edges.append({"s": index[data["source"]], "t": index[data["target"]], "colour": style["line-color"],
                      "width": float(style["width"]), "arrow": style["target-arrow-shape"] != "none",
                      "arrow_colour": style["target-arrow-color"], "arrow_scale": float(style["arrow-scale"]),
                      "opacity": float(style["opacity"]), "label": _label(style),
                      "label_background": style["text-background-color"],
                      "label_background_opacity": float(style["text-background-opacity"])})
    return {"parents": parents, "nodes": nodes, "edges": edges}


def bounds_margin(item: dict[str, Any]) -> float:
    """How far Cytoscape's bounding box of a node reaches past its body: half its border and 1 px
    (measured: a 210 x 40 body with a 2 px border spans 214 x 44; assets/graph-preview.js says the same)."""
    return item["border_width"] / 2 + 1


def _parent_box(element: dict[str, Any], styles: _Styles, members: list[dict[str, Any]]) -> dict[str, Any]:
    """A compound node as Cytoscape sizes it: its children's bounding boxes, plus its padding."""
    style = styles("node", _classes(element), element["data"])
    pad = float(style["padding"])
    x1 = min(m["x"] - m["w"] / 2 - bounds_margin(m) for m in members) - pad
    x2 = max(m["x"] + m["w"] / 2 + bounds_margin(m) for m in members) + pad
    y1 = min(m["y"] - m["h"] / 2 - bounds_margin(m) for m in members) - pad
    y2 = max(m["y"] + m["h"] / 2 + bounds_margin(m) for m in members) + pad
    box = _box(style, (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1)
    box["shape"] = "rectangle"  # Cytoscape draws a compound node's body as a rectangle of its extent
    box["label"] = _label(style)
    return box


_BOX_KEYS = ("shape", "fill", "fill_opacity", "border", "border_width", "dashed", "opacity")
_LABEL_KEYS = ("size", "weight", "wrap", "max_width", "valign", "min_px")
_EDGE_KEYS = ("colour", "width", "arrow", "arrow_colour", "arrow_scale", "opacity", "label_background",
              "label_background_opacity")


def packed(spec: dict[str, Any]) -> dict[str, Any]:
    """`preview_spec` as the page sends it: each distinct box, label and edge style once, elements as rows.

    A 2000-op graph's list is ~7x smaller this way (its ops share a handful of styles). Rows: parents and
    nodes `[x, y, w, h, box, text, label]` (nodes add `detail text, detail label`), edges
    `[source, target, style, text, label]`; `box`, `label`, `style` index `boxes`, `labels`, `edge_styles`,
    a missing label is null. assets/graph-preview.js unpacks it.
    """
    tables: dict[str, list[dict[str, Any]]] = {"boxes": [], "labels": [], "edge_styles": []}
    seen: dict[tuple[str, tuple[Any, ...]], int] = {}

    def index(table: str, keys: tuple[str, ...], item: dict[str, Any]) -> int:
        values = tuple(item[key] for key in keys)
        if (table, values) not in seen:
            seen[table, values] = len(tables[table])
            tables[table].append(dict(zip(keys, values, strict=True)))
        return seen[table, values]

    def label(item: dict[str, Any] | None) -> list[Any]:
        return [None, None] if item is None else [item["text"], index("labels", _LABEL_KEYS, item)]

    def box(item: dict[str, Any]) -> list[Any]:
        return [item["x"], item["y"], item["w"], item["h"], index("boxes", _BOX_KEYS, item), *label(item["label"])]

    return {
        **tables,
        "parents": [box(parent) for parent in spec["parents"]],
        "nodes": [box(node) + (label(node["detail"]) if "detail" in node else []) for node in spec["nodes"]],
        "edges": [[edge["s"], edge["t"], index("edge_styles", _EDGE_KEYS, edge), *label(edge["label"])]
                  for edge in spec["edges"]],
    }
