"""Facts about one IR body, computed once per distinct body, and the store of distinct bodies.

Everything here runs compiled regexes over the whole body (bytes), never a
Python loop over its lines, so the work per byte stays in C. Consecutive
unchanged dumps (most passes change nothing) share one body and cost one hash.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from dashboard.schema import IR_DIALECTS

# The dialects counted in their own `ops_<dialect>` column; any other dialect counts in `ops_other`.
DIALECTS = IR_DIALECTS
_DIALECT_SET = frozenset(DIALECTS)

# An MLIR operation line: optional results (`%a, %b:2 =`), then `dialect.op` (generic form quoted).
# Anchored on "\n" with possessive quantifiers rather than `^` under re.M: 2.5x faster, same matches
# (a body's first line is never an indented op).
_MLIR_OP = re.compile(rb'\n[ \t]++(?:%[^=\n]*+= )?"?([a-z_][a-z0-9_]*+)\.[a-z_]')
# An LLVM IR instruction: an indented line inside a function body (labels and metadata are not indented).
_LLIR_INSTRUCTION = re.compile(rb"\n  ++[%a-z]")
# A PTX / SASS / AMDGCN instruction: an indented line that is not a directive or a comment.
_ASM_INSTRUCTION = re.compile(rb"^[ \t]+[a-zA-Z@_]", re.M)
_PROGRAM_FILE = re.compile(rb'#loc\d* = loc\("([^"]+\.py)":\d+:\d+\)')
_KERNEL = re.compile(rb"tt\.func public @([\w$.]+)")
_LLVM_MLIR_KERNEL = re.compile(
    rb"[ \t]*llvm\.func @([\w$.]+)\([^\n]*(?:nvvm\.kernel|amdgpu-flat-work-group-size|rocdl\.kernel)"
)
_LLIR_KERNEL = re.compile(rb"^define (?:[\w]+ )*void @([\w$.]+)\(", re.M)
_TARGET = re.compile(rb'ttg\.target = "([^"]+)"')
_LLIR_ARCH = re.compile(rb'"target-cpu"="((?:sm_|gfx)\w+)"')
_INT_ATTR = {
    "num_warps": re.compile(rb'"ttg\.num-warps" = (\d+)'),
    "num_ctas": re.compile(rb'"ttg\.num-ctas" = (\d+)'),
    "shared": re.compile(rb"ttg\.shared = (\d+)"),
    "tmem_size": re.compile(rb"ttg\.tensor_memory_size = (\d+)"),
}


@dataclass
class BodyFacts:
    text_id: int
    lines: int
    ops: int
    dialect_ops: dict[str, int]
    kernel: str | None
    target: str | None
    attrs: dict[str, int] = field(default_factory=dict)


def kernel_name(body: bytes) -> str | None:
    """The kernel a module holds: `tt.func public @k`, else the LLVM kernel function."""
    start = body.find(b"tt.func public @")
    if start >= 0:
        match = _KERNEL.match(body, start)
        return match.group(1).decode("utf-8", "replace") if match else None
    for mark in (b"nvvm.kernel", b"rocdl.kernel", b"amdgpu-flat-work-group-size"):
        # One fast find for the kernel attribute, then the regex on its line only.
        at = body.find(mark)
        if at >= 0:
            line_start = body.rfind(b"\n", 0, at) + 1
            match = _LLVM_MLIR_KERNEL.match(body, line_start, body.find(b"\n", at) % (len(body) + 1))
            if match is None:
                match = _LLVM_MLIR_KERNEL.search(body, line_start, at + len(mark))
            if match:
                return match.group(1).decode("utf-8", "replace")
    match = _LLIR_KERNEL.search(body)
    return match.group(1).decode("utf-8", "replace") if match else None


def python_file_of(body: bytes) -> str | None:
    """The kernel's Python file: the first file location among the body's first `#loc` aliases."""
    match = _PROGRAM_FILE.search(body, 0, 8192)
    return match.group(1).decode("utf-8", "replace") if match else None


def module_attributes(body: bytes) -> bytes:
    """The `module attributes {...}` line of an MLIR body (empty when it has none)."""
    start = body.find(b"module attributes {")
    if start < 0:
        return b""
    end = body.find(b"\n", start)
    return body[start:] if end < 0 else body[start:end]


def target_of(body: bytes, attributes: bytes) -> str | None:
    """`cuda:90` / `hip:gfx942` from `ttg.target`, or from an LLVM module's triple and target-cpu."""
    match = _TARGET.search(attributes)
    if match:
        return match.group(1).decode("utf-8", "replace")
    arch = _LLIR_ARCH.search(body)
    if arch:
        name = arch.group(1).decode()
        return f"cuda:{name[3:].rstrip('a')}" if name.startswith("sm_") else f"hip:{name}"
    return None


def count_ops(body: bytes, dialect: str) -> tuple[int, dict[str, int]]:
    """(all ops, ops per dialect) of an MLIR body; LLVM IR counts its instructions as `llvm`."""
    if dialect in ("llvm", "mir"):
        count = len(_LLIR_INSTRUCTION.findall(body))
        return count, {"llvm": count} if count else {}
    if dialect != "mlir":
        return len(_ASM_INSTRUCTION.findall(body)), {}
    counts = Counter(_MLIR_OP.findall(body))
    per: dict[str, int] = {}
    for name, count in counts.items():
        key = name.decode() if name.decode() in _DIALECT_SET else "other"
        per[key] = per.get(key, 0) + count
    return sum(counts.values()), per


class TextStore:
    """Distinct bodies, zlib-compressed, addressed by `text_id` (0, 1, ... in first-seen order).

    Compression runs on a second thread (zlib releases the GIL): the parse goes on meanwhile,
    so ingest uses both cores. `rows` waits for it to finish."""

    def __init__(self, level: int = 1) -> None:
        self.level = level
        self._ids: dict[bytes, BodyFacts] = {}
        self._rows: list[dict] = []
        self._pending: deque[tuple[dict, Future[bytes]]] = deque()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ir-zlib")

    @property
    def rows(self) -> list[dict]:
        for row, future in self._pending:
            row["zlib"] = future.result()
        self._pending.clear()
        return self._rows

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def add(self, body: bytes, dialect: str, stage_hint: str) -> BodyFacts:
        digest = hashlib.sha256(body).digest()  # SHA-NI: twice blake2b's speed here
        facts = self._ids.get(digest)
        if facts is not None:
            return facts
        ops, per = count_ops(body, dialect)
        attributes = module_attributes(body) if dialect == "mlir" else b""
        facts = BodyFacts(
            text_id=len(self._rows), lines=body.count(b"\n"), ops=ops, dialect_ops=per,
            kernel=kernel_name(body), target=target_of(body, attributes),
            attrs={name: int(m.group(1)) for name, rx in _INT_ATTR.items() if (m := rx.search(attributes))},
        )
        self._ids[digest] = facts
        row = {"text_id": facts.text_id, "format": stage_hint, "bytes": len(body), "lines": facts.lines, "zlib": b""}
        self._rows.append(row)
        self._pending.append((row, self._pool.submit(zlib.compress, body, self.level)))
        if len(self._pending) > 64:  # bounded: at most this many uncompressed bodies wait
            done_row, future = self._pending.popleft()
            done_row["zlib"] = future.result()
        return facts

    def body(self, text_id: int) -> bytes:
        return zlib.decompress(self.rows[text_id]["zlib"])

    def __len__(self) -> int:
        return len(self._rows)
