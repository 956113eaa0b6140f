"""Collector: Triton compiler output, pass by pass and stage by stage.

Sources (../shared/formats/triton-ir.md):
* an `MLIR_ENABLE_DUMP` log (stderr alone or mixed with program output; both
  header generations; Failed and SoftwarePipeliner-internal dumps; many kernels
  and compiles; a kernel filter's log), an `LLVM_IR_ENABLE_DUMP` log;
* a Triton cache or `TRITON_KERNEL_DUMP` folder: stage files and metadata JSON;
* any folder of these, with the Python files defining the kernels (`@triton.jit`),
  kept with the run so the page shows their lines. A log that also holds warp-specialization planner DOT
  blocks is read by the planner collector too, so one run holds both.

Tables: `ir_steps`, `ir_text`, `ir_locs`, `ir_kernels` (schema/compiler.py). Layers:
`headers` (header lines), `stream` (chunked cutting of a log), `bodies`
(per-body facts and the deduplicated text store), `logs` (compiles and
stages of a log), `folders` (stage files), `locs` (source locations).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn, probe_file
from dashboard.collectors.triton_ir.bodies import TextStore
from dashboard.collectors.triton_ir.folders import metadata_kind, read_folder, stage_of
from dashboard.collectors.triton_ir.headers import find_headers
from dashboard.collectors.triton_ir.locs import locations
from dashboard.collectors.triton_ir.logs import PLANNER_MARK, read_log
from dashboard.schema import schema_of

IR_TABLES = ("ir_steps", "ir_text", "ir_locs", "ir_kernels")


def is_dump_log(head: bytes) -> bool:
    """True when the head holds a pass-dump header line."""
    cut = head.rfind(b"\n") + 1 or len(head)
    return bool(find_headers(head[:cut]))


def is_kernel_source(head: bytes) -> bool:
    """A Python file defining Triton kernels: kept with the run so the page can show its lines."""
    return b"@triton.jit" in head or b"@gluon.jit" in head or b"@triton.autotune" in head


def _is_stage_content(probe: Probe) -> bool:
    head = probe.head
    if head.startswith(b"\x7fELF"):
        return b".nv.info" in head or b"amdgpu" in head.lower()
    if metadata_kind(head) is not None:
        return True
    # Judge the content, not the name: a stray `notes.ptx` must not be taken.
    return stage_of(Path("content"), head) is not None


# Stages whose last pass-dump snapshot is mapped at ingest. The LLVM-dialect snapshots are the
# largest by far (one op per scalar instruction): the page maps them on demand, once, with the
# same parser, which keeps ingest above 100 MB/s.
MAPPED_AT_INGEST = ("ttir", "ttgir")


def _representative_texts(steps: pl.DataFrame) -> pl.DataFrame:
    """(text_id, stage): the last TTIR and TTGIR snapshot of each compile, and every stage file."""
    with_text = steps.filter(pl.col("text_id").is_not_null())
    last = with_text.filter((pl.col("kind") != "internal") & pl.col("stage").is_in(MAPPED_AT_INGEST)) \
        .group_by("compile", "stage").agg(pl.col("text_id").last())
    files = with_text.filter(pl.col("kind") == "file").select("compile", "stage", "text_id")
    return pl.concat([last.select("compile", "stage", "text_id"), files]).unique(["text_id"]).select("text_id", "stage")


class TritonIrCollector:
    name = "triton_ir"
    description = ("Triton compiler output: MLIR_ENABLE_DUMP / LLVM_IR_ENABLE_DUMP logs, a Triton cache or "
                   "kernel-dump folder (stage files + metadata JSON)")

    def sniff(self, probe: Probe) -> bool:
        if PLANNER_MARK.search(probe.head):
            # A short planner debug log (its graphs within the first 64 KiB) stays the planner
            # collector's, as before this collector existed. A real one, megabytes of IR dumps before
            # the planner speaks, is read here, and its graphs by the planner collector too.
            return False
        return is_dump_log(probe.head) or _is_stage_content(probe) or is_kernel_source(probe.head)

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        texts = TextStore()
        try:
            return self._collect(sources, progress, texts)
        finally:
            texts.close()

    def _collect(self, sources: Sequence[Path], progress: ProgressFn, texts: TextStore) -> Collected:
        steps: list[dict[str, Any]] = []
        kernels: list[dict[str, Any]] = []
        warnings: list[str] = []
        planner_logs: list[Path] = []
        folders: dict[Path, list[Path]] = {}
        logs: list[Path] = []
        python_sources: list[str] = []
        for path in map(Path, sources):
            head = probe_file(path).head
            if is_dump_log(head):
                logs.append(path)
            elif is_kernel_source(head) and not _is_stage_content(probe_file(path)):
                python_sources.append(str(path))
            else:
                folders.setdefault(path.parent, []).append(path)
        total = sum(path.stat().st_size for path in logs) or 1
        done = 0
        log_info = []
        for path in logs:
            def advance(consumed: int, base: int = done, name: str = path.name) -> None:
                progress(0.9 * (base + consumed) / total, f"reading {name}")

            result = read_log(path, texts, len(kernels), str(path), advance)
            done += path.stat().st_size
            if not result.dumps:
                raise IngestError(path, "no IR dump in this log could be read (header lines without a known form)")
            steps.extend(result.steps)
            kernels.extend(result.kernels)
            if result.has_planner:
                planner_logs.append(path)
            log_info.append({"source": str(path), "dumps": result.dumps, "compiles": len(result.kernels),
                             "other_bytes": result.other_bytes, "planner": result.has_planner})
        for folder, files in folders.items():
            rows, kernel = read_folder(folder, files, texts, len(kernels), warnings)
            if not rows:
                warnings.append(f"{folder}: Triton metadata without any stage file; nothing to show")
                continue
            steps.extend(rows)
            kernels.append(kernel)
        progress(0.92, "mapping IR lines to Python lines")
        frames: dict[str, pl.DataFrame] = {
            "ir_steps": pl.DataFrame(steps, schema=schema_of("ir_steps")),
            "ir_kernels": pl.DataFrame(kernels, schema=schema_of("ir_kernels")),
            "ir_text": pl.DataFrame(texts.rows, schema=schema_of("ir_text")),
        }
        frames["ir_locs"] = _locations(frames["ir_steps"], texts)
        if not steps:
            raise IngestError(sources[0], "Triton kernel sources without any compiler output (dump log, cache "
                                          "folder) to show them with")
        metadata: dict[str, Any] = {"logs": log_info, "folders": [str(f) for f in folders],
                                    "distinct_texts": len(texts), "python_sources": python_sources}
        if planner_logs:
            self._add_planner(planner_logs, frames, metadata, warnings, progress)
        progress(1.0, "compiler output read")
        return Collected(tables=frames, metadata=metadata, warnings=warnings)

    def _add_planner(self, paths: list[Path], frames: dict[str, pl.DataFrame], metadata: dict[str, Any],
                     warnings: list[str], progress: ProgressFn) -> None:
        # The same log read by the planner collector: its DOT blocks become the /planner tables.
        from dashboard.collectors.triton_ws.collector import COLLECTOR as PLANNER

        progress(0.95, "reading planner graphs in the same log")
        try:
            planner = PLANNER.collect(paths, lambda _f, _m: None)
        except IngestError as error:
            warnings.append(f"{error}; the IR dumps were read, the planner graphs were not")
            return
        frames.update(planner.tables)
        warnings.extend(planner.warnings)
        metadata["planner"] = planner.metadata


def _locations(steps: pl.DataFrame, texts: TextStore) -> pl.DataFrame:
    rows: list[tuple[int, int, str, int, int, str]] = []
    for text_id, stage in _representative_texts(steps).iter_rows():
        text = zlib.decompress(texts.rows[text_id]["zlib"]).decode("utf-8", "replace")
        rows.extend((text_id, *row) for row in locations(text, stage))
    return pl.DataFrame(rows, schema=schema_of("ir_locs"), orient="row")


COLLECTOR = TritonIrCollector()
