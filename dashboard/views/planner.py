"""`/planner`: Triton warp-specialization memory planner: SMEM/TMEM liveness and channels.

URL state: run, group (one kernel compile, or one plain DOT graph), buffer
(`SMEM-3` / `TMEM-0`: a selected buffer), op (a marked operation id, or a node
id for dumps without op ids), partition (filters the channel graph).

Expensive views are cached per (run, group[, memory | partition]): the channel
graph's elements, the liveness timelines and the live-memory charts are drawn
once without any selection; a selection is then applied as a small change
(classes on the few graph elements concerned, set in the browser; layout shapes
sent as plotly Patches), which keeps a tap on a 2000-op graph interactive.
`figures(run, state)` applies the selection to copies: what the page first
draws and what the PNG export draws.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis import planner_liveness
from dashboard.analysis import planner_view as analysis
from dashboard.analysis.dot_sources import DotSourceMissing, element_details, plain_graph_source
from dashboard.figures.graphviz_svg import DrawResult, draw
from dashboard.figures.plain import plain
from dashboard.figures.planner import (
    CHANNEL_GRAPH_STYLESHEET,
    channel_graph_elements,
    live_memory_figure,
    liveness_timeline,
)
from dashboard.figures.planner_big_graph import BIG_GRAPH_STYLESHEET, flat_partitions, is_big
from dashboard.figures.planner_preview import packed, preview_spec
from dashboard.figures.planner_selection import graph_selection, selection_shapes
from dashboard.schema import empty
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.file_names import safe_file_stem
from dashboard.views.state import ViewState, param

MEMORIES = analysis.MEMORIES
# Export name of each chart -> the page's component id.
CHARTS = {"smem-liveness": "planner-smem-timeline", "tmem-liveness": "planner-tmem-timeline",
          "smem-live": "planner-smem-live", "tmem-live": "planner-tmem-live"}
PLANNER_TABLES = ("ws_buffers", "ws_ops", "ws_channels", "dot_nodes", "dot_edges")


def timeline_chart(memory: str) -> str:
    return f"{memory.lower()}-liveness"


def live_chart(memory: str) -> str:
    return f"{memory.lower()}-live"


@dataclass(frozen=True)
class PlannerData:
    """One run's planner tables and what the group picker offers."""

    run_id: str
    buffers: pl.DataFrame
    ops: pl.DataFrame
    channels: pl.DataFrame
    dot_nodes: pl.DataFrame
    dot_edges: pl.DataFrame
    summary: pl.DataFrame  # planner_liveness.group_summary: one row per planner group
    choices: tuple[analysis.GroupChoice, ...]
    notes: dict[str, list[str]]  # per group: what the collector says is missing from its dumps


@per_run(16)
def planner_data(run: Run) -> PlannerData:
    frames = {table: run.frame(table) if run.has(table) else empty(table) for table in PLANNER_TABLES}
    summary = planner_liveness.group_summary(frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"])
    # A debug log read with its IR dumps keeps the planner's groups under the compiler collector's name.
    groups_info = (run.info.metadata.get("triton_ws", {}).get("groups", [])
                   or run.info.metadata.get("triton_ir", {}).get("planner", {}).get("groups", []))
    kernels = {info["group"]: info["kernel"] for info in groups_info if info.get("kernel")}
    notes = {info["group"]: list(info.get("notes") or []) for info in groups_info}
    choices = analysis.group_choices(frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"],
                                     frames["dot_nodes"], summary, kernels)
    return PlannerData(run.id, frames["ws_buffers"], frames["ws_ops"], frames["ws_channels"], frames["dot_nodes"],
                       frames["dot_edges"], summary, tuple(choices), notes)


def partitions(run: Run, group: str) -> list[int]:
    """The partition numbers of a planner group (the partition filter's choices)."""
    return planner_liveness.partitions_of(planner_data(run).ops, group)


@dataclass(frozen=True)
class State(ViewState):
    group: str | None = param(params.text("group"))
    buffer: tuple[str, int] | None = param(params.tagged_index("buffer", MEMORIES))
    op: int | str | None = param(params.int_or_text("op"))
    partition: int | None = param(params.number("partition"))  # one the group has: `resolved`

    def resolved(self, run: Run) -> Self:
        """The group the URL names (else the first); of the rest, only what exists in that group.

        A stale link still opens, without the missing parts.
        """
        data = planner_data(run)
        choice = analysis.choose_group(list(data.choices), self.group)
        if choice is None:
            return type(self)()
        if choice.kind != "planner":
            return type(self)(group=choice.group)
        group = choice.group
        found = analysis.buffer_selection(data.buffers, data.channels, data.ops, group, self.buffer)
        marked = analysis.mark_op(data.buffers, data.channels, data.ops, group, self.op)
        return type(self)(group=group, buffer=self.buffer if found else None, op=self.op if marked else None,
                          partition=self.partition if self.partition in partitions(run, group) else None)


def choice(run: Run, state: State) -> analysis.GroupChoice | None:
    """The picked group with its kind (planner group or plain DOT graph); None for a run without groups."""
    return next((c for c in planner_data(run).choices if c.group == state.group), None)


# --- the views of a group, without a selection (never mutate: callers copy or patch) -----------------------------

@per_run(64)
def base_timeline(run: Run, group: str, memory: str) -> go.Figure:
    """The liveness timeline without a selection."""
    figure = liveness_timeline(planner_data(run).buffers, group, memory)
    # Selection is drawn by the page (colours), not by plotly's own point selection.
    figure.update_layout(clickmode="event")  # margins and legend: the figure's own (axis repeated on top)
    return figure


@per_run(64)
def base_live(run: Run, group: str, memory: str) -> go.Figure:
    figure = live_memory_figure(planner_data(run).buffers, group, memory)
    figure.update_layout(height=280, margin={"t": 64},
                         legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"})
    return figure


@per_run(64)
def graph_elements(run: Run, group: str, partition: int | None) -> list[dict[str, Any]]:
    """The channel graph (one partition and its boundary, or all); big graphs get flat partition boxes."""
    data = planner_data(run)
    ops, channels = analysis.partition_view(data.ops, data.channels, group, partition)
    elements = channel_graph_elements(ops, channels, group)
    return flat_partitions(elements) if is_big_graph(run, group) else elements


@per_run(64)
def is_big_graph(run: Run, group: str) -> bool:
    """Whether the group's whole graph is drawn the fast way (decided once per group, filters included)."""
    data = planner_data(run)
    return is_big(channel_graph_elements(data.ops, data.channels, group))


def graph_preview(run: Run, group: str, partition: int | None, selection: dict[str, Any] | None) -> dict[str, Any]:
    """The graph's drawing list (figures/planner_preview.py): what the page paints before Cytoscape starts."""
    return _graph_preview(run, group, partition, json.dumps(selection, sort_keys=True))


@per_run(64)
def _graph_preview(run: Run, group: str, partition: int | None, selection: str) -> dict[str, Any]:
    return packed(preview_spec(graph_elements(run, group, partition), graph_stylesheet(run, group),
                               json.loads(selection)))


def graph_stylesheet(run: Run, group: str) -> list[dict[str, Any]]:
    """The channel graph's stylesheet; big graphs skip labels too small to read at the current zoom."""
    return list(CHANNEL_GRAPH_STYLESHEET) + (BIG_GRAPH_STYLESHEET if is_big_graph(run, group) else [])


def file_stem(run_id: str, group: str) -> str:
    return safe_file_stem(f"{run_id}-{group}")


# --- the view of one selection -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SelectionView:
    """What a selected buffer and a marked op change in the views."""

    buffer: analysis.BufferSelection | None
    mark: analysis.OpMark | None
    graph: dict[str, Any]  # planner_selection.graph_selection: applied to the graph in the browser
    marked_op: int | None


def selection_view(run: Run, state: State) -> SelectionView:
    data, group = planner_data(run), state.group or ""
    buffer = analysis.buffer_selection(data.buffers, data.channels, data.ops, group, state.buffer)
    mark = analysis.mark_op(data.buffers, data.channels, data.ops, group, state.op)
    graph = graph_selection(buffer.uids if buffer else (), buffer.nodes if buffer else (),
                            mark.nodes if mark else (), fade=not is_big_graph(run, group))
    return SelectionView(buffer, mark, graph, mark.op_id if mark else None)


def _timeline_changes(run: Run, group: str, memory: str, selection: SelectionView) -> dict[str, Any]:
    """The shapes of one liveness timeline for a selection (empty figures get none)."""
    base = base_timeline(run, group, memory)
    if not base.data or base.data[0].type != "bar":
        return {}
    chosen = selection.buffer.buffer_index if selection.buffer and selection.buffer.memory == memory else None
    return {"shapes": selection_shapes(base, buffer_index=chosen, marked_op=selection.marked_op)}


def _live_changes(run: Run, group: str, memory: str, selection: SelectionView) -> dict[str, Any]:
    base = base_live(run, group, memory)
    if not base.data:
        return {}
    return {"shapes": selection_shapes(base, marked_op=selection.marked_op, label=False)}


def chart_marks(run: Run, group: str, selection: SelectionView) -> dict[str, dict[str, Any]]:
    """Per chart name (CHARTS): the shapes a selection draws (charts with nothing to mark are left out)."""
    marks = {}
    for memory in MEMORIES:
        for name, changes in ((timeline_chart(memory), _timeline_changes(run, group, memory, selection)),
                              (live_chart(memory), _live_changes(run, group, memory, selection))):
            if changes:
                marks[name] = changes
    return marks


@per_run(64)
def _plain_base(run: Run, group: str, memory: str, timeline: bool) -> dict[str, Any]:
    """A base chart as plain JSON values, which every state's figure shares (never mutate)."""
    return plain(base_timeline(run, group, memory) if timeline else base_live(run, group, memory))


def _apply(base: dict[str, Any], changes: dict[str, Any] | None) -> dict[str, Any]:
    if not changes or not changes["shapes"]:
        return base
    return {**base, "layout": {**base.get("layout", {}), "shapes": changes["shapes"]}}


def page_figures(run: Run, state: State) -> dict[str, dict[str, Any]]:
    """The two liveness timelines and the two live-memory charts of a planner group, selection marked, as
    the page sends them (plain dicts sharing their parts with cached ones: never mutate)."""
    picked = choice(run, state)
    if picked is None or picked.kind != "planner":
        return {}  # a plain DOT graph is drawn by Graphviz or cytoscape, not plotly
    marks = chart_marks(run, picked.group, selection_view(run, state))
    drawn = {}
    for memory in MEMORIES:
        for name, timeline in ((timeline_chart(memory), True), (live_chart(memory), False)):
            drawn[name] = _apply(_plain_base(run, picked.group, memory, timeline), marks.get(name))
    return drawn


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The page's figures as plotly figures of their own (the PNG export sizes them)."""
    return {name: go.Figure(figure) for name, figure in page_figures(run, state).items()}


# --- taps on the channel graph and plain DOT graphs --------------------------------------------------------------

def partition_of_node(node_id: Any) -> int | None:
    """The partition a compound node stands for (`partition-3` -> 3); None for any other node."""
    if isinstance(node_id, str) and node_id.startswith("partition-"):
        return State.from_query({"partition": node_id.removeprefix("partition-")}).partition
    return None


def buffer_of_channel(run: Run, group: str, uid: int) -> tuple[str, int] | None:
    data = planner_data(run)
    return analysis.buffer_of_channel(data.buffers, data.channels, group, uid)


def graphviz_drawing(run: Run, group: str) -> DrawResult:
    """Graphviz's drawing of a plain graph of the run (cached by `draw`), or why there is none."""
    try:
        source = plain_graph_source(run, group)
    except DotSourceMissing as exc:
        return DrawResult(None, str(exc))
    result = draw(source.text, source.index)
    if result.problem and not result.missing:
        return DrawResult(None, f"{source.path.name}: {result.problem}")
    return result


def picked_details(run: Run, group: str, kind: str, name: str) -> list[dict[str, Any]]:
    """The rows (name, label, attributes) of a node, cluster or edge clicked in a Graphviz drawing."""
    data = planner_data(run)
    return element_details(data.dot_nodes, data.dot_edges, group, kind, name)
