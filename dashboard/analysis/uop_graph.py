"""tinygrad UOp graphs rebuilt from a run's UOp table, and tinygrad's `substitute` over them.

A rewrites.pkl stores every UOp once, as a row of `rewrite_uops` (trace number -> op, dtype, sources
as trace numbers, argument, tag); a step's graph is its sink's row followed through the sources.
tinygrad's VIZ server rebuilds the graphs the same way (`viz/serve.py: _reconstruct`) and replays a
step's matches with `UOp.substitute` (`uop/ops.py: graph_rewrite(bottom_up=True)` with the
replacements as the only pattern). This module does both without tinygrad:

- `UOpColumns`: one rank's UOp table as arrays, a row fetched only when a graph reaches it (the
  largest files hold a million UOps; a step's graph a few thousand);
- `NodePool`: nodes interned by their fields, as tinygrad's UOp cache makes structurally equal UOps
  one object: a node rebuilt by a substitution that equals an existing one *is* that one, which the
  next match's replacement relies on;
- `substitute`: `RewriteContext.unified_rewrite` (and `walk_rewrite` for `walk=True` steps) with a
  dict as the bottom-up pattern, line for line, iteratively; neither enters the body of a FUNCTION or
  of a CALL of a SINK / PROGRAM / LINEAR / COPY / CUSTOM_FUNCTION unless `enter_calls`.

One difference, on purpose: tinygrad re-derives the dtype of a rebuilt node whose sources changed
dtype (`_rebuild_dtype`, which needs tinygrad's dtype rules); a rebuilt node here keeps its dtype.
Graphs are compared with serve's own in tests/analysis/test_uop_replay_serve.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

# Call bodies substitute does not enter (tinygrad's UOp._OPAQUE_CALL_BODIES, 0.14).
OPAQUE_CALL_BODIES = frozenset({"SINK", "PROGRAM", "LINEAR", "COPY", "CUSTOM_FUNCTION"})
# tinygrad's REWRITE_STACK_LIMIT: a replay that needs a bigger stack is the error tinygrad raises.
REWRITE_STACK_LIMIT = 250_000
MISSING_OP = "MISSING"  # a source whose row the table lacks (left out as damaged at ingest)


class RewriteError(Exception):
    """What tinygrad's graph_rewrite raises as RuntimeError (serve shows a REWRITE_ERROR graph)."""


def _codes(series: pl.Series) -> tuple[np.ndarray, list[Any]]:
    """A column as small-integer codes and the distinct values they stand for (op and dtype names repeat)."""
    values = series.unique(maintain_order=True).to_list()
    lookup = pl.Series(values, dtype=series.dtype)
    codes = series.replace_strict(lookup, pl.Series(range(len(values)), dtype=pl.Int32),
                                  return_dtype=pl.Int32) if values else pl.Series([], dtype=pl.Int32)
    return codes.to_numpy(), values


def _strings(series: pl.Series) -> pa.Array:
    array = series.to_arrow()
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


class UOpColumns:
    """One rank's `rewrite_uops` rows, by trace number; each row read when a graph reaches it."""

    def __init__(self, frame: pl.DataFrame) -> None:
        frame = frame.select("trace", "op", "dtype", "arg", "src", "tag").sort("trace")
        self.size = frame.height
        self._trace = frame["trace"].to_numpy()
        self._first = int(self._trace[0]) if self.size else 0
        # tinygrad numbers UOps 0, 1, 2, ... : a row is then its trace number's offset.
        self._dense = self.size == 0 or int(self._trace[-1]) - self._first == self.size - 1
        self._op, self._op_names = _codes(frame["op"].fill_null(MISSING_OP))
        self._dtype, self._dtype_names = _codes(frame["dtype"].fill_null("?"))
        self._arg = _strings(frame["arg"])
        self._tag = _strings(frame["tag"])
        sources = frame["src"].to_arrow()
        sources = sources.combine_chunks() if isinstance(sources, pa.ChunkedArray) else sources
        self._offsets = sources.offsets.to_numpy()
        self._sources = sources.values.to_numpy(zero_copy_only=False)

    def row(self, trace: int) -> int | None:
        if self._dense:
            row = trace - self._first
            return row if 0 <= row < self.size else None
        row = int(np.searchsorted(self._trace, trace))
        return row if row < self.size and int(self._trace[row]) == trace else None

    def fields(self, row: int) -> tuple[str, str, tuple[int, ...], str | None, str | None]:
        """(op, dtype, source trace numbers, argument text, tag text) of one row."""
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return (self._op_names[self._op[row]], self._dtype_names[self._dtype[row]],
                tuple(int(s) for s in self._sources[start:end]), self._arg[row].as_py(), self._tag[row].as_py())


@dataclass
class NodePool:
    """Interned UOp nodes: equal (op, dtype, sources, argument, tag) is one node id, as in tinygrad."""

    op: list[str] = field(default_factory=list)
    dtype: list[str] = field(default_factory=list)
    src: list[tuple[int, ...]] = field(default_factory=list)
    arg: list[str | None] = field(default_factory=list)
    tag: list[str | None] = field(default_factory=list)
    trace: list[int | None] = field(default_factory=list)  # the trace number it was read as (None: rebuilt)
    _ids: dict[tuple[Any, ...], int] = field(default_factory=dict)
    _by_trace: dict[int, int] = field(default_factory=dict)

    def node(self, op: str, dtype: str, src: tuple[int, ...], arg: str | None, tag: str | None,
             trace: int | None = None) -> int:
        key = (op, dtype, src, arg, tag)
        found = self._ids.get(key)
        if found is not None:
            return found
        self._ids[key] = number = len(self.op)
        self.op.append(op)
        self.dtype.append(dtype)
        self.src.append(src)
        self.arg.append(arg)
        self.tag.append(tag)
        self.trace.append(trace)
        return number

    def __len__(self) -> int:
        return len(self.op)

    def from_trace(self, table: UOpColumns, trace: int) -> int:
        """The node a trace number stands for with all its sources (serve's `_reconstruct`, iteratively).

        A source always has a smaller trace number than its user (tinygrad numbers sources first), so
        a row naming a later or equal one is damaged and stands alone, which also rules out cycles.
        """
        memo = self._by_trace
        if trace in memo:
            return memo[trace]
        stack = [trace]
        while stack:
            current = stack[-1]
            if current in memo:
                stack.pop()
                continue
            row = table.row(current)
            if row is None:
                memo[current] = self.node(MISSING_OP, "?", (), f"trace {current} is not in the UOp table", None,
                                          current)
                stack.pop()
                continue
            op, dtype, sources, arg, tag = table.fields(row)
            if any(source >= current for source in sources):
                sources = ()
                arg = f"damaged row: a source numbered after trace {current}"
            pending = [source for source in sources if source not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            memo[current] = self.node(op, dtype, tuple(memo[source] for source in sources), arg, tag, current)
        return memo[trace]

    def opaque_call(self, node: int) -> bool:
        """A FUNCTION, or a CALL of a body substitute must not enter."""
        op = self.op[node]
        src = self.src[node]
        return op == "FUNCTION" or (op == "CALL" and bool(src) and self.op[src[0]] in OPAQUE_CALL_BODIES)


class LiveGraph:
    """The nodes of one graph with each node's users, kept current as substitutions replace its root.

    A substitution changes only the nodes above a replaced one: the users of the keys present in the
    graph, up to the root. Knowing them (`affected`), `substitute` takes every other node of the graph
    as it is, which tinygrad's walk would conclude after visiting it: a match then costs the nodes it
    changes instead of the whole graph (7,500 nodes x 1,900 matches in the largest step measured).
    Nodes no longer reachable after a replacement are dropped by counting their users.
    """

    def __init__(self, pool: NodePool, root: int) -> None:
        self.pool = pool
        self.root = root
        self.users: dict[int, dict[int, int]] = {}
        self._add(root)

    def __contains__(self, node: int) -> bool:
        return node in self.users

    def __len__(self) -> int:
        return len(self.users)

    def _add(self, root: int) -> None:
        users, sources_of = self.users, self.pool.src
        if root in users:
            return
        users[root] = {}
        fresh, stack = [], [root]
        while stack:
            node = stack.pop()
            fresh.append(node)
            for source in sources_of[node]:
                if source not in users:
                    users[source] = {}
                    stack.append(source)
        for node in fresh:
            for source in sources_of[node]:
                counts = users[source]
                counts[node] = counts.get(node, 0) + 1

    def replace_root(self, root: int) -> None:
        """The graph is now the one under `root`: add its new nodes, drop those no longer reachable."""
        old = self.root
        if root == old:
            return
        self._add(root)
        self.root = root
        users = self.users
        dead = [old] if not users[old] else []
        while dead:
            node = dead.pop()
            del users[node]
            for source in set(self.pool.src[node]):
                counts = users[source]
                del counts[node]
                if not counts and source != root:
                    dead.append(source)

    def affected(self, keys: Iterable[int]) -> set[int]:
        """The keys present in the graph and every node above them."""
        users = self.users
        found = {key for key in keys if key in users}
        stack = list(found)
        while stack:
            for user in users[stack.pop()]:
                if user not in found:
                    found.add(user)
                    stack.append(user)
        return found


def toposort(pool: NodePool, root: int, enter_calls: bool = True) -> list[int]:
    """Sources before users, each node once (what tinygrad's `UOp.toposort` gives, as a set; the order within
    is a depth-first one, not necessarily tinygrad's). A node's id on the stack means "enter it", its
    complement (`~id`, negative) "its sources are done"."""
    state: dict[int, bool] = {}  # node -> done
    order: list[int] = []
    sources_of, ops = pool.src, pool.op
    stack = [root]
    while stack:
        node = stack.pop()
        if node >= 0:
            if node in state:
                continue
            state[node] = False
            stack.append(~node)
            sources = sources_of[node]
            if not enter_calls and ops[node] in ("CALL", "FUNCTION"):
                sources = sources[1:]
            stack.extend([source for source in sources if source not in state])
        elif not state[~node]:
            state[~node] = True
            order.append(~node)
    return order


def substitute(pool: NodePool, root: int, replaces: dict[int, int], walk: bool = False,
               enter_calls: bool = False, live: LiveGraph | None = None) -> int:
    """`root.substitute(replaces, walk=walk, enter_calls=enter_calls)`; RewriteError where tinygrad raises.

    With `live` (the graph under `root` and its users), a node of that graph with no replaced node
    under it is taken as it is without a visit: the same result, in time proportional to the change.
    """
    replaces = {key: value for key, value in replaces.items() if key != value}
    if not replaces:
        return root
    settled = _Settled(live, replaces)
    return _walk_rewrite(pool, root, replaces, enter_calls, settled) if walk else \
        _unified_rewrite(pool, root, replaces, enter_calls, settled)


class _Settled:
    """Which nodes a substitution may take as they are: in the live graph and above no replaced node."""

    def __init__(self, live: LiveGraph | None, replaces: dict[int, int]) -> None:
        self.users = live.users if live is not None else {}
        self.affected = live.affected(replaces) if live is not None else set()




def _rebuilt(pool: NodePool, node: int, sources: tuple[int, ...]) -> int:
    return pool.node(pool.op[node], pool.dtype[node], sources, pool.arg[node], pool.tag[node])


def _walk_rewrite(pool: NodePool, root: int, replaces: dict[int, int], enter_calls: bool, settled: _Settled) -> int:
    """A single pass: a replaced node is taken as it is, never entered (tinygrad's `walk_rewrite`)."""
    replace: dict[int, int] = {}
    stack: list[tuple[int, bool]] = [(root, False)]
    live, affected = settled.users, settled.affected
    while stack:
        node, processed = stack.pop()
        if node in replace:
            continue
        if not processed:
            if node in live and node not in affected:
                replace[node] = node
                continue
            found = replaces.get(node)
            if found is not None:
                replace[node] = found
                continue
            stack.append((node, True))
            if not enter_calls and pool.opaque_call(node):
                body = pool.src[node][0]
                replace[body] = body
            stack.extend((source, False) for source in reversed(pool.src[node]) if source not in replace)
        else:
            sources = tuple(replace.get(source, source) for source in pool.src[node])
            replace[node] = _rebuilt(pool, node, sources) if sources != pool.src[node] else node
    return replace.get(root, root)


def _unified_rewrite(pool: NodePool, root: int, replaces: dict[int, int], enter_calls: bool,
                     settled: _Settled) -> int:
    """tinygrad's `unified_rewrite` with the replacements as its bottom-up pattern: follow them to a fixed
    point, rewrite the sources, rebuild when they changed, and send a rebuilt node through it all again.
    A settled source is resolved to itself where it would be pushed (the result is the same in any order)."""
    replace: dict[int, int] = {}
    stack: deque[tuple[int, int, int]] = deque([(root, 0, root)])
    on_stack = {root}
    waitlist: dict[int, list[tuple[int, int, int]]] = {}
    sources_of, live, affected = pool.src, settled.users, settled.affected
    lookup, push = replaces.get, stack.append
    while stack:
        if len(stack) > REWRITE_STACK_LIMIT:
            raise RewriteError("infinite loop in graph_rewrite (stack too big)")
        node, stage, new = stack.pop()
        if node in replace:
            continue
        if stage == 0:
            if node in live and node not in affected:
                replace[node] = node
                if node in waitlist:
                    stack.extend(waitlist.pop(node))
                continue
            test = lookup(node)
            if test is not None:
                seen = {node}
                while test is not None:
                    if test in seen:
                        raise RewriteError("infinite loop in fixed_point_rewrite")
                    seen.add(test)
                    new, test = test, lookup(test)
            push((node, 1, new))
            if not enter_calls and pool.opaque_call(new):
                body = sources_of[new][0]
                replace[body] = body
            for source in reversed(sources_of[new]):
                if source in on_stack:
                    continue
                on_stack.add(source)
                if source in live and source not in affected and source not in replace:
                    replace[source] = source
                else:
                    push((source, 0, source))
        elif stage == 1:
            rewritten: list[int] = []
            for source in sources_of[new]:
                found = replace.get(source)
                if found is None:
                    waitlist.setdefault(source, []).append((node, 1, new))
                    break
                rewritten.append(found)
            else:
                sources = tuple(rewritten)
                if sources == sources_of[new]:
                    replace[node] = new
                    if node in waitlist:
                        stack.extend(waitlist.pop(node))
                    continue
                again = _rebuilt(pool, new, sources)
                push((node, 2, again))
                push((again, 0, again))
        else:
            found = replace.get(new)
            if found is None:
                waitlist.setdefault(new, []).append((node, 2, new))
            else:
                replace[node] = found
                if node in waitlist:
                    stack.extend(waitlist.pop(node))
    if root not in replace:
        raise RewriteError("graph_rewrite left the root unresolved")
    return replace[root]
