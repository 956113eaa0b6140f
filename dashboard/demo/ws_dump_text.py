"""The exact text of the planner's three graph dumps, for a kernel model.

Follows the emitters `dumpSmemBufferLiveness`, `dumpTmemBufferLiveness` and
`dumpCombinedGraph` of facebookexperimental/triton (CodePartitionUtility.cpp)
as described in the shared format spec (triton-ws-dot.md §3): header/footer
lines, indentation, palettes, label formats, invisible ordering edges. The
model is invented by `ws_dumps`; only the text format is the emitters'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SMEM_PALETTE = ("lightblue", "lightgreen", "lightyellow", "lightcoral", "lightsalmon", "lightcyan", "lavender",
                "peachpuff")
TMEM_PALETTE = ("lightpink", "lavender", "peachpuff", "thistle", "lightyellow", "lightcyan", "lightblue",
                "lightgreen")
PARTITION_PALETTE = ("lightblue", "lightgreen", "lightsalmon", "lightyellow", "lightpink", "lightcyan",
                     "lavender", "wheat")


@dataclass
class Op:
    op_id: int
    partitions: list[int]
    op: str  # MLIR name without dialect prefix
    out: str | None  # NameLoc of the result, None for stores
    args: list[str]
    shape: str | None = None
    depth: int = 0
    pointer: int = 0  # what `op_op_<ptr % 100000>` shows without the debug flag


@dataclass
class Buffer:
    memory: str  # SMEM / TMEM
    name: str
    size: int = 0  # SMEM bytes of one copy
    rows: int = 0  # TMEM
    cols: int = 0
    alloc_id: int = 0  # SMEM allocation BufferId (liveness graph's B)
    buffer_id: int | None = None  # the alloc's buffer.id (combined graph's B)
    loc: str | None = None  # raw NameLoc shown in combined edge labels (None = the name)
    start: int = 0
    end: int = 0
    channels: list[Channel] = field(default_factory=list)


@dataclass
class Channel:
    uid: int
    src: Op
    dst: Op
    buffer: Buffer
    operand_d: bool = False


@dataclass
class Kernel:
    ops: list[Op]
    channels: list[Channel]
    smem: list[Buffer]
    tmem: list[Buffer]
    debug: bool = True  # op ids present (TRITON_LLVM_DEBUG_ONLY on)


def _ticks(buffers: list[Buffer]) -> str:
    low = min(b.start for b in buffers)
    high = max(b.end for b in buffers)
    step = max(1, (high - low) // 10)
    return "  |  ".join(str(t) for t in range(low, high + 1, step))


def _channel_label(channel: Channel, debug: bool) -> str:
    text = f"ch{channel.uid}" + (" [D]" if channel.operand_d else "")
    return text + (f" ({channel.src.op_id} to {channel.dst.op_id})" if debug else "")


def _liveness(kernel: Kernel, memory: str) -> str:
    kind = memory.lower()
    buffers = kernel.smem if memory == "SMEM" else kernel.tmem
    title = "SMEM Buffer Liveness Graph" if memory == "SMEM" else "TMEM Buffer Liveness Graph"
    graph = "SmemBufferLiveness" if memory == "SMEM" else "TmemBufferLiveness"
    out = [f"=== {title} ===", f"digraph {graph} {{", "  rankdir=LR;", "  node [shape=record, fontsize=9];",
           "  edge [style=invis];", ""]
    if not buffers:
        out.append(f'  empty [label="No {memory} allocations"];')
        return "\n".join([*out, "}", f"=== End {title} ===", ""])
    out += ["  // Time axis", "  subgraph cluster_axis {", '    label="Operation ID";', "    style=invis;",
            f'    axis [shape=none, label="{_ticks(buffers)}"];', "  }", ""]
    previous_last = None
    palette = SMEM_PALETTE if memory == "SMEM" else TMEM_PALETTE
    for i, buffer in enumerate(buffers):
        if memory == "SMEM":
            out.append(f"  // SMEM Buffer: {buffer.name}")
            label = f"{buffer.name} B{buffer.alloc_id} [{buffer.start}-{buffer.end}) size={buffer.size}"
        else:
            out.append(f"  // TMEM Alloc: {buffer.name}")
            operand_d = sum(c.operand_d for c in buffer.channels)
            label = f"{buffer.name} {buffer.rows}x{buffer.cols} [{buffer.start}-{buffer.end})"
            label += f" [{operand_d} OperandD]" if operand_d else ""
        out += [f"  subgraph cluster_{kind}_{i} {{", f'    label="{label}";', "    style=filled;",
                f'    fillcolor="{palette[i % 8]}";', "    color=black;", ""]
        nodes = [f"{kind}_{i}_ch{c.uid}" for c in buffer.channels] or [f"{kind}_{i}_info"]
        if buffer.channels:
            for position, channel in enumerate(buffer.channels):
                out.append(f'    {nodes[position]} [label="{_channel_label(channel, kernel.debug)}", '
                           "style=filled, fillcolor=white];")
                if position:
                    out.append(f"    {nodes[position - 1]} -> {nodes[position]} [style=invis];")
        else:
            out.append(f'    {nodes[0]} [label="no channels", style=filled, fillcolor=white];')
        out += ["  }", ""]
        if previous_last is not None:
            out.append(f"  {previous_last} -> {nodes[0]} [style=invis];")
        previous_last = nodes[-1]
    out += ["", "  // Summary table", "  subgraph cluster_summary {",
            f'    label="{"SMEM Buffer Summary" if memory == "SMEM" else "TMEM Allocation Summary"}";',
            "    style=filled;", "    fillcolor=white;", "    summary [shape=none, label=<",
            '      <TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">']
    if memory == "SMEM":
        out.append("        <TR><TD><B>Name</B></TD><TD><B>BufferID</B></TD><TD><B>Size</B></TD>"
                   "<TD><B>Channels</B></TD><TD><B>Liveness</B></TD></TR>")
        for b in buffers:
            out.append(f"        <TR><TD>{b.name}</TD><TD>{b.alloc_id}</TD><TD>{b.size}</TD>"
                       f"<TD>{len(b.channels)}</TD><TD>[{b.start}-{b.end})</TD></TR>")
    else:
        out.append("        <TR><TD><B>Name</B></TD><TD><B>Size</B></TD><TD><B>Channels</B></TD>"
                   "<TD><B>Liveness</B></TD><TD><B>OperandD</B></TD></TR>")
        for b in buffers:
            name = "alloc" if b.name.startswith("alloc") else b.name  # the summary drops the index
            out.append(f"        <TR><TD>{name}</TD><TD>{b.rows}x{b.cols}</TD><TD>{len(b.channels)}</TD>"
                       f"<TD>[{b.start}-{b.end})</TD><TD>{sum(c.operand_d for c in b.channels)}</TD></TR>")
    out += ["      </TABLE>", "    >];", "  }", "}", f"=== End {title} ===", ""]
    return "\n".join(out)


def smem_liveness(kernel: Kernel) -> str:
    return _liveness(kernel, "SMEM")


def tmem_liveness(kernel: Kernel) -> str:
    return _liveness(kernel, "TMEM")


def node_id(op: Op, debug: bool) -> str:
    return f"op_op_{op.op_id if debug else op.pointer}"


def op_label(op: Op, debug: bool) -> str:
    """The op label as it stands in the DOT text (escaped `\\n`)."""
    body = f"{op.op}({', '.join(op.args)})"
    if op.out is not None:
        body = f"{op.out} = {body}"
    if debug:
        body = f"[{op.op_id}] {body}"
    second = ", ".join(part for part in (op.shape, f"L{op.depth}" if op.depth else None) if part)
    return body + (f"\\n{second}" if second else "")


def combined_graph(kernel: Kernel) -> str:
    debug = kernel.debug
    border: dict[int, str] = {}
    for channel in kernel.channels:
        for op in (channel.src, channel.dst):
            if channel.buffer.memory == "TMEM" or border.get(id(op)) != "red":
                border[id(op)] = "red" if channel.buffer.memory == "TMEM" else "darkgreen"
    members: dict[int, list[Op]] = {}
    for op in kernel.ops:
        for partition in op.partitions:
            members.setdefault(partition, []).append(op)
    out = ["", "=== Combined Key Ops + Channel Graph (DOT format) ===",
           "// Render with: dot -Tpng <file>.dot -o graph.png", "digraph CombinedGraph {", "  rankdir=TB;",
           "  compound=true;", "  node [shape=box, style=filled, fontsize=9];", "  edge [fontsize=7];", ""]
    for partition in sorted(members):
        colour = PARTITION_PALETTE[partition % 8]
        out += [f"  subgraph cluster_partition_{partition} {{", f'    label="Partition {partition}";',
                "    style=filled;", f'    fillcolor="{colour}";', "    color=blue;"]
        # Program order with op ids; without them the emitter's insertion order (kernel.ops order).
        ops = sorted(members[partition], key=lambda o: o.op_id) if debug else members[partition]
        for position, op in enumerate(ops):
            out.append(f'    {node_id(op, debug)} [label="{op_label(op, debug)}", fillcolor="{colour}", '
                       f"color={border.get(id(op), 'black')}];")
            if position:
                out.append(f"    {node_id(ops[position - 1], debug)} -> {node_id(op, debug)} [style=invis];")
        out += ["  }", ""]
    out.append("  // Channel edges")
    for channel in kernel.channels:
        buffer = channel.buffer
        loc = buffer.loc if buffer.loc is not None else buffer.name
        label = f"ch{channel.uid}"
        if buffer.memory == "SMEM" and buffer.buffer_id is not None:
            label += f" B{buffer.buffer_id}"
        label += f'\\n\\"{loc}\\"' if loc else ""
        label += f"\\n({buffer.memory})"
        if buffer.memory == "TMEM" and channel.operand_d:
            label += " [D]"
        colour = "darkgreen" if buffer.memory == "SMEM" else "red"
        style = "bold" if channel.operand_d else "solid"
        out.append(f'  {node_id(channel.src, debug)} -> {node_id(channel.dst, debug)} [label="{label}", '
                   f"color={colour}, style={style}];")
    out += ["}", "=== End Combined Graph ===", ""]
    return "\n".join(out)
