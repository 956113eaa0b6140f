"""`/compiler` for a tinygrad run: VIZ's rewrite views, Dash-free.

URL state: rank (a run of several VIZ pairs), ctx (a context: a kernel's codegen, a schedule, a JIT
capture), step (one graph_rewrite call of it), match (0 = the step's input graph, k = the graph after
its k-th match), nodes (how many UOps the graph draws; "n more" raises it). Each is kept only where
it exists in the run.

For a state: the context list and the chosen context's steps (depth-indented, as VIZ lists them);
the step's graph (`GraphView`: cytoscape elements laid out here, the nodes the match changed, the
pattern's location and the diff of its two sides) and the kernel's program (`ProgramView`: source,
linearized uops, disassembly, estimates). A replay that needs longer than REPLAY_BUDGET_S for one
request shows the furthest graph reached and says so; the page asks again until it is there.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Self

import polars as pl

from dashboard.analysis.uop_graph import NodePool
from dashboard.analysis.uop_shown import shown_graph
from dashboard.analysis.uop_text import linear_text, program_parts
from dashboard.figures.uop_graph import uop_graph_elements
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.state import ViewState, param
from dashboard.views.tinygrad_data import (
    pattern_source,
    program_disassembly,
    program_row,
    rewrite_tables,
    step_replay,
    uop_columns,
)

NODES_DEFAULT, NODES_STEP, NODES_MAX = 300, 300, 20_000
REPLAY_BUDGET_S = 2.0


@dataclass(frozen=True)
class State(ViewState):
    rank: int = param(params.number("rank", 0, low=0), 0)
    ctx: int | None = param(params.number("ctx", low=0))  # None: the first kernel
    step: int = param(params.number("step", 0, low=0), 0)
    match: int = param(params.number("match", 0, low=0), 0)
    nodes: int = param(params.number("nodes", NODES_DEFAULT, low=NODES_STEP, high=NODES_MAX), NODES_DEFAULT)

    def resolved(self, run: Run) -> Self:
        """Rank, context, step and match kept where the run has them (else the first kernel's first step)."""
        tables = rewrite_tables(run)
        rank = self.rank if self.rank in tables.ranks() else tables.ranks()[0]
        contexts = tables.contexts.filter(pl.col("rank") == rank)
        if contexts.is_empty():
            return self.replace(rank=rank, ctx=None, step=0, match=0)
        known = self.ctx is not None and self.ctx in contexts["context"].to_list()
        ctx = self.ctx if known else _first_kernel(contexts)
        steps = step_rows(run, rank, ctx)
        step = self.step if 0 <= self.step < len(steps) else 0
        matches = steps[step]["matches"] if steps else 0
        return self.replace(rank=rank, ctx=ctx, step=step, match=min(self.match, matches or 0))


def _first_kernel(contexts: pl.DataFrame) -> int:
    kernels = contexts.filter(pl.col("codegen") & (pl.col("steps") > 0))
    return int((kernels if kernels.height else contexts)["context"][0])


_ANSI = re.compile(r"\x1b\[([0-9;]*)m")
# tinygrad's `colored` (termcolor codes): 30-37 and their bright 90-97.
ANSI_COLOURS = {30: "#212529", 31: "#dc3545", 32: "#198754", 33: "#b58900", 34: "#0d6efd", 35: "#d63384",
                36: "#0aa2c0", 37: "#6c757d", 90: "#6c757d", 91: "#e35d6a", 92: "#20c997", 93: "#e0a800",
                94: "#3d8bfd", 95: "#de5c9d", 96: "#3dd5f3", 97: "#343a40"}


def ansi_segments(text: str) -> list[tuple[str, str | None]]:
    """A name tinygrad coloured for the terminal (a kernel's axis types) as (text, CSS colour) pieces."""
    segments: list[tuple[str, str | None]] = []
    colour: str | None = None
    position = 0
    for found in _ANSI.finditer(text):
        if found.start() > position:
            segments.append((text[position:found.start()], colour))
        codes = [int(code) for code in found.group(1).split(";") if code.isdigit()] or [0]
        colour = next((ANSI_COLOURS[code] for code in reversed(codes) if code in ANSI_COLOURS), None)
        position = found.end()
    if position < len(text):
        segments.append((text[position:], colour))
    return segments


def context_rows(run: Run, rank: int) -> list[dict[str, Any]]:
    """VIZ's left-hand list: every context of the rank in recording order."""
    contexts = rewrite_tables(run).contexts.filter(pl.col("rank") == rank)
    return contexts.select("context", "name", "display", "codegen", "kernel", "steps", "matches").to_dicts()


def step_rows(run: Run, rank: int, context: int | None) -> list[dict[str, Any]]:
    """The steps of one context: name, nesting depth, matches, where graph_rewrite was called."""
    if context is None:
        return []
    steps = rewrite_tables(run).steps
    return steps.filter((pl.col("rank") == rank) & (pl.col("context") == context)) \
        .select("step", "name", "depth", "matches", "file", "line").to_dicts()


@dataclass
class GraphView:
    """One graph of one step, ready to draw, and what the match that made it changed."""

    elements: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    match: int = 0  # the graph shown (0 = the input)
    matches: int = 0  # the step's matches
    replayed: int = 1  # graphs replayed so far
    pending: bool = False  # the graph asked for is not replayed yet: the page asks again
    shown: int = 0
    drawable: int = 0
    folded: int = 0
    changed: int = 0
    pattern: str | None = None  # `file:line` of the matched pattern
    pattern_line: str | None = None  # its source line, where the installed tinygrad is the file's release
    seconds: float | None = None  # how long the match took in tinygrad
    diff: list[str] = field(default_factory=list)
    error: str | None = None
    milliseconds: float = 0.0  # time this view took (replay, selection, layout)

    @property
    def hidden(self) -> int:
        return self.drawable - self.shown


def _step(run: Run, state: State) -> dict[str, Any] | None:
    steps = step_rows(run, state.rank, state.ctx)
    return steps[state.step] if 0 <= state.step < len(steps) else None


def _match_row(run: Run, state: State, index: int) -> dict[str, Any] | None:
    matches = rewrite_tables(run).matches
    found = matches.filter((pl.col("rank") == state.rank) & (pl.col("context") == state.ctx)
                           & (pl.col("step") == state.step) & (pl.col("match") == index - 1))
    return found.row(0, named=True) if found.height else None


def graph_view(run: Run, state: State, budget_s: float = REPLAY_BUDGET_S) -> GraphView:
    """The graph of `state` (replayed up to it within the budget), bounded to `state.nodes` UOps."""
    started = time.perf_counter()
    step = _step(run, state)
    replay = step_replay(run, state.rank, state.ctx, state.step) if step is not None and state.ctx is not None \
        else None
    if step is None or replay is None:
        return GraphView(title="(no step)")
    root = replay.graph(state.match, time.monotonic() + budget_s)
    shown_index = min(state.match, replay.replayed - 1)
    change = replay.change(shown_index)
    shown = shown_graph(replay.pool, root, limit=state.nodes, replacement=change.after if change else None)
    view = GraphView(elements=uop_graph_elements(shown), match=shown_index, matches=step["matches"] or 0,
                     replayed=replay.replayed, pending=shown_index < state.match, shown=len(shown.nodes),
                     drawable=shown.drawable, folded=shown.folded, changed=len(shown.changed))
    view.title = f"{step['name']} · " + (f"graph after match {shown_index:,} of {view.matches:,}" if shown_index
                                         else f"input graph ({view.matches:,} matches)")
    if change is not None:
        row = _match_row(run, state, shown_index)
        if row is not None:
            view.pattern = f"{row['file']}:{row['line']}" if row["file"] else None
            view.pattern_line = pattern_source(row["file"], row["line"], rewrite_tables(run).release)
            view.seconds = row["seconds"]
        view.diff = replay.diff(shown_index)
        view.error = change.error
    view.milliseconds = (time.perf_counter() - started) * 1000
    return view


@dataclass
class ProgramView:
    """A kernel context's program, as VIZ's "View Source", "View UOp List" and "View Disassembly" show it."""

    kernel: str | None = None
    source: str | None = None
    uops: str | None = None
    disassembly: str | None = None
    disassembly_note: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)  # (what, value) lines: sizes, estimates, opts


def program_view(run: Run, state: State) -> ProgramView | None:
    """The program of the state's context, None for a context that compiles no kernel."""
    if state.ctx is None:
        return None
    row = program_row(run, state.rank, state.ctx)
    if row is None:
        return None
    view = ProgramView(kernel=row["kernel"], source=row["source"])
    if row["program_trace"] is not None:
        pool = NodePool()  # a pool of its own: the program's nodes only
        parts = program_parts(pool, pool.from_trace(uop_columns(run, state.rank), row["program_trace"]))
        if "LINEAR" in parts:
            view.uops = linear_text(pool, parts["LINEAR"])
    disassembly = program_disassembly(run, state.rank, state.ctx)
    view.disassembly, view.disassembly_note = disassembly.text, disassembly.note
    for label, column in (("global size", "global_size"), ("local size", "local_size"),
                          ("renderer", "renderer"), ("device", "device"), ("linearized uops", "uop_count"),
                          ("applied opts", "applied_opts")):
        if row.get(column) is not None:
            view.facts.append((label, str(row[column])))
    for label, column in (("FLOPs", "ops"), ("bytes loaded/stored", "lds"), ("bytes of memory", "mem")):
        value = row.get(column) if row.get(column) is not None else row.get(f"{column}_expr")
        if value is not None:
            view.facts.append((label, f"{value:,}" if isinstance(value, int) else str(value)))
    return view
