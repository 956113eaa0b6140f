"""Every verdict of the device check, from the runs its stages left and the JSON their processes wrote.

    python -m tools.gpu_check.verdicts EVIDENCE.json CHECKS.json

(check.py runs it in a child, with the Python and packages of the stages: the check itself imports no
polars or torch, so a broken install costs this stage, not the summary.)

`verdicts(evidence)` reads the runs through the dashboard's store (`RunStore(data).open(id).frame(table)`,
the public way in) and returns the `Check`s in a fixed order: for each of our two captures (the capture
command, the CaptureSession) the per-step comparison with Kineto and whether CUPTI dropped records; the
overheads (the command's and the session's against the plain loop, then each feature set's against the
blocks without capture interleaved with it); the CUDA peaks of the ingested trace and snapshot against
torch's; the Triton compile. What a failed stage could not provide is a check not judged, with that
stage's error as the reason.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.store import RunStore
from tools.gpu_check.checks import (
    SNAPSHOT_PEAK_BOUND,
    SNAPSHOT_PEAK_WORDS,
    TRACE_PEAK_BOUND,
    TRACE_PEAK_WORDS,
    Check,
    count_dump_headers,
    cuda_peak,
    feature_checks,
    missing_compile,
    not_judged,
    overhead_check,
    peak_check,
    triton_checks,
)
from tools.gpu_check.compare import StepActivity, compare_activity, missing_activity, step_activity

# Where each capture's run comes from, and the stage that makes it.
CAPTURES = (("capture", "capture"), ("session", "loop"))


@dataclass(frozen=True)
class Evidence:
    data: Path  # the data folder holding every run
    runs: dict[str, str]  # run id by what it holds: capture, session, kineto, snapshot, triton
    results: dict[str, dict[str, Any]]  # the JSON of each stage's process: plain, capture, kineto, triton
    dump: Path  # the Triton MLIR dump
    missing: dict[str, str] = field(default_factory=dict)  # stage -> its error, where it failed

    def why_missing(self, *stages: str) -> str:
        errors = [f"{stage}: {self.missing[stage]}" for stage in stages if stage in self.missing]
        return "; ".join(errors) or "not produced"


def _tables(store: RunStore, run_id: str | None, *names: str) -> dict[str, pl.DataFrame] | None:
    if run_id is None or not store.exists(run_id):
        return None
    run = store.open(run_id)
    return {name: run.frame(name) for name in names}


def _activity(store: RunStore, run_id: str | None) -> StepActivity | None:
    tables = _tables(store, run_id, "kernels", "memcpy", "ranges")
    return step_activity(**tables) if tables is not None else None


def _records_complete(store: RunStore, label: str, run_id: str | None, reason: str) -> Check:
    name, bound = f"{label}.records_complete", "CUPTI dropped no records (no 'dropped' warning)"
    if run_id is None or not store.exists(run_id):
        return not_judged(name, bound, reason)
    warnings = store.open(run_id).info.warnings
    dropped = [w for w in warnings if "dropped" in w and "CUPTI" in w]
    return Check(name, not dropped, len(dropped), bound, " | ".join(warnings)[:1000])


def capture_verdicts(store: RunStore, evidence: Evidence) -> list[Check]:
    checks: list[Check] = []
    kineto = _activity(store, evidence.runs.get("kineto"))
    for label, stage in CAPTURES:
        run_id = evidence.runs.get(label)
        ours = _activity(store, run_id)
        if ours is None:
            checks += missing_activity(label, f"no {label} run ({evidence.why_missing(stage)})")
        elif kineto is None:
            checks += missing_activity(label, f"no Kineto run ({evidence.why_missing('kineto', 'ingest-trace')})")
        else:
            checks += compare_activity(ours, kineto, label)
        checks.append(_records_complete(store, label, run_id, evidence.why_missing(stage)))
    plain = evidence.results.get("plain", {})
    baseline = plain.get("plain_s") or []
    checks.append(overhead_check("session.overhead", baseline, plain.get("session_s") or []))
    captured = evidence.results.get("capture", {}).get("steps_s") or []
    checks.append(overhead_check("capture.overhead", baseline, captured))
    checks += feature_checks(evidence.results.get("overhead", {}), evidence.why_missing("overhead"))
    return checks


def memory_verdicts(store: RunStore, evidence: Evidence) -> list[Check]:
    memory = evidence.results.get("kineto", {}).get("memory", {})
    trace = _tables(store, evidence.runs.get("kineto"), "device_memory")
    snapshot = _tables(store, evidence.runs.get("snapshot"), "device_memory")
    before, window = memory.get("max_allocated_before"), memory.get("max_allocated_window")
    trace_check = (peak_check("memory.trace_peak", cuda_peak(trace["device_memory"]), window, TRACE_PEAK_BOUND,
                              TRACE_PEAK_WORDS)
                   if trace is not None else
                   not_judged("memory.trace_peak", TRACE_PEAK_WORDS, evidence.why_missing("kineto", "ingest-trace")))
    process_peak = max(before, window) if before is not None and window is not None else None
    if snapshot is None:
        snapshot_check = not_judged("memory.snapshot_peak", SNAPSHOT_PEAK_WORDS,
                                    evidence.why_missing("kineto", "ingest-snapshot"))
    else:
        snapshot_check = peak_check("memory.snapshot_peak", cuda_peak(snapshot["device_memory"]), process_peak,
                                    SNAPSHOT_PEAK_BOUND, SNAPSHOT_PEAK_WORDS)
        requested = [memory.get("requested_peak_before"), memory.get("requested_peak_window")]
        if all(value is not None for value in requested):
            detail = f"{snapshot_check.detail}; torch's requested-bytes peak {max(requested):,} B"
            snapshot_check = Check(snapshot_check.name, snapshot_check.passed, snapshot_check.value,
                                   snapshot_check.bound, detail.lstrip("; "))
    return [trace_check, snapshot_check]


def compile_verdicts(store: RunStore, evidence: Evidence) -> list[Check]:
    tables = _tables(store, evidence.runs.get("triton"), "ir_kernels", "ir_steps")
    if tables is None:
        return missing_compile(evidence.why_missing("triton", "ingest-dump"))
    headers = count_dump_headers(evidence.dump) if evidence.dump.is_file() else 0
    return triton_checks(tables["ir_kernels"], tables["ir_steps"], headers, evidence.results.get("triton", {}))


def verdicts(evidence: Evidence) -> list[Check]:
    """Every check, in the summary's order."""
    store = RunStore(evidence.data)
    return [*capture_verdicts(store, evidence), *memory_verdicts(store, evidence), *compile_verdicts(store, evidence)]


def main(argv: list[str]) -> int:
    evidence_path, checks_path = map(Path, argv)
    raw = json.loads(evidence_path.read_text(encoding="utf-8"))
    evidence = Evidence(data=Path(raw["data"]), runs=raw["runs"], results=raw["results"], dump=Path(raw["dump"]),
                        missing=raw["missing"])
    checks = [check.as_dict() for check in verdicts(evidence)]
    checks_path.write_text(json.dumps(checks, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
