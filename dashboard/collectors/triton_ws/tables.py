"""One kernel compile's planner graphs merged into `ws_buffers`, `ws_ops`, `ws_channels` rows.

The three graphs of a compile share channel uids and operation ids, never
names. Channels come from the combined graph's edges (the only graph with all
of them, guard channels included); the liveness graphs add what the combined
graph lacks (op ids when it was dumped without them, channels of a group whose
combined graph is missing) and are checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dashboard.collectors.triton_ws.semantics import Interpretation


@dataclass
class GroupRows:
    buffers: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    channels: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # facts about the group (shown with it)
    problems: list[str] = field(default_factory=list)  # inconsistencies (reported as warnings)
    has_op_ids: bool = False


_BUFFER_KEYS = ("memory", "buffer_index", "name", "buffer_id", "bytes", "rows", "cols", "start_op", "end_op",
                "channels", "operand_d")
_CHANNEL_KEYS = ("uid", "src_op", "dst_op", "src_node", "dst_node", "memory", "buffer_id", "name", "operand_d")


def group_rows(group: str, graphs: list[Interpretation]) -> GroupRows:
    """Merge the interpretations of one compile's graphs (any subset of smem / combined / tmem)."""
    rows = GroupRows()
    by_kind = {graph.kind: graph for graph in graphs}
    combined = by_kind.get("combined")
    for kind in ("smem", "tmem"):
        graph = by_kind.get(kind)
        if graph is None:
            continue
        if graph.empty_message:
            rows.notes.append(f"{kind.upper()} liveness: {graph.empty_message}")
        rows.buffers.extend({"group": group, **{k: b.get(k) for k in _BUFFER_KEYS}} for b in graph.buffers)
    if combined is not None:
        rows.ops = _ordered_ops(group, combined.ops)
        rows.has_op_ids = any(op.get("op_id") is not None for op in combined.ops)
    liveness_channels = [c for kind in ("smem", "tmem") if kind in by_kind for c in by_kind[kind].channels]
    rows.channels = _merged_channels(group, combined, liveness_channels, rows)
    rows.has_op_ids = rows.has_op_ids or any(c["src_op"] is not None for c in rows.channels)
    _describe_missing(by_kind, rows)
    return rows


def _ordered_ops(group: str, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # With op ids, program order is the id order; without, the emitter's insertion order is all there is.
    order = sorted(range(len(ops)), key=lambda i: (ops[i].get("op_id") is None, ops[i].get("op_id") or 0, i))
    return [
        {"group": group, "graph_order": position, "op_id": None, "op": None, "out": None, "args": None,
         "shape": None, **ops[index]}
        for position, index in enumerate(order)
    ]


def _merged_channels(group: str, combined: Interpretation | None, liveness: list[dict[str, Any]],
                     rows: GroupRows) -> list[dict[str, Any]]:
    by_uid: dict[int, dict[str, Any]] = {}
    for edge in combined.edges if combined is not None else []:
        if edge["uid"] in by_uid:
            rows.problems.append(f"{group}: channel ch{edge['uid']} has two edges in the combined graph; "
                                 "the first is kept")
            continue
        by_uid[edge["uid"]] = {"group": group, **edge}
    node_of_op = {op["op_id"]: op["node"] for op in rows.ops if op.get("op_id") is not None}
    missing = []
    for channel in liveness:
        uid = channel["uid"]
        row = by_uid.get(uid)
        if row is None:
            if combined is not None:
                missing.append(f"ch{uid}")
            by_uid[uid] = {
                "group": group, **{k: channel.get(k) for k in _CHANNEL_KEYS},
                "src_node": node_of_op.get(channel["src_op"]), "dst_node": node_of_op.get(channel["dst_op"]),
                "buffer_id": None,  # the combined graph's buffer.id is the only one channels carry
            }
            continue
        for end in ("src_op", "dst_op"):
            if row[end] is None:
                row[end] = channel[end]
            elif channel[end] is not None and channel[end] != row[end]:
                rows.problems.append(f"{group}: ch{uid} {end.split('_')[0]} op is {channel[end]} in the "
                                     f"liveness graph but {row[end]} in the combined graph")
        if row["memory"] is None:
            row["memory"] = channel["memory"]
        elif row["memory"] != channel["memory"]:
            rows.problems.append(f"{group}: ch{uid} is {row['memory']} in the combined graph but sits in "
                                 f"the {channel['memory']} liveness graph")
    if missing:
        rows.problems.append(f"{group}: {', '.join(missing)} appear in a liveness graph but not in the "
                             "combined graph (files of different compiles grouped together?)")
    return [by_uid[uid] for uid in sorted(by_uid)]


def _describe_missing(by_kind: dict[str, Interpretation], rows: GroupRows) -> None:
    if "smem" not in by_kind:
        rows.notes.append("no SMEM liveness graph (SMEM allocator 1, the default since 2026-06, writes none)")
    if "combined" not in by_kind:
        rows.problems.append("no combined graph: the group is incomplete (the compile stopped between dumps?)")
    if "tmem" not in by_kind:
        rows.notes.append("no TMEM liveness graph (incomplete group, or TMEM planned by the plan search)")
    if "combined" in by_kind and not rows.has_op_ids:
        rows.notes.append("no operation ids (dumped without TRITON_LLVM_DEBUG_ONLY=nvgpu-ws-memory-planner): "
                          "ops are keyed by node id and placed in the emitter's insertion order")
