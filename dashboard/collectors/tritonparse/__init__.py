"""Collector: tritonparse traces (meta-pytorch/tritonparse), raw or parsed, plain or gzip.

Sources: the raw NDJSON `tritonparse.structured_logging` writes
(`dedicated_log_triton_trace_*.ndjson`) and the parsed form `tritonparse.parse`
writes (`*_mapped.ndjson.gz`); the record kinds are described in `records`.
Given both forms of one trace (`X.ndjson` and `X_mapped.ndjson.gz`), the parsed
one is read and the raw one left out, so nothing counts twice. Python files
defining the kernels, given beside a trace, are kept as sources (the trace
holds each kernel's source itself).

Tables: `ir_steps`, `ir_kernels`, `ir_text`, `ir_locs` (as a Triton cache folder
gives them: /compiler and compare read both alike), `ir_launches` (one row per
launch) and `ir_autotune` (one row per benchmarked config, the winner marked).

Bad input: a line that is not a JSON record, or a known record of the wrong
shape, is counted in one warning (all of them: an IngestError); records of kinds
this reader does not know are counted per kind in one warning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn, probe_file
from dashboard.collectors.triton_ir import _locations
from dashboard.collectors.triton_ir.bodies import TextStore
from dashboard.collectors.tritonparse.records import (
    AutotuneAnalysis,
    Census,
    Compilation,
    Launch,
    looks_like_trace,
    read_records,
)
from dashboard.collectors.tritonparse.tables import autotune_rows, benchmark_launches, compile_rows, launch_row
from dashboard.schema import schema_of

_MAPPED = re.compile(r"_mapped\.ndjson(?:\.gz)?$")
_RAW = re.compile(r"\.ndjson(?:\.gz)?$")


def _prefer_mapped(traces: list[Path], warnings: list[str]) -> list[Path]:
    """Leave out a raw trace whose parsed form (`<stem>_mapped.ndjson.gz`) is given too."""
    mapped = {(path.parent, _MAPPED.sub("", path.name)) for path in traces if _MAPPED.search(path.name)}
    kept = []
    for path in traces:
        if not _MAPPED.search(path.name) and (path.parent, _RAW.sub("", path.name)) in mapped:
            warnings.append(f"{path}: its parsed form (_mapped.ndjson) is given too and was read instead")
            continue
        kept.append(path)
    return kept


class TritonparseCollector:
    name = "tritonparse"
    description = "tritonparse trace (raw .ndjson or parsed _mapped.ndjson.gz)"

    def sniff(self, probe: Probe) -> bool:
        return looks_like_trace(probe.head)

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        texts = TextStore()
        try:
            return self._collect([Path(s) for s in sources], progress, texts)
        finally:
            texts.close()

    def _collect(self, sources: list[Path], progress: ProgressFn, texts: TextStore) -> Collected:
        warnings: list[str] = []
        traces = [p for p in sources if looks_like_trace(probe_file(p).head)]
        python_sources = [str(p) for p in sources if p not in traces]
        traces = _prefer_mapped(traces, warnings)
        steps: list[dict[str, Any]] = []
        kernels: list[dict[str, Any]] = []
        launches: list[dict[str, Any]] = []
        autotune: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []
        for position, path in enumerate(traces):
            progress(0.9 * position / len(traces), f"reading {path.name}")
            census = Census()
            compiles: dict[str, int] = {}  # hash -> compile, within this trace
            pending: list[tuple[Launch, int]] = []
            benchmark: set[int] = set()  # occurrence ids of the autotuner's benchmark launches
            counts = {"compilation": 0, "launch": 0, "autotune": 0}
            for line in read_records(path, census):
                if line.kind == "compilation":
                    assert isinstance(line.record, Compilation)
                    rows, kernel = compile_rows(line.record, len(kernels), texts, str(path), line.number)
                    steps += rows
                    kernels.append(kernel)
                    if kernel["hash"]:
                        compiles.setdefault(kernel["hash"], kernel["compile"])
                    counts["compilation"] += 1
                elif line.kind == "launch":
                    pending.append((line.record, line.number))
                    counts["launch"] += 1
                else:
                    if isinstance(line.record, AutotuneAnalysis):
                        benchmark |= benchmark_launches(line.record)
                    found = autotune_rows(line.record, len({r["session"] for r in autotune}), str(path), line.number)
                    autotune += found
                    counts["autotune"] += bool(found)
            # Launches after the whole trace: a compile record may follow the launch that triggered it.
            launches += [launch_row(record, len(launches) + i, compiles, str(path), number)
                         | {"benchmark": record.occurrence_id in benchmark}
                         for i, (record, number) in enumerate(pending)]
            self._census_warnings(path, census, warnings)
            if not census.records:
                raise IngestError(path, "no tritonparse record could be read (every line is damaged)")
            files.append({"source": str(path), "records": census.records, **counts})
        if not kernels:
            damaged = [w.split(": ", 1)[1] for w in warnings if "that are not tritonparse records" in w]
            why = (damaged[0] if damaged else
                   "the trace started after its kernels were compiled (set TRITON_ALWAYS_COMPILE=1 when tracing)")
            raise IngestError(traces[0] if traces else sources[0],
                              f"{len(launches):,} launch records but no readable compilation record: {why}; "
                              "nothing to show")
        bare = sum(1 for kernel in kernels if not kernel["steps"])
        if bare:
            warnings.append(f"{bare:,} compilation records without any stage's IR (their metadata is kept)")
        orphans = sum(1 for launch in launches if launch["compile"] is None)
        if orphans:
            warnings.append(f"{orphans:,} launches of kernels whose compilation is not in the traces (compiled "
                            "before tracing started); kept with their kernel name and grid")
        progress(0.92, "mapping IR lines to Python lines")
        frames = {
            "ir_steps": pl.DataFrame(steps, schema=schema_of("ir_steps")),
            "ir_kernels": pl.DataFrame(kernels, schema=schema_of("ir_kernels")),
            "ir_text": pl.DataFrame(texts.rows, schema=schema_of("ir_text")),
            "ir_launches": pl.DataFrame(launches, schema=schema_of("ir_launches")),
            "ir_autotune": pl.DataFrame(autotune, schema=schema_of("ir_autotune")),
        }
        frames["ir_locs"] = _locations(frames["ir_steps"], texts)
        progress(1.0, "traces read")
        metadata = {"traces": files, "python_sources": python_sources, "distinct_texts": len(texts)}
        return Collected(tables={k: v for k, v in frames.items() if v.height}, metadata=metadata, warnings=warnings)

    @staticmethod
    def _census_warnings(path: Path, census: Census, warnings: list[str]) -> None:
        if census.damaged:
            warnings.append(f"{path}: {census.damaged:,} line{'s' if census.damaged > 1 else ''} that are not "
                            f"tritonparse records (damaged; the first at line {census.first_damaged}) left out")
        if census.unknown:
            # Kinds are the file's text: one line each, bounded.
            kinds = ", ".join(f"{' '.join(kind.split())[:40]!r} x{count:,}"
                              for kind, count in sorted(census.unknown.items())[:8])
            more = f" and {len(census.unknown) - 8} more kinds" if len(census.unknown) > 8 else ""
            total = sum(census.unknown.values())
            warnings.append(f"{path}: {total:,} records of kinds this reader does not know left out ({kinds}{more})")


COLLECTOR = TritonparseCollector()
