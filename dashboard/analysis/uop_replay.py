"""One rewrite step's graphs, replayed as tinygrad's VIZ does (`viz/serve.py: get_full_rewrite`).

Graph 0 is the step's input (its sink rebuilt from the UOp table). Match k (before -> after, the
pattern's location) adds `before -> after` to the replacements and substitutes them into the current
graph: graph k. A bottom-up step substitutes into graph 0 every time (serve keeps its `next_sink`);
the others into the previous graph. A substitution tinygrad would fail (an infinite rewrite) gives a
REWRITE_ERROR graph and ends the replay, as serve's does.

Per match VIZ also shows what changed: the nodes of the replacement's sub-graph that are in the new
graph (highlighted), and the unified diff of the replaced sub-graph against its replacement, each
printed by `uop_text`. Graphs are computed up to the one asked for and kept, so stepping forward
through the matches costs one substitution a step, and a substitution visits only the nodes above
the replaced ones (`LiveGraph`).
"""

from __future__ import annotations

import difflib
import threading
import time
from dataclasses import dataclass

import polars as pl

from dashboard.analysis.uop_graph import LiveGraph, NodePool, RewriteError, UOpColumns, substitute, toposort
from dashboard.analysis.uop_text import uop_text


@dataclass(frozen=True)
class StepSpec:
    """What a step's replay needs from `rewrite_steps` / `rewrite_matches`."""

    sink: int
    matches: tuple[tuple[int, int], ...]  # (before, after) trace numbers, in match order
    bottom_up: bool = False
    walk: bool = False
    enter_calls: bool = False


@dataclass(frozen=True)
class MatchChange:
    """What match k changed: its two sides (nodes of the replay's pool) and the graph it gave."""

    before: int
    after: int
    graph: int
    error: str | None = None


class StepReplay:
    """The graphs of one step, each node in this replay's own pool (dropped with it)."""

    def __init__(self, table: UOpColumns, spec: StepSpec) -> None:
        self.table, self.spec = table, spec
        self.pool = NodePool()
        self.start = self.pool.from_trace(table, spec.sink)
        self.changes: list[MatchChange] = []
        self._current = self.start
        self._live = LiveGraph(self.pool, self.start)  # the graph the next match substitutes into
        self._replaces: dict[int, int] = {}
        self._stopped = False
        self._lock = threading.RLock()  # a cached replay may be asked for by two requests at once

    @property
    def complete(self) -> bool:
        return self._stopped or len(self.changes) == len(self.spec.matches)

    def graph_count(self) -> int:
        """Graphs this step has: its input and one per match (fewer when a match failed): replays them all."""
        self.advance(len(self.spec.matches))
        return 1 + len(self.changes)

    @property
    def replayed(self) -> int:
        """Graphs replayed so far (the input counts)."""
        return 1 + len(self.changes)

    def advance(self, upto: int, deadline: float | None = None) -> None:
        """Replay matches until graph `upto` exists, the replay stopped, or `time.monotonic()` passed `deadline`."""
        with self._lock:
            pool = self.pool
            while len(self.changes) < min(upto, len(self.spec.matches)) and not self._stopped:
                if deadline is not None and time.monotonic() > deadline:
                    return
                self._replay_next(pool)

    def _replay_next(self, pool: NodePool) -> None:
        before_trace, after_trace = self.spec.matches[len(self.changes)]
        before = pool.from_trace(self.table, before_trace)
        after = pool.from_trace(self.table, after_trace)
        self._replaces[before] = after
        error = None
        try:
            graph = substitute(pool, self._current, self._replaces, self.spec.walk, self.spec.enter_calls,
                               self._live)
        except RewriteError as exc:
            error = str(exc)
            graph = pool.node("REWRITE_ERROR", "dtypes.void", (), error, None)
            self._stopped = True
        self.changes.append(MatchChange(before, after, graph, error))
        if not self.spec.bottom_up and not self._stopped:
            self._current = graph
            self._live.replace_root(graph)

    def graph(self, index: int, deadline: float | None = None) -> int:
        """Graph `index` (0: the input; k: after match k), clamped to the graphs replayed (by the deadline)."""
        self.advance(index, deadline)
        index = max(0, min(index, len(self.changes)))
        return self.start if index == 0 else self.changes[index - 1].graph

    def change(self, index: int) -> MatchChange | None:
        """Match `index` (from 1) as replayed so far, None for graph 0 or a match not replayed (yet)."""
        return self.changes[index - 1] if 1 <= index <= len(self.changes) else None

    def changed_nodes(self, index: int) -> set[int]:
        """The nodes of match `index`'s replacement that are in its graph (serve's `change`)."""
        change = self.change(index)
        if change is None:
            return set()
        shown = set(toposort(self.pool, change.graph))
        return {node for node in toposort(self.pool, change.after) if node in shown}

    def diff(self, index: int) -> list[str]:
        """The unified diff of match `index`: the replaced sub-graph against its replacement."""
        change = self.change(index)
        if change is None:
            return []
        return list(difflib.unified_diff(uop_text(self.pool, change.before).splitlines(),
                                         uop_text(self.pool, change.after).splitlines(),
                                         "before", "after", lineterm=""))


def step_spec(steps: pl.DataFrame, matches: pl.DataFrame, rank: int, context: int, step: int) -> StepSpec | None:
    """A step's replay inputs from `rewrite_steps` / `rewrite_matches`; None when the run has no such step."""
    row = steps.filter((pl.col("rank") == rank) & (pl.col("context") == context) & (pl.col("step") == step))
    if row.is_empty() or row["sink"][0] is None:
        return None
    found = matches.filter((pl.col("rank") == rank) & (pl.col("context") == context) & (pl.col("step") == step)) \
        .sort("match")
    first = row.row(0, named=True)
    return StepSpec(first["sink"], tuple(zip(found["before"].to_list(), found["after"].to_list(), strict=True)),
                    bool(first["bottom_up"]), bool(first["walk"]), bool(first["enter_calls"]))
