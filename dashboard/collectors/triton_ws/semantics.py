"""What the planner's three DOT graphs mean: buffers, channels, operations.

Input is the neutral `DotGraph` from `dot_grammar`; output is plain rows (dicts
keyed by canonical column names) for `ws_buffers`, `ws_ops` and `ws_channels`.
Labels are read with the line grammar of the format spec (§5), applied to the
label *text* (escapes already resolved), so attribute order and layout do not
matter. See ../shared/formats/triton-ws-dot.md in the project's shared folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from dashboard.collectors.dot.graph import DotGraph

GRAPH_KINDS = {"SmemBufferLiveness": "smem", "CombinedGraph": "combined", "TmemBufferLiveness": "tmem"}

_BUFFER_CLUSTER = re.compile(r"^cluster_(?P<memory>smem|tmem)_(?P<index>\d+)$")
_SMEM_LABEL = re.compile(r"^(?P<name>.*) B(?P<bid>\d+) \[(?P<start>\d+)-(?P<end>\d+)\) size=(?P<size>\d+)$")
_TMEM_LABEL = re.compile(
    r"^(?P<name>.*?)(?: (?P<rows>\d+)x(?P<cols>\d+))? \[(?P<start>\d+)-(?P<end>\d+)\)"
    r"(?: \[(?P<nd>\d+) OperandD\])?$"
)
_CHANNEL_NODE = re.compile(r"^(?:smem|tmem)_\d+_ch(?P<uid>\d+)$")
_CHANNEL_LABEL = re.compile(r"^ch(?P<uid>\d+)(?P<d> \[D\])?(?: \((?P<src>\d+) to (?P<dst>\d+)\))?$")
_SUMMARY_ROW = re.compile(r"<TR>((?:<TD>[^<]*+</TD>)++)</TR>")
_SUMMARY_CELL = re.compile(r"<TD>([^<]*)</TD>")
_PARTITION_CLUSTER = re.compile(r"^cluster_partition_(?P<pid>-?\d+)$")
_OP_LABEL = re.compile(
    r"^(?:\[(?P<opid>\d+)\] )?(?:(?P<out>[^\n]+?) = )?(?P<op>[A-Za-z_][\w.]*)\((?P<args>[^\n]*)\)"
    r"(?:\n(?P<second>[^\n]*))?$"
)
_SECOND_LINE = re.compile(r"^(?P<shape>.*?)(?:(?:^|, )L(?P<depth>\d+))?$")
_EDGE_LABEL = re.compile(
    r'^ch(?P<uid>\d+)(?: B(?P<bid>\d+))?(?:\n"(?P<name>[^\n]*)")?(?:\n\((?P<mem>SMEM|TMEM)\)(?P<d> \[D\])?)?$'
)
_EDGE_COLOUR_MEMORY = {"darkgreen": "SMEM", "red": "TMEM"}
# The widest integer each column holds (schema: Int32 / Int64). A 32-digit number in a label would
# otherwise reach polars and fail there with its own multi-line message (issue 14).
_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1


class _OutOfRange(ValueError):
    """A number in a label is too large for its column; the message quotes it (shortened)."""

    def __init__(self, text: str) -> None:
        super().__init__(f"number {text[:24]}{'…' if len(text) > 24 else ''} is out of range")
        self.line: int | None = None  # where it stands, when that is not the enclosing cluster's label


@dataclass
class Interpretation:
    """Rows from one planner graph, plus what a reader should know about it."""

    kind: str  # smem / tmem / combined
    buffers: list[dict[str, Any]] = field(default_factory=list)
    channels: list[dict[str, Any]] = field(default_factory=list)  # from liveness channel nodes
    ops: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)  # channels from combined-graph edges
    empty_message: str | None = None  # "No SMEM allocations", ...
    problems: list[str] = field(default_factory=list)  # soft failures, each naming a line


def interpret(graph: DotGraph) -> Interpretation:
    """Read one planner graph; the graph's name says which of the three it is."""
    kind = GRAPH_KINDS[graph.name]
    result = Interpretation(kind)
    empty = graph.nodes.get("empty")
    if empty is not None:
        result.empty_message = empty.attrs.get("label", "")
    if kind == "combined":
        _read_combined(graph, result)
    else:
        _read_liveness(graph, kind, result)
    return result


# --- liveness graphs --------------------------------------------------------------------------------


def _read_liveness(graph: DotGraph, kind: str, result: Interpretation) -> None:
    memory = kind.upper()
    for cluster in graph.clusters.values():
        match = _BUFFER_CLUSTER.match(cluster.path)
        if match is None or match["memory"] != kind:
            continue
        label = cluster.attrs.get("label", "")
        parsed = (_SMEM_LABEL if kind == "smem" else _TMEM_LABEL).match(label)
        if parsed is None:
            # Names are inserted unescaped by the emitter; a stray quote can garble one label.
            line = cluster.attr_lines.get("label", cluster.line)
            result.problems.append(f"line {line}: {memory} buffer label {label!r} not understood; skipped")
            continue
        try:
            _read_buffer(graph, kind, cluster.nodes, match, parsed, result)
        except _OutOfRange as exc:
            line = exc.line or cluster.attr_lines.get("label", cluster.line)
            result.problems.append(f"line {line}: {memory} buffer {cluster.path}: {exc}; skipped")
    _check_summary(graph, result)


def _read_buffer(graph: DotGraph, kind: str, members: list[str], cluster: re.Match[str], parsed: re.Match[str],
                 result: Interpretation) -> None:
    """One buffer cluster's row and its channels' rows (none of them when a number is out of range)."""
    memory = kind.upper()
    index = _bounded(cluster["index"], _I32_MAX)
    row: dict[str, Any] = {
        "memory": memory,
        "buffer_index": index,
        "name": parsed["name"],
        "start_op": _bounded(parsed["start"]),
        "end_op": _bounded(parsed["end"]),
    }
    if kind == "smem":
        row |= {"buffer_id": _bounded(parsed["bid"]), "bytes": _bounded(parsed["size"])}
    else:
        row |= {"rows": _bounded(parsed["rows"], _I32_MAX), "cols": _bounded(parsed["cols"], _I32_MAX)}
    channels: list[int] = []
    channel_rows: list[dict[str, Any]] = []
    operand_d_channels = 0
    for node_id in members:
        node_match = _CHANNEL_NODE.match(node_id)
        if node_match is None:
            continue  # `smem_<i>_info [label="no channels"]`
        node = graph.nodes[node_id]
        channel = _CHANNEL_LABEL.match(node.attrs.get("label", ""))
        if channel is None:
            result.problems.append(f"line {node.line}: channel label {node.attrs.get('label')!r} "
                                   "not understood; skipped")
            continue
        try:
            uid, src_op, dst_op = (_bounded(channel[part]) for part in ("uid", "src", "dst"))
        except _OutOfRange as exc:
            exc.line = node.line
            raise
        channels.append(uid)
        operand_d_channels += channel["d"] is not None
        channel_rows.append({
            "uid": uid,
            "src_op": src_op,
            "dst_op": dst_op,
            "memory": memory,
            "name": parsed["name"],
            "operand_d": channel["d"] is not None,
            "buffer_index": index,
        })
    row["channels"] = channels
    if kind == "tmem":
        # TMEM has no buffer id in the dump; OperandD is counted by the label (or the [D] channels).
        row["operand_d"] = _bounded(parsed["nd"], _I32_MAX) if parsed["nd"] else operand_d_channels
    result.buffers.append(row)
    result.channels.extend(channel_rows)


def _check_summary(graph: DotGraph, result: Interpretation) -> None:
    """The emitter's own summary table must list the same liveness intervals as the clusters."""
    summary = graph.nodes.get("summary")
    if summary is None:
        return
    rows = [_SUMMARY_CELL.findall(cells) for cells in _SUMMARY_ROW.findall(summary.attrs.get("label", ""))]
    intervals = [cell for row in rows for cell in row if cell.startswith("[") and cell.endswith(")")]
    expected = [f"[{b['start_op']}-{b['end_op']})" for b in result.buffers]
    if intervals != expected:
        result.problems.append(
            f"line {summary.line}: the summary table lists {len(intervals)} buffers "
            f"({', '.join(intervals[:4])}{'…' if len(intervals) > 4 else ''}) but the graph has "
            f"{len(expected)}; the graph's buffers are used"
        )


# --- combined graph ---------------------------------------------------------------------------------


def _read_combined(graph: DotGraph, result: Interpretation) -> None:
    partitions: dict[str, list[int]] = {}
    for cluster in graph.clusters.values():
        match = _PARTITION_CLUSTER.match(cluster.path)
        if match is None:
            continue
        try:
            pid = _bounded(match["pid"], _I32_MAX)
        except _OutOfRange as exc:
            result.problems.append(f"line {cluster.line}: partition {cluster.path}: {exc}; skipped")
            continue
        for node_id in cluster.nodes:
            partitions.setdefault(node_id, []).append(pid)
    endpoints = {end for edge in graph.edges if edge.attrs.get("style") != "invis" for end in (edge.src, edge.dst)}
    unreadable, stray = [], []
    for node in graph.nodes.values():
        if node.id not in partitions and node.id not in endpoints:
            # Not a key op: e.g. a line of program output that landed inside a logged block.
            stray.append(f"{node.id} (line {node.line})")
            continue
        if node.other_labels:
            line, other = node.other_labels[0]
            result.problems.append(
                f"line {line}: node {node.id} is declared again with another label ({other.splitlines()[0]!r}); "
                "without the debug flag node ids are pointer hashes that can collide, merging two ops into one"
            )
        label = node.attrs.get("label")
        row: dict[str, Any] = {"node": node.id, "partitions": partitions.get(node.id, []), "loop_depth": 0}
        parsed = _op_label(label) if label is not None else None
        if parsed is None:
            if label is not None:
                unreadable.append(f"line {node.line}")
                row["op"] = label.split("\n", 1)[0]
            result.ops.append(row)
            continue
        second = _SECOND_LINE.match(parsed["second"] or "")
        assert second is not None  # every string matches the lazy shape group
        try:
            numbers = {"op_id": _bounded(parsed["opid"]),
                       "loop_depth": _bounded(second["depth"], _I32_MAX) if second["depth"] else 0}
        except _OutOfRange as exc:
            result.problems.append(f"line {node.line}: op {node.id}: {exc}; kept with the label as the op name")
            row["op"] = label.split("\n", 1)[0]
            result.ops.append(row)
            continue
        row |= {
            "op": parsed["op"],
            "out": parsed["out"],
            "args": parsed["args"],
            "shape": second["shape"] or None,
            **numbers,
        }
        result.ops.append(row)
    if stray:
        result.problems.append(f"ignored {len(stray)} nodes outside every partition and channel: "
                               f"{', '.join(stray[:3])}")
    if unreadable:
        result.problems.append(f"{len(unreadable)} op labels not understood ({', '.join(unreadable[:3])}); "
                               "kept with the label as the op name")
    op_ids = {row["node"]: row.get("op_id") for row in result.ops}
    for edge in graph.edges:
        if edge.attrs.get("style") == "invis":
            continue  # the emitter's ordering edges inside a partition
        label = edge.attrs.get("label", "")
        parsed = _EDGE_LABEL.match(label)
        if parsed is None:
            result.problems.append(f"line {edge.line}: channel edge label {label!r} not understood; skipped")
            continue
        memory = parsed["mem"] or _EDGE_COLOUR_MEMORY.get(edge.attrs.get("color", ""))
        operand_d = parsed["d"] is not None if parsed["mem"] else edge.attrs.get("style") == "bold"
        try:
            uid, buffer_id = _bounded(parsed["uid"]), _bounded(parsed["bid"])
        except _OutOfRange as exc:
            result.problems.append(f"line {edge.line}: channel edge label {label[:40]!r}: {exc}; skipped")
            continue
        result.edges.append({
            "uid": uid,
            "src_op": op_ids.get(edge.src),
            "dst_op": op_ids.get(edge.dst),
            "src_node": edge.src,
            "dst_node": edge.dst,
            "memory": memory,
            "buffer_id": buffer_id,
            "name": parsed["name"],
            "operand_d": operand_d,
        })


def _bounded(text: str | None, largest: int = _I64_MAX) -> int | None:
    """A label's number (None when absent); raises _OutOfRange past what its column holds."""
    if text is None:
        return None
    # Digit runs of the label grammar are unsigned except partition ids; 20 digits already exceed i64,
    # and `int()` of a megabyte-long run would be slow for nothing.
    if len(text) > 20 or not -largest - 1 <= (value := int(text)) <= largest:
        raise _OutOfRange(text)
    return value


def _op_label(label: str) -> re.Match[str] | None:
    """`_OP_LABEL` on labels that can match at all: the first line ends in `)`, at most one more line.

    Checking that first keeps the match linear: on a line that cannot match, the regex would retry
    the rest of the line from every ` = ` in it.
    """
    first, _, rest = label.partition("\n")
    if not first.endswith(")") or "\n" in rest.removesuffix("\n"):
        return None
    return _OP_LABEL.match(label)
