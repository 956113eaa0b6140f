"""The neutral graph a DOT text describes, and its assembly from the parser's statements.

`grammar` turns text into statements (small tuples, see its parse callbacks); `Assembler` walks them
once into a `DotGraph`: graph attributes, clusters with their member nodes, nodes and edges with their
attributes, default attributes scoped as DOT scopes them. Nothing here knows Triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise


class DotSyntaxError(ValueError):
    """The text is not DOT; `line` is 1-based in the caller's numbering."""

    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line else message)


@dataclass
class DotNode:
    id: str
    attrs: dict[str, str]
    clusters: list[str]  # every cluster path the node is declared in, in declaration order
    line: int
    other_labels: list[tuple[int, str]] = field(default_factory=list)  # (line, label) of redeclarations
    # that changed the label: two different things under one id


@dataclass
class DotEdge:
    src: str
    dst: str
    attrs: dict[str, str]
    cluster: str | None  # innermost cluster path where the edge statement stands
    line: int


@dataclass
class DotCluster:
    path: str  # "cluster_a/cluster_b" for nested clusters
    name: str
    parent: str | None
    attrs: dict[str, str]
    nodes: list[str]  # member node ids in declaration order (a node may be in several clusters)
    line: int
    attr_lines: dict[str, int] = field(default_factory=dict)  # where `key=value;` statements stand


@dataclass
class DotGraph:
    name: str
    directed: bool
    strict: bool
    line: int
    attrs: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, DotNode] = field(default_factory=dict)  # insertion order = first declaration
    edges: list[DotEdge] = field(default_factory=list)
    clusters: dict[str, DotCluster] = field(default_factory=dict)


class Assembler:
    """Walks the statements once, scoping default attributes and cluster membership."""

    def __init__(self, graph: DotGraph, line_offset: int) -> None:
        self.graph = graph
        self.offset = line_offset

    def walk(self, stmts: list[tuple], cluster: str | None, node_defaults: dict[str, str],
             edge_defaults: dict[str, str]) -> list[str]:
        """Apply statements; returns the node ids mentioned, which an edge to a subgraph touches."""
        node_defaults, edge_defaults = dict(node_defaults), dict(edge_defaults)
        mentioned: list[str] = []
        for stmt in stmts:
            kind = stmt[0]
            if kind == "node":
                _, node_id, attrs, line = stmt
                self._declare(node_id, {**node_defaults, **attrs}, cluster, line)
                mentioned.append(node_id)
            elif kind == "edge":
                attrs = {**edge_defaults, **stmt[2]}
                mentioned.extend(self._edge(stmt[1], attrs, cluster, node_defaults, edge_defaults))
            elif kind == "subgraph":
                mentioned.extend(self._subgraph(stmt, cluster, node_defaults, edge_defaults))
            elif kind == "defaults":
                target, attrs = stmt[1], stmt[2]
                if target == "node":
                    node_defaults.update(attrs)
                elif target == "edge":
                    edge_defaults.update(attrs)
                else:
                    self._graph_attrs(cluster).update(attrs)
            else:  # "assign": `label="..."` inside a (sub)graph
                self._graph_attrs(cluster)[stmt[1]] = stmt[2]
                if cluster is not None:
                    self.graph.clusters[cluster].attr_lines[stmt[1]] = stmt[3] + self.offset
        return mentioned

    def _graph_attrs(self, cluster: str | None) -> dict[str, str]:
        return self.graph.attrs if cluster is None else self.graph.clusters[cluster].attrs

    def _declare(self, node_id: str, attrs: dict[str, str], cluster: str | None, line: int) -> None:
        node = self.graph.nodes.get(node_id)
        if node is None:
            node = DotNode(node_id, attrs, [], line + self.offset)
            self.graph.nodes[node_id] = node
        else:
            label = attrs.get("label")
            if label is not None and node.attrs.get("label") not in (None, label):
                node.other_labels.append((line + self.offset, label))
            node.attrs.update(attrs)
        if cluster is not None and cluster not in node.clusters:
            node.clusters.append(cluster)
            self.graph.clusters[cluster].nodes.append(node_id)

    def _subgraph(self, stmt: tuple, cluster: str | None, node_defaults: dict[str, str],
                  edge_defaults: dict[str, str]) -> list[str]:
        _, name, body, line = stmt
        inner = cluster
        # Only subgraphs named cluster* are drawn as boxes; the others just scope attributes.
        if name is not None and name.startswith("cluster"):
            inner = name if cluster is None else f"{cluster}/{name}"
            if inner not in self.graph.clusters:
                self.graph.clusters[inner] = DotCluster(inner, name, cluster, {}, [], line + self.offset)
        return self.walk(body, inner, node_defaults, edge_defaults)

    def _edge(self, chain: list[tuple], attrs: dict[str, str], cluster: str | None,
              node_defaults: dict[str, str], edge_defaults: dict[str, str]) -> list[str]:
        ends: list[tuple[list[str], int]] = []
        for part in chain:
            if part[0] == "subgraph":
                ends.append((self._subgraph(part, cluster, node_defaults, edge_defaults), part[3]))
            else:
                _, node_id, line = part
                if node_id not in self.graph.nodes:  # an edge declares the nodes it names
                    self._declare(node_id, dict(node_defaults), cluster, line)
                ends.append(([node_id], line))
        for (sources, line), (targets, _) in pairwise(ends):
            for src in sources:
                for dst in targets:
                    self.graph.edges.append(DotEdge(src, dst, dict(attrs), cluster, line + self.offset))
        return [node_id for ids, _ in ends for node_id in ids]
