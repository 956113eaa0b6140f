"""Dump header lines of Triton's MLIR and LLVM pass dumps, and what each one says.

Two MLIR generations name the pass argument differently (`Pass: arg{opts}` vs
`Pass (arg)`); `Failed` marks a pass that failed; the SoftwarePipeliner prints
its own internal snapshots; LLVM's new pass manager prints `; *** IR Dump After
X on [module] ***`. See ../shared/formats/triton-ir.md, section 1 and 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What precedes `IR Dump ` on a header line. Headers are found with bytes.find (memchr speed) and
# these prefixes: the collector never looks at a body line in Python.
HEADER_MARK = b"IR Dump "
HEADER_PREFIXES = (b"// -----// ", b"; *** ", b"*** ", b"# *** ")
_INTERNAL_PREFIX = re.compile(rb"// -----// \w+ internal ")


def find_headers(block: bytes) -> list[tuple[int, int]]:
    """(start, end) of every header line in a block of whole lines (end: after its newline)."""
    found = []
    position = block.find(HEADER_MARK)
    while position >= 0:
        start = block.rfind(b"\n", 0, position) + 1
        end = block.find(b"\n", position)
        end = len(block) if end < 0 else end + 1
        prefix = block[start:position]
        if prefix in HEADER_PREFIXES or _INTERNAL_PREFIX.fullmatch(prefix):
            found.append((start, end))
        position = block.find(HEADER_MARK, end)
    return found

_MLIR_NEW = re.compile(
    r"^// -----// IR Dump (?P<when>Before|After) (?P<pass>.+?)(?P<failed> Failed)?: (?P<arg>[^\s{(]+)"
    r"(?P<opts>\{.*\})? \('(?P<anchor>[\w.]+)' operation(?:: @(?P<symbol>[^)]+))?\) //----- //\s*$"
)
_MLIR_OLD = re.compile(
    r"^// -----// IR Dump (?P<when>Before|After) (?P<pass>.+?)(?P<failed> Failed)?(?: \((?P<arg>[^)(]*(?:\{.*\})?)\))?"
    r" \('(?P<anchor>[\w.]+)' operation(?:: @(?P<symbol>[^)]+))?\) //----- //\s*$"
)
# Passes' own snapshots: `SoftwarePipeliner internal IR Dump After: LowerLoops`, `WarpSpec internal ...`.
_INTERNAL = re.compile(r"^// -----// (?P<who>\w+) internal IR Dump (?P<when>Before|After): ?(?P<pass>.*?)\s*$")
# New pass manager: `; *** IR Dump After InstCombinePass on add_kernel ***`; legacy (codegen) pass
# manager: `*** IR Dump After SROA (sroa) ***`, and `# *** ... ***` before machine-code (MIR) dumps.
_LLVM = re.compile(r"^(?P<prefix>; |# )?\*\*\* IR Dump (?P<when>Before|After) (?P<pass>.+?)(?P<failed> Failed)?"
                   r"(?: on (?P<target>.+?))?(?P<omitted> omitted because no change)? \*\*\*:?\s*$")
_LEGACY_ARG = re.compile(r"^(?P<name>.*?) \((?P<arg>[\w.\-]+)\)$")

FUNCTION_ANCHORS = frozenset({"tt.func", "llvm.func", "func.func", "gpu.func"})


@dataclass(frozen=True)
class Header:
    """What one dump header says."""

    kind: str  # before / after / failed / internal
    pass_name: str
    pass_arg: str | None  # the pass argument, with its {options} when printed
    anchor: str  # module / function
    symbol: str | None  # the function the pass ran on (function anchors)
    dialect: str  # mlir / llvm / mir: which printer wrote the body


def parse_header(line: str) -> Header | None:
    """The header's parts; None for a line that is not a dump header."""
    line = line.rstrip("\r\n")
    for pattern in (_MLIR_NEW, _MLIR_OLD):
        match = pattern.match(line)
        if match:
            failed = bool(match["failed"])
            kind = "failed" if failed else match["when"].lower()
            arg = match["arg"]
            if pattern is _MLIR_NEW and match["opts"]:
                arg = f"{arg}{match['opts']}"
            anchor = "function" if match["anchor"] in FUNCTION_ANCHORS else "module"
            return Header(kind, match["pass"], arg or None, anchor, match["symbol"], "mlir")
    match = _INTERNAL.match(line)
    if match:
        return Header("internal", f"{match['who']} {match['pass'] or '?'}".strip(), None, "module", None, "mlir")
    match = _LLVM.match(line)
    if match:
        target = (match["target"] or "").strip()
        kind = "failed" if match["failed"] else match["when"].lower()
        is_module = not target or target.startswith("[")
        name, arg = match["pass"], None
        legacy = _LEGACY_ARG.match(name) if match["prefix"] != "; " else None
        if legacy:
            name, arg = legacy["name"], legacy["arg"]
        dialect = "mir" if match["prefix"] == "# " else "llvm"
        return Header(kind, name, arg, "module" if is_module else "function",
                      None if is_module else target, dialect)
    return None


def pass_option(pass_arg: str | None, option: str) -> str | None:
    """One `name=value` option of a pass argument (`num-stages=3`), or None."""
    if not pass_arg or option not in pass_arg:
        return None
    match = re.search(rf"[{{ ]{re.escape(option)}=([^\s}}]+)", pass_arg)
    return match.group(1) if match else None
