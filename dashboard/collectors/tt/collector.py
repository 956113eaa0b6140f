"""Tenstorrent per-operation device memory: the tt-mlir runtime log and the profiler's JSON.

Recognised by content: the runtime log (ANSI-coloured `Executing operation` lines,
each followed by a `Device memory state before operation` block), and the memory
profiler's `*_memory.json`, `*_operations.json` and `*_inputs_registry.json`.
Files are grouped by the run folder they sit in (`<script>_<YYYYMMDD_HHMMSS>/`).

When a run has both the log and the JSON, the **log is authoritative** and the
JSON only cross-checks it (never both, so nothing is counted twice): the JSON is
derived from the log by the profiler's parser, which drops deallocate /
get_device snapshots (so a compute op's delta there is net of the frees after
it), program names, buffer placement and out-of-memory lines, and silently
drops ops whose memory block is not on the very next line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import (
    SNIFF_BYTES,
    Collected,
    IngestError,
    Probe,
    ProgressFn,
    open_source,
    probe_file,
    read_source_bytes,
)
from dashboard.collectors.tt.common import (
    LOG,
    MEMORY_JSON,
    OPERATIONS_JSON,
    REGISTRY_JSON,
    looks_like_json,
    might_be_tt_log,
    role_of_text,
    run_folder_info,
)
from dashboard.collectors.tt.profiler_json import read_memory_json, read_registry
from dashboard.collectors.tt.runtime_log import parse_runtime_log

_DEEP_MARKERS = (b"Device memory state before operation", b" memory state: MemoryView{")
_ROLE_NAMES = {LOG: "runtime log", MEMORY_JSON: "memory.json", OPERATIONS_JSON: "operations.json",
               REGISTRY_JSON: "inputs registry"}


def _scan_for_markers(path: Path) -> bool:
    """Look past the sniff window: tt-xla dumps whole MLIR modules before the first op."""
    overlap = max(len(m) for m in _DEEP_MARKERS)
    tail = b""
    with open_source(path) as handle:
        while chunk := handle.read(8 * 1024 * 1024):
            window = tail + chunk
            if any(marker in window for marker in _DEEP_MARKERS):
                return True
            tail = window[-overlap:]
    return False


def _role(path: Path) -> str:
    """The file's role; what sniffing let through unnamed is a log past its preamble, or JSON."""
    text = probe_file(path).text
    return role_of_text(text) or (MEMORY_JSON if looks_like_json(text) else LOG)


class TtMemoryCollector:
    name = "tt_memory"
    description = "Tenstorrent memory-profiler runtime log or *_memory.json/*_operations.json"

    def sniff(self, probe: Probe) -> bool:
        if role_of_text(probe.text) is not None:
            return True
        if len(probe.head) >= SNIFF_BYTES and might_be_tt_log(probe.text):
            try:
                return _scan_for_markers(probe.path)
            except (OSError, EOFError):
                return False
        return False

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        groups: dict[Path, dict[str, list[Path]]] = {}
        for path in sources:
            groups.setdefault(Path(path).parent, {}).setdefault(_role(Path(path)), []).append(Path(path))
        if len(groups) > 1:
            folders = ", ".join(sorted(folder.name or str(folder) for folder in groups))
            raise IngestError(sources[0], f"files of {len(groups)} profiler runs given together ({folders}); "
                                          "ingest one run folder at a time")
        folder, roles = next(iter(groups.items()))
        for role, paths in roles.items():
            if len(paths) > 1:
                names = ", ".join(p.name for p in paths)
                raise IngestError(folder, f"{len(paths)} {_ROLE_NAMES[role]} files in one run ({names}); "
                                          "ingest them one at a time")
        found = {role: paths[0] for role, paths in roles.items()}
        metadata: dict[str, Any] = {**run_folder_info(folder)}
        if REGISTRY_JSON in found:
            metadata["inputs_registry"] = read_registry(found[REGISTRY_JSON],
                                                        read_source_bytes(found[REGISTRY_JSON]))
        if LOG in found:
            tables, warnings = self._from_log(found, metadata, progress)
        elif MEMORY_JSON in found:
            tables, warnings = self._from_json(found, metadata, progress)
        else:
            only = next(iter(found.values()))
            raise IngestError(only, f"a {_ROLE_NAMES[_role(only)]} holds no memory values; ingest it together with "
                                    "the run's runtime log or *_memory.json")
        progress(1.0, "done")
        return Collected(tables=tables, metadata=metadata, warnings=warnings)

    def _from_log(self, found: dict[str, Path], metadata: dict[str, Any],
                  progress: ProgressFn) -> tuple[dict[str, pl.DataFrame], list[str]]:
        log = found[LOG]
        progress(0.05, f"reading {log.name}")
        parsed = parse_runtime_log(log, read_source_bytes(log), progress)
        warnings = list(parsed.warnings)
        metadata.update(parsed.metadata, source="runtime log", authoritative=log.name)
        if MEMORY_JSON in found:
            warnings += _cross_check(found, parsed.op_memory)
            metadata["cross_checked"] = [found[r].name for r in (MEMORY_JSON, OPERATIONS_JSON) if r in found]
        elif OPERATIONS_JSON in found:
            metadata["not_used"] = [found[OPERATIONS_JSON].name]
        metadata["device"] = _device(parsed.op_memory)
        return {"op_memory": parsed.op_memory, "op_meta": parsed.op_meta}, warnings

    def _from_json(self, found: dict[str, Path], metadata: dict[str, Any],
                   progress: ProgressFn) -> tuple[dict[str, pl.DataFrame], list[str]]:
        memory = found[MEMORY_JSON]
        progress(0.1, f"reading {memory.name}")
        operations = found.get(OPERATIONS_JSON)
        parsed = read_memory_json(memory, read_source_bytes(memory),
                                  (operations, read_source_bytes(operations)) if operations else None)
        metadata.update(parsed.metadata, source="memory.json", authoritative=memory.name)
        metadata["device"] = _device(parsed.op_memory)
        warnings = list(parsed.warnings)
        warnings.append(f"{memory}: no runtime log in this run, so deallocate / get_device snapshots are missing "
                        "and each op's delta includes the frees that followed it")
        return {"op_memory": parsed.op_memory, "op_meta": parsed.op_meta}, warnings


def _device(op_memory: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Banks and capacity per buffer type, from the first snapshot (as the profiler does)."""
    first = op_memory.group_by("buffer_type", maintain_order=True).agg(pl.all().sort_by("op_index").first())
    return {row["buffer_type"]: {"banks": row["banks"], "total_per_bank": row["total_per_bank"]}
            for row in first.iter_rows(named=True)}


def _cross_check(found: dict[str, Path], log_memory: pl.DataFrame) -> list[str]:
    """Compare the profiler's memory.json with the log it came from; the log wins either way."""
    path = found[MEMORY_JSON]
    try:
        json_memory = read_memory_json(path, read_source_bytes(path)).op_memory
    except IngestError as exc:
        return [f"{path}: not used to cross-check the log ({exc.problem})"]
    from_log = log_memory.filter(pl.col("profiler_index").is_not_null())
    log_ops = from_log.select(pl.struct("rank", "profiler_index").n_unique()).item()
    json_ops = json_memory.select(pl.struct("rank", "profiler_index").n_unique()).item()
    if log_ops != json_ops:
        return [f"{path}: {json_ops} ops, but the runtime log has {log_ops} (deallocate / get_device left out); "
                "the log is used"]
    keys = ["rank", "profiler_index", "buffer_type"]
    both = from_log.select(*keys, "allocated_per_bank").join(
        json_memory.select(*keys, pl.col("allocated_per_bank").alias("json")), on=keys, how="full")
    differ = both.filter(pl.col("json").ne_missing(pl.col("allocated_per_bank")))
    if differ.height:
        row = differ.row(0, named=True)
        return [f"{path}: differs from the runtime log at op {row['profiler_index']} ({row['buffer_type']}) and "
                f"{differ.height - 1} more values; the log is used"]
    return []


COLLECTOR = TtMemoryCollector()
