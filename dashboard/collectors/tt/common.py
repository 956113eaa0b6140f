"""What the Tenstorrent memory-profiler readers share: units, file roles, table assembly.

The runtime prints every value in MiB *per bank* with three decimals
(`MemoryView::toString`, MB = 1024*1024). We store bytes per bank (as printed,
rounded to whole bytes) and device totals (x numBanks) in `op_memory`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

MIB = 1024 * 1024
# Ops that move no tensor data of their own: they count for memory (a deallocate's
# snapshot separates the frees from the next op's growth) but lists hide them.
HOUSEKEEPING_OP_TYPES = ("DeallocateOp", "GetDeviceOp")
HOUSEKEEPING_MLIR_OPS = ("ttnn.deallocate", "ttnn.get_device")



@dataclass
class OpMemoryTables:
    """What either reader (runtime log, profiler JSON) gives for one run folder."""

    op_memory: pl.DataFrame
    op_meta: pl.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# File roles, recognised by content (the profiler's names are only a convention).
LOG, MEMORY_JSON, OPERATIONS_JSON, REGISTRY_JSON = "log", "memory_json", "operations_json", "registry_json"

_MPI_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_RUN_FOLDER = re.compile(r"^(?P<script>.+)_(?P<date>\d{8})_(?P<time>\d{6})$")
_LOG_MARKERS = ("Device memory state before operation", " memory state: MemoryView{")
_TT_LOG_HINTS = ("RuntimeTTNN", "Executing operation:", "MLIR Module", "module_builder.cc", "tt_cluster.cpp")


def looks_like_json(head: str) -> bool:
    """Starts like a JSON document (an MPI-tagged log line `[1,0]<stdout>:` starts with '[' too)."""
    stripped = head.lstrip()
    return stripped[:1] in ("{", "[") and not _MPI_TAG.match(stripped)


def role_of_text(head: str) -> str | None:
    """The profiler file role that a file's first bytes show, or None."""
    if looks_like_json(head):
        if '"totalBytesAllocatedPerBank_MB"' in head or '"memory_config"' in head or (
                '"operations"' in head and '"total_operations"' in head):
            return MEMORY_JSON
        if '"mlir_op"' in head and '"const_eval_graph"' in head and '_shapes"' in head:
            return OPERATIONS_JSON
        if '"entries"' in head and ('"ssa"' in head or '"total_weight_bytes"' in head):
            return REGISTRY_JSON
        return None
    if any(marker in head for marker in _LOG_MARKERS):
        return LOG
    if "RuntimeTTNN" in head and "Executing operation:" in head:
        return LOG  # op lines without memory lines: collect explains how to enable them
    return None


def might_be_tt_log(head: str) -> bool:
    """A text whose head looks like tt-xla / tt-metal output, worth scanning further."""
    return any(hint in head for hint in _TT_LOG_HINTS)


def run_folder_info(folder: Path) -> dict[str, str]:
    """Script name and start time from a `<script>_<YYYYMMDD_HHMMSS>` run folder name."""
    match = _RUN_FOLDER.match(folder.name)
    if not match:
        return {}
    d, t = match["date"], match["time"]
    return {"script": match["script"], "started": f"{d[:4]}-{d[4:6]}-{d[6:]}T{t[:2]}:{t[2:4]}:{t[4:]}"}


def mib_to_bytes(expr: pl.Expr) -> pl.Expr:
    """MiB (as printed, 3 decimals) to whole bytes."""
    return (expr.cast(pl.Float64) * MIB).round(0).cast(pl.Int64)


def op_memory_columns(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add device totals to per-bank byte columns (`*_per_bank`, `banks` present)."""
    banks = pl.col("banks").cast(pl.Int64)
    return frame.with_columns(
        (pl.col(f"{name}_per_bank") * banks).alias(name)
        for name in ("total", "allocated", "free", "largest_free")
    )


def top_program_of(const_eval_names: list[str]) -> str | None:
    """`main` from `main_const_eval_3`: const-eval sub-programs are named after their caller."""
    parents = {name.split("_const_eval_")[0] for name in const_eval_names if "_const_eval_" in name}
    return parents.pop() if len(parents) == 1 else None
