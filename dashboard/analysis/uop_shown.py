"""What of a UOp graph VIZ draws: labels, CONSTs folded into their users, hidden call bodies, a node bound.

As tinygrad's VIZ (`viz/serve.py: uop_to_json` and `js/worker.js: layoutUOp`, default toggles):
- a CONST (not the root), an empty STACK, a RESHAPE / EXPAND that only broadcasts a folded node and a
  STACK of CONSTs under a movement op or a PARAM are not drawn: each shows as a line of its user's
  label (`CONST1 2.0` = source 1 is the constant 2.0);
- a CALL's / FUNCTION's body (source 0) and a PROGRAM's SINK and LINEAR (sources 0 and 1) are folded
  away, with every node reachable only through them;
- a label is the op, its argument (wrapped at 80 characters, a SOURCE's at 200 and 30 lines), the
  dtype unless void, the folded sources and the tag.
Beyond VIZ: a graph with more nodes than the page's bound shows the nodes nearest the match's change
and the root (breadth first over edges both ways), with how many are left out and which shown nodes
have hidden neighbours, so "n more" can add the next ring.
"""

from __future__ import annotations

import re
import textwrap
from collections import deque
from dataclasses import dataclass, field

from dashboard.analysis.uop_graph import NodePool, toposort

MOVEMENT = frozenset({"RESHAPE", "EXPAND", "PERMUTE", "PAD", "SHRINK", "FLIP"})
_FOLDED_BODY = {"CALL": 1, "FUNCTION": 1, "PROGRAM": 2}  # op -> leading sources VIZ folds away
_FLOAT_DTYPES = frozenset({"half", "bfloat16", "float", "double", "weakfloat", "fp8e4m3", "fp8e5m2",
                           "fp8e4m3fnuz", "fp8e5m2fnuz", "float16", "float32", "float64"})
LABEL_WRAP, SOURCE_WRAP, SOURCE_LINES = 80, 200, 30
# Fields of a ParamArg at their defaults, which tinygrad's own repr leaves out (the label keeps the rest).
_PARAM_DEFAULTS = re.compile(r", (?:vmin_vmax|multiple_of|name|axis|device)=None|, addrspace=AddrSpace\.GLOBAL|"
                             r", volatile=False")
_BINARY = re.compile(r"^<(\d+) bytes [0-9a-f]+>$")  # a BINARY's argument: its size and digest; VIZ shows the size


@dataclass
class ShownGraph:
    """The nodes and edges to draw (pool node ids), and what the bound left out."""

    root: int
    nodes: list[int]  # in toposort order (sources first)
    edges: list[tuple[int, int, int]]  # (source, user, port)
    labels: dict[int, str]
    rank: dict[int, int]  # longest path to the root over every drawable node: 0 = the root's column
    changed: set[int] = field(default_factory=set)
    drawable: int = 0  # nodes VIZ would draw without the bound
    folded: int = 0  # nodes folded into a user's label or away with a call body
    cut: set[int] = field(default_factory=set)  # shown nodes with a neighbour left out by the bound

    @property
    def hidden(self) -> int:
        return self.drawable - len(self.nodes)


def _is_float(dtype: str) -> bool:
    return dtype.removeprefix("dtypes.").split(".")[0] in _FLOAT_DTYPES


def _value(pool: NodePool, node: int) -> str:
    """A CONST's value as VIZ prints it: `:g` for floats, else the argument."""
    arg = pool.arg[node]
    if arg is not None and _is_float(pool.dtype[node]):
        try:
            return f"{float(arg):g}"
        except ValueError:
            return arg
    return str(arg)


def excluded_nodes(pool: NodePool, order: list[int], root: int) -> set[int]:
    """The nodes VIZ folds into their users' labels (serve's `excluded`)."""
    excluded: set[int] = set()
    for node in order:
        op, src = pool.op[node], pool.src[node]
        if op == "CONST" and node != root:
            excluded.add(node)
        if op == "STACK" and not src:
            excluded.add(node)
        if op in ("RESHAPE", "EXPAND") and src and src[0] in excluded and node != root:
            excluded.add(node)
        if op in MOVEMENT or op == "PARAM":
            excluded.update(s for s in src if pool.op[s] == "STACK" and all(pool.op[c] == "CONST" for c in pool.src[s]))
    return excluded


def _folded_text(pool: NodePool, node: int) -> str:
    op = pool.op[node]
    if op == "CONST":
        return _value(pool, node)
    if op == "STACK":
        return "{" + ",".join(_value(pool, c) for c in pool.src[node]) + "}"
    return str(pool.arg[node])


def label(pool: NodePool, node: int, excluded: set[int]) -> str:
    op, arg, dtype, src = pool.op[node], pool.arg[node], pool.dtype[node], pool.src[node]
    text = op
    if arg is not None:
        shown = _value(pool, node) if op == "CONST" else _BINARY.sub(r"<\1 bytes>", arg).replace(":", "")
        if shown.startswith("ParamArg("):
            shown = _PARAM_DEFAULTS.sub("", shown)
        width = SOURCE_WRAP if op == "SOURCE" else LABEL_WRAP
        wrapped = [part for line in shown.splitlines() for part in (textwrap.wrap(line, width) or [""])]
        text += "\n" + "\n".join(wrapped or [""])
    if dtype != "dtypes.void":
        text += f"\n{dtype}"
    folded_from = src[:1] if op in ("STAGE", "INDEX") else (src if op != "END" else ())
    for index, source in enumerate(folded_from):
        if source in excluded:
            base = source
            while pool.op[base] in MOVEMENT and pool.src[base] and pool.src[base][0] in excluded:
                base = pool.src[base][0]
            text += f"\n{pool.op[base]}{index} {_folded_text(pool, base)}"
            if pool.src[base]:
                text += f" {pool.op[pool.src[base][0]]}"
    if op in ("CALL", "FUNCTION") and src:
        text += f"\n{pool.op[src[0]]}"
    if pool.tag[node] is not None:
        text += f"\ntag={pool.tag[node]}"
    if op == "SOURCE" and len(lines := text.split("\n")) > SOURCE_LINES + 10:
        text = "\n".join(lines[:SOURCE_LINES]) + "\n..."
    return text


def _drawable(pool: NodePool, root: int, excluded: set[int]) -> tuple[set[int], list[tuple[int, int, int]]]:
    """Nodes reachable from the root without passing a folded node or a folded call body, and their edges."""
    seen = {root}
    edges: list[tuple[int, int, int]] = []
    queue = deque([root])
    while queue:
        node = queue.popleft()
        skip = _FOLDED_BODY.get(pool.op[node], 0)
        for port, source in enumerate(pool.src[node]):
            if port < skip or source in excluded:
                continue
            edges.append((source, node, port))
            if source not in seen:
                seen.add(source)
                queue.append(source)
    return seen, edges


def _ranks(order: list[int], drawable: set[int], edges: list[tuple[int, int, int]], root: int) -> dict[int, int]:
    """Longest path from each node to the root (users before sources: reverse toposort)."""
    users_first = [node for node in reversed(order) if node in drawable]
    sources: dict[int, list[int]] = {}
    for source, user, _ in edges:
        sources.setdefault(user, []).append(source)
    rank = dict.fromkeys(users_first, 0)
    for node in users_first:
        for source in sources.get(node, ()):
            if rank[source] < rank[node] + 1:
                rank[source] = rank[node] + 1
    rank[root] = 0
    return rank


def _nearest(edges: list[tuple[int, int, int]], seeds: list[int], limit: int) -> list[int]:
    """Up to `limit` nodes, breadth first from the seeds over edges both ways."""
    neighbours: dict[int, list[int]] = {}
    for source, user, _ in edges:
        neighbours.setdefault(source, []).append(user)
        neighbours.setdefault(user, []).append(source)
    picked = dict.fromkeys(seeds[:limit])
    queue = deque(picked)
    while queue and len(picked) < limit:
        node = queue.popleft()
        for other in neighbours.get(node, ()):
            if other not in picked:
                picked[other] = None
                queue.append(other)
                if len(picked) >= limit:
                    break
    return list(picked)


def shown_graph(pool: NodePool, root: int, changed: set[int] | None = None, limit: int | None = None,
                replacement: int | None = None) -> ShownGraph:
    """The graph under `root` as VIZ draws it, bounded to `limit` nodes nearest the change and the root.

    The changed nodes are `changed`, or (serve's `change`) the nodes of the `replacement`'s sub-graph that
    are in this graph: computed here, so the graph is walked once."""
    order = toposort(pool, root)
    if replacement is not None:
        present = set(order)
        changed = {node for node in toposort(pool, replacement) if node in present}
    excluded = excluded_nodes(pool, order, root)
    drawable, edges = _drawable(pool, root, excluded)
    rank = _ranks(order, drawable, edges, root)
    changed = {node for node in (changed or set()) if node in drawable}
    keep = drawable
    if limit is not None and len(drawable) > limit:
        seeds = [node for node in order if node in changed] + [root]
        keep = set(_nearest(edges, seeds, max(limit, 1)))
    cut = {node for source, user, _ in edges for node, other in ((source, user), (user, source))
           if node in keep and other not in keep}
    nodes = [node for node in order if node in keep]
    return ShownGraph(root=root, nodes=nodes, edges=[e for e in edges if e[0] in keep and e[1] in keep],
                      labels={node: label(pool, node, excluded) for node in nodes},
                      rank={node: rank[node] for node in nodes}, changed=changed & keep,
                      drawable=len(drawable), folded=len(order) - len(drawable), cut=cut)
