"""What the `/planner` page shows for one view state: groups, a selected buffer, a marked op, a partition.

Pure polars over the canonical planner tables (`ws_buffers`, `ws_ops`,
`ws_channels`, `dot_nodes`). The page's URL state (`group`, `buffer` as
`SMEM-3`, `op` as an operation id or a node id such as `op_op_12345` for dumps
made without op ids, `partition`) is parsed by `views.planner.State`; the
functions here take the parsed values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from dashboard.analysis.planner_liveness import (
    CAPACITY,
    buffers_of_op,
    channels_of_buffer,
    live_buffers_at,
    ops_of_buffer,
    ops_of_partition,
    planner_groups,
    size_expr,
)

MEMORIES = ("SMEM", "TMEM")


# --- buffers ---------------------------------------------------------------------------------------------------

def buffer_key(memory: str, buffer_index: int) -> str:
    """A buffer as the URL names it: memory and dense index, e.g. `TMEM-2`."""
    return f"{memory}-{buffer_index}"


# --- groups -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupChoice:
    """One kernel compile (planner group) or one plain DOT graph, as the group picker lists it."""

    group: str
    kind: str  # "planner" or "dot"
    label: str


def group_choices(buffers: pl.DataFrame, ops: pl.DataFrame, channels: pl.DataFrame, dot_nodes: pl.DataFrame,
                  summary: pl.DataFrame | None = None, kernels: dict[str, str] | None = None) -> list[GroupChoice]:
    """Planner groups first (with their counts), then plain DOT graphs, each once."""
    choices: list[GroupChoice] = []
    stats = {row["group"]: row for row in summary.iter_rows(named=True)} if summary is not None else {}
    for group in planner_groups(buffers, ops, channels):
        row = stats.get(group)
        parts = [kernels.get(group)] if kernels and kernels.get(group) else []
        if row:
            parts.append(f"{row['ops']} ops, {row['partitions']} partitions, "
                         f"{row['smem_buffers']} SMEM / {row['tmem_buffers']} TMEM buffers")
        label = group + (f" — {' · '.join(parts)}" if parts else "")
        choices.append(GroupChoice(group, "planner", label))
    planner = {choice.group for choice in choices}
    if dot_nodes.height:
        for group in dot_nodes.select("group").unique(maintain_order=True)["group"].to_list():
            if group not in planner:
                count = dot_nodes.filter((pl.col("group") == group) & (pl.col("kind") == "node")).height
                choices.append(GroupChoice(group, "dot", f"{group} — plain graph, {count} nodes"))
    return choices


def choose_group(choices: list[GroupChoice], wanted: Any) -> GroupChoice | None:
    """The group the URL names when it exists, else the first one."""
    for choice in choices:
        if choice.group == wanted:
            return choice
    return choices[0] if choices else None


# --- selections ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BufferSelection:
    """A selected buffer and what it touches in the channel graph."""

    memory: str
    buffer_index: int
    row: dict[str, Any]
    uids: list[int] = field(default_factory=list)  # its channels
    nodes: list[str] = field(default_factory=list)  # producer / consumer ops of those channels
    ops: list[dict[str, Any]] = field(default_factory=list)  # those ops with their role


def buffer_selection(buffers: pl.DataFrame, channels: pl.DataFrame, ops: pl.DataFrame, group: str,
                     key: tuple[str, int] | None) -> BufferSelection | None:
    """The buffer `key` of `group` with its channels and endpoint ops; None when there is no such buffer."""
    if key is None:
        return None
    memory, index = key
    found = buffers.filter((pl.col("group") == group) & (pl.col("memory") == memory)
                           & (pl.col("buffer_index") == index))
    if found.is_empty():
        return None
    used = channels_of_buffer(buffers, channels, group, memory, index)
    ends = ops_of_buffer(buffers, channels, ops, group, memory, index)
    nodes = sorted(set(used["src_node"].drop_nulls().to_list()) | set(used["dst_node"].drop_nulls().to_list()))
    return BufferSelection(memory, index, found.row(0, named=True), used["uid"].to_list(), nodes,
                           ends.select("node", "op_id", "op", "role").to_dicts())


def buffer_of_channel(buffers: pl.DataFrame, channels: pl.DataFrame, group: str, uid: int) -> tuple[str, int] | None:
    """The buffer a channel goes through (a tapped edge -> the buffer to select), if the dumps say."""
    channel = channels.filter((pl.col("group") == group) & (pl.col("uid") == uid))
    memory = channel["memory"][0] if channel.height else None
    mine = buffers.filter((pl.col("group") == group) & pl.col("channels").list.contains(uid))
    if memory is not None:
        mine = mine.filter(pl.col("memory") == memory)
    if mine.is_empty():
        return None
    row = mine.sort("memory", "buffer_index").row(0, named=True)
    return row["memory"], row["buffer_index"]


@dataclass(frozen=True)
class OpMark:
    """A marked operation: where it sits on the timelines and which buffers are live there."""

    op_id: int | None  # None: the dump has no op ids, so the op cannot be placed on the timelines
    nodes: list[str]  # graph nodes of that op (none for an op id the graph does not show)
    label: str
    live: pl.DataFrame  # buffers live at op_id (both memories); empty without op id
    touched: pl.DataFrame  # buffers the op reads or writes through its channels


def mark_op(buffers: pl.DataFrame, channels: pl.DataFrame, ops: pl.DataFrame, group: str,
            op: int | str | None) -> OpMark | None:
    """Resolve an op reference (op id or node id) into what the page marks and lists."""
    if op is None:
        return None
    mine = ops.filter(pl.col("group") == group)
    found = mine.filter(pl.col("op_id") == op) if isinstance(op, int) else mine.filter(pl.col("node") == op)
    if isinstance(op, str) and found.is_empty():
        return None
    op_id = op if isinstance(op, int) else found["op_id"][0]
    nodes = found["node"].to_list()
    if found.height:
        row = found.row(0, named=True)
        label = f"{row['op']}" + (f" → {row['out']}" if row["out"] else "")
        label = (f"op {op_id}: " if op_id is not None else f"{row['node']}: ") + label
    else:
        label = f"op {op_id} (not a key op of the graph)"
    live = live_buffers_at(buffers, group, op_id) if op_id is not None else buffers.clear()
    touched = pl.concat([buffers_of_op(buffers, channels, group, node) for node in nodes]) if nodes else buffers.clear()
    return OpMark(op_id, nodes, label, live, touched.unique(["memory", "buffer_index"], maintain_order=True))


def live_totals(live: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Per memory: how many buffers are live, their size (SMEM bytes / TMEM columns) and the capacity."""
    totals = {}
    for memory in MEMORIES:
        mine = live.filter(pl.col("memory") == memory)
        size = int(mine.select(size_expr(memory).sum()).item() or 0) if mine.height else 0
        totals[memory] = {"count": mine.height, "size": size, "capacity": CAPACITY[memory]}
    return totals


# --- partitions ---------------------------------------------------------------------------------------------------

def partition_view(ops: pl.DataFrame, channels: pl.DataFrame, group: str,
                   partition: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ops and channels the graph shows for a partition filter.

    With a partition: its ops, the channels with an end in it, and the ops at
    the other end of those channels (shown in their own partitions, so a
    boundary channel still leads somewhere). Without one: everything.
    """
    mine_ops = ops.filter(pl.col("group") == group)
    mine_channels = channels.filter(pl.col("group") == group)
    if partition is None:
        return mine_ops, mine_channels
    inside = ops_of_partition(ops, group, partition)["node"]
    crossing = mine_channels.filter(pl.col("src_node").is_in(inside.implode())
                                    | pl.col("dst_node").is_in(inside.implode()))
    shown = pl.concat([inside, crossing["src_node"], crossing["dst_node"]]).drop_nulls().unique()
    return mine_ops.filter(pl.col("node").is_in(shown.implode())), crossing
