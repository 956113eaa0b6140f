"""A UOp sub-graph as text, the way tinygrad prints one (`print(uop)`, `uop/render.py: pretty_print`).

    UOp(Ops.STORE, dtypes.void, arg=None, src=(
      x1:=UOp(Ops.INDEX, dtypes.float.ptr(16), arg=None, src=(
        UOp(Ops.PARAM, dtypes.float.ptr(16), arg=ParamArg(slot=0, ...), src=()),
        ...)),
      x1,))

Each node is written once; a node used more than once is named `xN:=` where it first appears and
written `xN` after (N in the order tinygrad's printer numbers them). It is what VIZ diffs for a
match (serve renders both sides with tinygrad's Python printer, `pyrender`, which needs tinygrad's
semantics; this form needs none and reads the same way in a unified diff). Iterative, so a deep graph
costs no recursion, and bounded: past `max_lines` the text ends with how many UOps were left out.
"""

from __future__ import annotations

from dashboard.analysis.uop_graph import NodePool

MAX_LINES = 3_000
ARG_CHARS = 160  # a long argument (a SOURCE's code) is cut: the program panel shows it whole
# Ops whose argument is a string tinygrad prints quoted (`repr`).
_QUOTED = frozenset({"SOURCE", "SPECIAL", "CUSTOM", "CUSTOMI", "INS", "CUSTOM_FUNCTION", "COPY"})


def _argument(pool: NodePool, node: int) -> str:
    arg = pool.arg[node]
    if arg is None:
        return "None"
    text = repr(arg) if pool.op[node] in _QUOTED else arg
    return text if len(text) <= ARG_CHARS else text[:ARG_CHARS] + "…"


def _numbers(pool: NodePool, root: int) -> dict[int, list[int]]:
    """node -> [number, uses] in the order tinygrad's printer visits sources (depth first, in order)."""
    numbers: dict[int, list[int]] = {}
    stack = [iter(pool.src[root])]
    while stack:
        source = next(stack[-1], None)
        if source is None:
            stack.pop()
            continue
        entry = numbers.setdefault(source, [len(numbers), 0])
        entry[1] += 1
        if entry[1] == 1:
            stack.append(iter(pool.src[source]))
    return numbers


def uop_text(pool: NodePool, root: int, max_lines: int = MAX_LINES) -> str:
    """The sub-graph under `root` as tinygrad's `print(uop)` writes it."""
    numbers = _numbers(pool, root)
    numbers.setdefault(root, [0, 0])
    written: set[int] = set()
    lines: list[str] = []
    # Frames: (node, depth, sources still to write); a frame closes its `src=(` when they are done.
    pending: list[tuple[int, int, list[int]]] = []

    def open_node(node: int, depth: int) -> None:
        number, uses = numbers[node]
        indent = " " * depth
        if node in written:
            lines.append(f"{indent}x{number},")
            return
        written.add(node)
        name = f"x{number}:=" if uses > 1 else ""
        tag = f", tag={pool.tag[node]}" if pool.tag[node] is not None else ""
        head = f"{indent}{name}UOp(Ops.{pool.op[node]}, {pool.dtype[node]}, arg={_argument(pool, node)}{tag}, src=("
        if not pool.src[node]:
            lines.append(head + ")),")
            return
        lines.append(head)
        pending.append((node, depth, list(reversed(pool.src[node]))))

    open_node(root, 0)
    while pending and len(lines) < max_lines:
        _, depth, sources = pending[-1]
        if sources:
            open_node(sources.pop(), depth + 2)
            continue
        pending.pop()
        lines[-1] += "))" + ("," if pending else "")
    if pending:
        left = len(numbers) - len(written)
        lines.append(f"… {left:,} more UOps not printed (the text stops at {max_lines:,} lines)")
    elif lines and lines[0].endswith(")),") and len(lines) == 1:
        lines[0] = lines[0][:-1]  # a root without sources: no trailing comma
    return "\n".join(lines)


def program_parts(pool: NodePool, program: int) -> dict[str, int]:
    """A PROGRAM node's SINK / LINEAR / SOURCE / BINARY sources, by op (their places differ by release)."""
    parts: dict[str, int] = {}
    for source in pool.src[program]:
        parts.setdefault(pool.op[source], source)
    return parts


def linear_text(pool: NodePool, linear: int, max_lines: int = 20_000) -> str:
    """A LINEAR's uops as tinygrad's `print_uops` lists them (VIZ's "View UOp List"): position, op, dtype,
    sources as positions (a CONST as its value, `--` for one outside the list), argument."""
    uops = list(pool.src[linear])
    position = {node: index for index, node in enumerate(uops)}
    lines = []
    for index, node in enumerate(uops[:max_lines]):
        sources = [(repr(str(pool.arg[s])) if pool.op[s] == "CONST" else str(position[s])) if s in position else "'--'"
                   for s in pool.src[node]]
        shown = "[" + ", ".join(sources) + "]"
        arg = _argument(pool, node)
        lines.append(f"{index:4d} {'Ops.' + pool.op[node]:20s}: {pool.dtype[node]:40s} {shown:32s} {arg}")
    if len(uops) > max_lines:
        lines.append(f"… {len(uops) - max_lines:,} more uops")
    return "\n".join(lines)
