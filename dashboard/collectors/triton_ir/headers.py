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

# Headers are split with string methods and single-path patterns (no `.+?` followed by optional
# groups), so a crafted header line costs time linear in its length (issue 14: no regex backtracking).
_MLIR_PREFIX, _MLIR_SUFFIX = "// -----// IR Dump ", " //----- //"
# The tail after the last ` ('`: `builtin.module' operation)` or `tt.func' operation: @add_kernel)`. A
# symbol runs to the closing parenthesis of the line: inlined helpers' mangled names hold parentheses
# (`@triton.language.standard.zeros____(0, 0)cconstexpr_128__(1,)cconstexpr_fp32_`). Fullmatched, so
# `.+` backs off at most to the one `)` that ends the header: linear in the line's length.
_ANCHOR = re.compile(r"(?P<anchor>[\w.]++)' operation(?:: @(?P<symbol>.+))?\)")
# Passes' own snapshots: `SoftwarePipeliner internal IR Dump After: LowerLoops`, `WarpSpec internal ...`.
_INTERNAL = re.compile(r"// -----// (?P<who>\w++) internal IR Dump (?P<when>Before|After):(?P<pass>.*)")
# New pass manager: `; *** IR Dump After InstCombinePass on add_kernel ***`; legacy (codegen) pass
# manager: `*** IR Dump After SROA (sroa) ***`, and `# *** ... ***` before machine-code (MIR) dumps.
_LLVM_PREFIXES = {"; ": "; ", "# ": "# ", "": None}
_LEGACY_ARG = re.compile(r"(?P<arg>[\w.\-]++)\)")

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


def _split_when(text: str) -> tuple[str, str] | None:
    when, _, rest = text.partition(" ")
    return (when, rest) if when in ("Before", "After") and rest else None


def _mlir_header(line: str) -> Header | None:
    text = line.rstrip()
    if not text.startswith(_MLIR_PREFIX) or not text.endswith(_MLIR_SUFFIX):
        return None
    split = _split_when(text[len(_MLIR_PREFIX):-len(_MLIR_SUFFIX)])
    if split is None:
        return None
    when, rest = split
    cut = rest.rfind(" ('")
    anchor = _ANCHOR.fullmatch(rest, cut + 3) if cut > 0 else None
    if anchor is None:
        return None
    head = rest[:cut]
    # `Pass: arg{opts}` (new) or `Pass (arg{opts})` / `Pass` (old); ` Failed` follows the pass name.
    # Pass names may hold spaces and parentheses (`(anonymous namespace)::Foo`), never `: `.
    if ": " in head:
        name, arg = head.split(": ", 1)
        if not arg or arg[0] in " {(":
            return None
    else:
        name, arg = head, None
        if head.endswith(")"):
            opening = head.rfind(" (")
            inner = head[opening + 2:-1] if opening > 0 else ""
            if opening > 0 and "(" not in inner.split("{", 1)[0] and ")" not in inner.split("{", 1)[0]:
                name, arg = head[:opening], inner or None
    failed = name.endswith(" Failed")
    name = name.removesuffix(" Failed")
    if not name:
        return None
    kind = "failed" if failed else when.lower()
    scope = "function" if anchor["anchor"] in FUNCTION_ANCHORS else "module"
    return Header(kind, name, arg, scope, anchor["symbol"], "mlir")


def _llvm_header(line: str) -> Header | None:
    text = line.rstrip()
    prefix = next((p for p in ("; ", "# ") if text.startswith(p + "*** IR Dump ")), "")
    body = text[len(prefix):]
    if not body.startswith("*** IR Dump "):
        return None
    body = body.removesuffix(":")
    if not body.endswith(" ***"):
        return None
    split = _split_when(body[len("*** IR Dump "):-len(" ***")])
    if split is None:
        return None
    when, rest = split
    rest = rest.removesuffix(" omitted because no change")
    name, _on, target = rest.rpartition(" on ") if " on " in rest else (rest, "", "")
    failed = name.endswith(" Failed")
    name = name.removesuffix(" Failed")
    if not name:
        return None
    target = target.strip()
    is_module = not target or target.startswith("[")
    arg = None
    if prefix != "; " and name.endswith(")"):
        cut = name.rfind(" (")
        legacy = _LEGACY_ARG.fullmatch(name, cut + 2) if cut > 0 else None
        if legacy:
            name, arg = name[:cut], legacy["arg"]
    kind = "failed" if failed else when.lower()
    dialect = "mir" if prefix == "# " else "llvm"
    return Header(kind, name, arg, "module" if is_module else "function", None if is_module else target, dialect)


def parse_header(line: str) -> Header | None:
    """The header's parts; None for a line that is not a dump header."""
    line = line.rstrip("\r\n")
    header = _mlir_header(line)
    if header is not None:
        return header
    match = _INTERNAL.match(line)
    if match:
        name = match["pass"].strip()
        return Header("internal", f"{match['who']} {name or '?'}".strip(), None, "module", None, "mlir")
    return _llvm_header(line)


def pass_option(pass_arg: str | None, option: str) -> str | None:
    """One `name=value` option of a pass argument (`num-stages=3`), or None."""
    if not pass_arg or option not in pass_arg:
        return None
    match = re.search(rf"[{{ ]{re.escape(option)}=([^\s}}]+)", pass_arg)
    return match.group(1) if match else None
