"""One dump log (MLIR_ENABLE_DUMP or LLVM_IR_ENABLE_DUMP) -> `ir_steps` rows and one `ir_kernels` row per compile.

Which compile a dump belongs to: headers do not name the kernel, so a new
compile starts where the log's first pass comes round again, or where a
module-scope dump holds another kernel (spec section 1). The stage follows the
pass order: the dump after `ConvertTritonToTritonGPU` is TTGIR, the dump after
a `...ToLLVM` conversion is the LLVM dialect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard.collectors.triton_ir.bodies import DIALECTS, TextStore, python_file_of
from dashboard.collectors.triton_ir.headers import Header, pass_option
from dashboard.collectors.triton_ir.stream import read_pieces

# Lines that tell a planner debug log (the markers collectors/triton_ws/collector.py sniffs), searched only in
# non-dump text.
PLANNER_MARK = re.compile(
    rb"^digraph (?:SmemBufferLiveness|TmemBufferLiveness|CombinedGraph) \{"
    rb"|^=== (?:SMEM Buffer Liveness Graph|TMEM Buffer Liveness Graph|Combined Key Ops \+ Channel Graph)"
    rb"|^\[(?:MemoryPlanner|doMemoryPlanner|MemoryPlannerTmem)\] "
    rb"|^Dumped (?:SMEM liveness|combined graph|TMEM liveness) to: "
    rb"|\[nvgpu-ws-memory-planner\]",
    re.M,
)
_TO_TTGIR = ("ConvertTritonToTritonGPU", "ConvertTritonToTritonGPUWarp")


@dataclass
class _Compile:
    index: int
    start_line: int
    kernel: str | None = None
    target: str | None = None
    stage: str = "ttir"
    next_stage: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    references: dict[tuple[str, str | None], int] = field(default_factory=dict)  # last text per anchor
    attrs: dict[str, int] = field(default_factory=dict)
    num_stages: int | None = None
    python_file: str | None = None


@dataclass
class LogResult:
    steps: list[dict[str, Any]]
    kernels: list[dict[str, Any]]
    other_bytes: int
    has_planner: bool
    dumps: int


def _stage_after(header: Header, stage: str) -> str | None:
    """The stage of the dump that follows a Before dump of this pass, when the pass converts."""
    if header.kind != "before":
        return None
    if header.pass_name in _TO_TTGIR or header.pass_name.startswith("ConvertTritonToTritonGPU"):
        return "ttgir"
    if "ToLLVM" in header.pass_name and stage in ("ttir", "ttgir"):
        return "llvm-mlir"
    return None


def _first_stage(body: bytes) -> str:
    if b"ttg." in body[:4096] or b'"ttg.num-warps"' in body:
        return "ttgir"
    if b"llvm.func" in body and b"tt.func" not in body:
        return "llvm-mlir"
    return "ttir"


def read_log(path: Path, texts: TextStore, first_compile: int, source: str,
             progress: Any = None) -> LogResult:
    """Parse one dump log; compiles are numbered from `first_compile`."""
    compiles: list[_Compile] = []
    current: _Compile | None = None
    first_pass: str | None = None
    other_bytes = 0
    has_planner = False
    dumps = 0
    for piece in read_pieces(path, progress):
        if piece.other:
            other_bytes += len(piece.other)
            if not has_planner and PLANNER_MARK.search(piece.other):
                has_planner = True
        dump = piece.dump
        if dump is None:
            continue
        dumps += 1
        header = dump.header
        llvm = header.dialect != "mlir"
        facts = texts.add(dump.body, header.dialect, {"llvm": "llir"}.get(header.dialect, header.dialect))
        if first_pass is None and header.kind != "internal":
            first_pass = header.pass_name
        restart = current is None or (
            header.kind != "internal" and header.pass_name == first_pass and header.anchor == "module"
            and bool(current.steps)
        ) or (
            header.anchor == "module" and facts.kernel is not None and current.kernel is not None
            and facts.kernel != current.kernel and not llvm
        )
        if restart:
            current = _Compile(first_compile + len(compiles), dump.line)
            current.stage = "llir" if llvm else _first_stage(dump.body)
            compiles.append(current)
        assert current is not None
        if current.next_stage is not None:
            current.stage, current.next_stage = current.next_stage, None
        if llvm:
            stage = "mir" if header.dialect == "mir" else "llir"
        else:
            stage = current.stage
            current.next_stage = _stage_after(header, current.stage)
        if current.kernel is None and facts.kernel is not None:
            current.kernel = facts.kernel
        if current.target is None:
            current.target = facts.target or _target_option(header)
        current.attrs.update(facts.attrs)
        if current.python_file is None and not llvm:
            current.python_file = python_file_of(dump.body)
        stages_option = pass_option(header.pass_arg, "num-stages")
        if stages_option and stages_option.isdigit():
            current.num_stages = int(stages_option)
        reference_key = ("internal", None) if header.kind == "internal" else (header.anchor, header.symbol)
        previous = current.references.get(reference_key)
        if header.kind != "internal":
            current.references[reference_key] = facts.text_id
        row = {
            "compile": current.index, "kernel": None, "target": None, "stage": stage,
            "step": len(current.steps), "pass_name": header.pass_name, "pass_arg": header.pass_arg,
            "anchor": header.anchor, "symbol": header.symbol, "kind": header.kind,
            "changed": previous is None or previous != facts.text_id,
            "lines": facts.lines, "ops": facts.ops, "text_id": facts.text_id,
            "source": source, "source_line": dump.line,
        }
        for dialect in DIALECTS:
            row[f"ops_{dialect}"] = facts.dialect_ops.get(dialect, 0)
        row["ops_other"] = facts.dialect_ops.get("other", 0)
        current.steps.append(row)
    steps: list[dict[str, Any]] = []
    kernels: list[dict[str, Any]] = []
    for compiled in compiles:
        for row in compiled.steps:
            row["kernel"] = compiled.kernel
            row["target"] = compiled.target
        steps.extend(compiled.steps)
        kernels.append({
            "compile": compiled.index, "kernel": compiled.kernel, "target": compiled.target,
            "num_warps": compiled.attrs.get("num_warps"), "num_ctas": compiled.attrs.get("num_ctas"),
            "num_stages": compiled.num_stages, "shared": compiled.attrs.get("shared"),
            "tmem_size": compiled.attrs.get("tmem_size"), "triton_version": None, "hash": None,
            "source": source, "source_line": compiled.start_line, "steps": len(compiled.steps),
            "python_file": compiled.python_file,
        })
    return LogResult(steps, kernels, other_bytes, has_planner, dumps)


def _target_option(header: Header) -> str | None:
    value = pass_option(header.pass_arg, "target")
    return value if value and ":" in value else None
