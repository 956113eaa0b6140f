"""IR line -> Python file:line, for MLIR `loc(...)`, PTX `.loc` and LLVM IR `!dbg`.

MLIR locations nest: `loc("f.py":7:11)`, named `loc("x"(#loc5))`, fused
`loc(fused[#loc1, #loc2])`, call-site `loc(callsite(#callee at #caller))` and
aliases `#locN = loc(...)` defined before or after the module. Every file
location a line reaches is kept (`via` says how), so an op inlined from
`triton/language/standard.py` maps both to the helper's line and to the
kernel line that called it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Row = tuple[int, str, int, int, str]  # (ir_line 1-based, file, line, column, via)

_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
_NAMED = re.compile(r'^"(?:[^"\\]|\\.)*"\((.*)\)$')
_MAX_DEPTH = 32


def _split_top(text: str, separator: str) -> list[str]:
    """Split at `separator` outside brackets and quotes."""
    parts, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "([<{":
            depth += 1
        elif char in ")]>}":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def resolve(expression: str, aliases: dict[str, str], via: str = "direct", depth: int = 0,
            memo: dict[tuple[str, str], list[tuple[str, int, int, str]]] | None = None,
            ) -> Iterator[tuple[str, int, int, str]]:
    """Every (file, line, column, via) a location expression reaches (aliases resolved once with `memo`)."""
    expression = expression.strip()
    if depth > _MAX_DEPTH or not expression or expression == "unknown":
        return
    if expression.startswith("#loc"):
        key = (expression, via)
        if memo is not None and key in memo:
            yield from memo[key]
            return
        target = aliases.get(expression)
        found = list(resolve(target, aliases, via, depth + 1, memo)) if target is not None else []
        if memo is not None:
            memo[key] = found
        yield from found
        return
    if expression.startswith("loc(") and expression.endswith(")"):
        yield from resolve(expression[4:-1], aliases, via, depth + 1, memo)
        return
    match = _FILE_LOC.match(expression)
    if match:
        yield match.group(1), int(match.group(2)), int(match.group(3)), via
        return
    match = _NAMED.match(expression)
    if match:
        yield from resolve(match.group(1), aliases, "named" if via == "direct" else via, depth + 1, memo)
        return
    if expression.startswith("fused"):
        inner = expression[expression.find("[") + 1: expression.rfind("]")]
        for part in _split_top(inner, ","):
            yield from resolve(part, aliases, "fused" if via == "direct" else via, depth + 1, memo)
        return
    if expression.startswith("callsite(") and expression.endswith(")"):
        parts = _split_top(expression[9:-1], " at ")
        if len(parts) == 2:
            yield from resolve(parts[0], aliases, "callee", depth + 1, memo)
            yield from resolve(parts[1], aliases, "caller", depth + 1, memo)


def _trailing_loc(line: str) -> str | None:
    """The `loc(...)` that ends an op line."""
    start = line.rfind(" loc(")
    if start < 0 or not line.rstrip().endswith(")"):
        return None
    return line[start + 1:].rstrip()


def mlir_locations(text: str) -> list[Row]:
    """Every (IR line, file, line, column, via) of an MLIR body."""
    lines = text.split("\n")
    aliases: dict[str, str] = {}
    for line in lines:
        if line.startswith("#loc"):
            match = _ALIAS.match(line)
            if match:
                aliases[match.group(1)] = match.group(2)
    rows: list[Row] = []
    memo: dict[tuple[str, str], list[tuple[str, int, int, str]]] = {}
    for number, line in enumerate(lines, start=1):
        if line.startswith("#") or "loc(" not in line:
            continue
        expression = _trailing_loc(line)
        if expression is None:
            continue
        seen = set()
        for file, row, column, via in resolve(expression, aliases, memo=memo):
            if (file, row, via) not in seen:
                seen.add((file, row, via))
                rows.append((number, file, row, column, via))
    return rows


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")


def ptx_locations(text: str) -> list[Row]:
    """PTX: each instruction maps to the last `.loc <file> <line> <col>` before it."""
    lines = text.split("\n")
    files = {m.group(1): m.group(2) for line in lines if ".file" in line and (m := _PTX_FILE.match(line))}
    rows: list[Row] = []
    current: tuple[str, int, int] | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith(".loc"):
            match = _PTX_LOC.match(line)
            current = (files.get(match.group(1), match.group(1)), int(match.group(2)), int(match.group(3))) \
                if match else None
            continue
        if current is None or not stripped or stripped.startswith(("//", ".", "}", "{", "$")):
            continue
        if current[1] > 0:
            rows.append((number, current[0], current[1], current[2], "direct"))
    return rows


_DBG_USE = re.compile(r"!dbg (![0-9]+)")
_METADATA = re.compile(r"^(![0-9]+) = (?:distinct )?!(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r"(\w+): (\"(?:[^\"\\]|\\.)*\"|![0-9]+|[-\w]+)")


def llir_locations(text: str) -> list[Row]:
    """LLVM IR: `!dbg !N` -> `!DILocation(line:, column:, scope:)` -> the scope's `!DIFile`."""
    lines = text.split("\n")
    nodes: dict[str, tuple[str, dict[str, str]]] = {}
    for line in lines:
        if line.startswith("!"):
            match = _METADATA.match(line)
            if match:
                nodes[match.group(1)] = (match.group(2), dict(_FIELD.findall(match.group(3))))

    def file_of(scope: str | None, depth: int = 0) -> str | None:
        node = nodes.get(scope or "")
        if node is None or depth > _MAX_DEPTH:
            return None
        kind, fields = node
        if kind == "DIFile":
            name = fields.get("filename", "").strip('"')
            directory = fields.get("directory", "").strip('"')
            return f"{directory}/{name}" if directory and not name.startswith("/") else name
        return file_of(fields.get("file") or fields.get("scope"), depth + 1)

    rows: list[Row] = []
    for number, line in enumerate(lines, start=1):
        if "!dbg" not in line or line.startswith("!"):
            continue
        match = _DBG_USE.search(line)
        location = match.group(1) if match else None
        inlined = False
        for _ in range(_MAX_DEPTH):  # an inlined helper's location, then where it was inlined (`inlinedAt`)
            node = nodes.get(location or "")
            if node is None or node[0] != "DILocation":
                break
            fields = node[1]
            caller = fields.get("inlinedAt")
            via = "caller" if inlined else ("callee" if caller else "direct")
            file = file_of(fields.get("scope"))
            if file is not None and fields.get("line", "0").isdigit() and int(fields["line"]) > 0:
                rows.append((number, file, int(fields["line"]), int(fields.get("column", "0") or 0), via))
            location, inlined = caller, True
    return rows


def locations(text: str, stage: str) -> list[Row]:
    """The location rows of one IR text of a stage."""
    if stage == "ptx":
        return ptx_locations(text)
    if stage in ("llir", "mir"):
        return llir_locations(text)
    if stage in ("sass", "cubin", "amdgcn"):
        return []
    return mlir_locations(text)
