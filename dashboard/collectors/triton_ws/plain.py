"""Any DOT graph that is not a planner dump, kept as plain `dot_nodes` / `dot_edges` rows.

Clusters become rows of `dot_nodes` with `kind="cluster"` (their `cluster`
column names the enclosing cluster), so nested boxes and their labels survive;
ordinary nodes have `kind="node"` and name the innermost cluster they were
first declared in (Graphviz draws a node declared in two clusters in the
first). Cluster paths join nested cluster names with "/".
"""

from __future__ import annotations

import json
from typing import Any

from dashboard.collectors.dot.graph import DotGraph

_TABLE_KEYS = ("label",)


def _remaining(attrs: dict[str, str]) -> str:
    return json.dumps({k: v for k, v in attrs.items() if k not in _TABLE_KEYS}, sort_keys=True)


def plain_rows(graph: DotGraph, group: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(dot_nodes rows, dot_edges rows) for one graph."""
    nodes: list[dict[str, Any]] = []
    for cluster in graph.clusters.values():
        nodes.append({
            "group": group,
            "kind": "cluster",
            "node": cluster.path,
            "label": cluster.attrs.get("label"),
            "cluster": cluster.parent,
            "attributes": _remaining(cluster.attrs),
        })
    for node in graph.nodes.values():
        nodes.append({
            "group": group,
            "kind": "node",
            "node": node.id,
            "label": node.attrs.get("label"),
            "cluster": node.clusters[0] if node.clusters else None,
            "attributes": _remaining(node.attrs),
        })
    edges: list[dict[str, Any]] = []
    for edge in graph.edges:
        attrs = dict(edge.attrs)
        if not graph.directed:
            attrs.setdefault("dir", "none")  # what Graphviz draws for an undirected graph
        edges.append({
            "group": group,
            "src": edge.src,
            "dst": edge.dst,
            "label": attrs.get("label"),
            "attributes": _remaining(attrs),
        })
    return nodes, edges
