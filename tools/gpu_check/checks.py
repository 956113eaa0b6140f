"""The device check's verdicts that are not about kernels: capture overhead, CUDA memory peaks, Triton.

Every verdict is a `Check`: a name, the value measured, the bound it is held to (in words), passed
True / False, or None when it could not be judged (what it needs is missing; `detail` says what), so a
summary never passes a check it did not make. Pure functions of numbers and canonical tables (polars);
`compare.py` holds the kernel and copy comparisons.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

# The share of step time the capture may add (issue 32's target).
OVERHEAD_BOUND = 0.05
# Kineto's `[memory]` events carry the allocator's own `Total Allocated` after each event, the same
# counter torch.cuda.max_memory_allocated() takes its maximum of: the two agree to the byte, and the
# bound only absorbs an event Kineto might lose.
TRACE_PEAK_BOUND = 0.001
# A snapshot's trace records each allocation's requested size, its end state the blocks' rounded sizes
# (torch/cuda/memory.py `_snapshot`); the dashboard rebuilds `allocated` from both, so its peak sits
# between the requested and the rounded peak: within rounding (512 B per block, up to 1 MiB of an
# unsplit large block), a fraction of a percent of a training peak.
SNAPSHOT_PEAK_BOUND = 0.02
TRACE_PEAK_WORDS = f"within {TRACE_PEAK_BOUND:.1%} of torch.cuda.max_memory_allocated() over the profiled steps"
SNAPSHOT_PEAK_WORDS = f"within {SNAPSHOT_PEAK_BOUND:.0%} of torch.cuda.max_memory_allocated() over the process"
TRITON_BOUNDS = {
    "target": "every compile targets the device's cuda:<major><minor>",
    "steps": "ir_steps rows = the dump's pass-dump header lines, and more than 0",
    "result": "the kernel's matmul matches torch's (max abs error < 0.5)",
}
# A pass-dump header line as Triton's MLIR dump writes it (and the SoftwarePipeliner's own snapshots),
# counted here independently of the collector, to hold its step count to.
DUMP_HEADER = re.compile(rb"^// -----// (?:\w+ internal )?IR Dump ", re.M)


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool | None  # None: not judged, `detail` says why
    value: Any
    bound: str
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def not_judged(name: str, bound: str, reason: str) -> Check:
    """A check whose evidence is missing: neither passed nor failed, and why."""
    return Check(name, None, None, bound, reason)


def overhead_check(name: str, baseline_s: Sequence[float], measured_s: Sequence[float],
                   bound: float = OVERHEAD_BOUND) -> Check:
    """Median step time with the capture against without, as a fraction over the baseline."""
    words = f"median step time at most {bound:.0%} over the run without capture"
    if not baseline_s or not measured_s:
        return not_judged(name, words, "no timed steps on one side")
    base, measured = statistics.median(baseline_s), statistics.median(measured_s)
    overhead = measured / base - 1.0
    detail = (f"median {measured * 1e3:.2f} ms over {len(measured_s)} steps against {base * 1e3:.2f} ms "
              f"over {len(baseline_s)}")
    return Check(name, overhead <= bound, round(overhead, 4), words, detail)


def feature_checks(overhead: dict[str, Any], reason: str) -> list[Check]:
    """One `overhead.<feature set>` check per variant of the overhead stage, each against the blocks
    without capture interleaved with it (`reason`: why there is nothing to judge, when the stage failed)."""
    features = overhead.get("features") or {}
    baseline = (features.get("none") or {}).get("steps_s") or []
    names = [name for name in features if name != "none"] or ["kernels", "layers", "layers_full", "flops", "stacks",
                                                                "defaults"]
    checks = []
    for name in names:
        result = features.get(name) or {}
        check = overhead_check(f"overhead.{name}", baseline, result.get("steps_s") or [])
        if check.passed is None:
            checks.append(not_judged(check.name, check.bound, reason if not features else check.detail))
            continue
        settings = (overhead.get("settings") or {}).get(name, {})
        first = result.get("first_s") or []
        extra = _second_opinions(features["none"], result)
        extra += f"; settings {settings}" if settings else ""
        if first:
            extra += f"; each block's first {len(first) // max(1, overhead.get('rounds') or 1)} steps (FLOPs " \
                     f"counted where on): median {statistics.median(first) * 1e3:.2f} ms"
        checks.append(Check(check.name, check.passed, check.value, check.bound,
                            f"{check.detail} (interleaved blocks){extra}"))
    return checks


def _low(values: Sequence[float]) -> float:
    """The 10th percentile: what a step costs when the host is not in one of its slow phases."""
    ordered = sorted(values)
    return ordered[len(ordered) // 10]


def _second_opinions(baseline: dict[str, Any], measured: dict[str, Any]) -> str:
    """The same comparison by 10th percentile of wall time and by median process CPU time (less moved by a
    noisy host than the median wall time the verdict uses)."""
    words = []
    if baseline.get("steps_s") and measured.get("steps_s"):
        words.append(f"10th percentile {_low(measured['steps_s']) / _low(baseline['steps_s']) - 1:+.1%}")
    if baseline.get("cpu_s") and measured.get("cpu_s"):
        cpu = statistics.median(measured["cpu_s"]) / statistics.median(baseline["cpu_s"]) - 1
        words.append(f"process CPU time {cpu:+.1%}")
    return f"; {', '.join(words)}" if words else ""


def cuda_peak(device_memory: pl.DataFrame) -> int | None:
    """The highest `allocated` of any CUDA device in an ingested run; None without absolute CUDA totals."""
    if device_memory.is_empty():
        return None
    cuda = device_memory.filter(pl.col("device").str.starts_with("cuda") & ~pl.col("relative").fill_null(False))
    peak = cuda.get_column("allocated").max() if cuda.height else None
    return int(peak) if peak is not None else None  # type: ignore[arg-type]


def peak_check(name: str, ingested: int | None, reference: int | None, bound: float, words: str) -> Check:
    """A peak the dashboard read from a file against the one torch reported in the same process."""
    if reference is None:
        return not_judged(name, words, "torch reported no CUDA peak (no CUDA device?)")
    if ingested is None:
        return not_judged(name, words, "the ingested run has no absolute CUDA allocator totals")
    difference = abs(ingested - reference) / reference if reference else float(ingested != reference)
    detail = f"dashboard {ingested:,} B, torch {reference:,} B ({ingested - reference:+,} B)"
    return Check(name, difference <= bound, {"dashboard": ingested, "torch": reference}, words, detail)


def count_dump_headers(path: Path) -> int:
    """Pass-dump header lines in a Triton MLIR dump (a log of stderr)."""
    return len(DUMP_HEADER.findall(path.read_bytes()))


def triton_checks(ir_kernels: pl.DataFrame, ir_steps: pl.DataFrame, headers: int, facts: dict[str, Any]) -> list[Check]:
    """The ingested compile against what the compiling process and the raw dump say.

    `facts`: the Triton stage's JSON (`expected_target`, `correct`, `max_abs_error`).
    """
    expected, correct = facts.get("expected_target"), facts.get("correct")
    words = TRITON_BOUNDS
    result = (Check("triton.result", bool(correct), facts.get("max_abs_error"), words["result"])
              if correct is not None else not_judged("triton.result", words["result"], "the kernel did not run"))
    if ir_kernels.is_empty():
        return [*missing_compile("the ingested dump holds no compile")[:2], result]
    targets = sorted(set(ir_kernels.get_column("target").drop_nulls().to_list()))
    target = (Check("triton.target", targets == [expected], targets, words["target"], f"expected {expected}")
              if expected else not_judged("triton.target", words["target"], "the device's capability is unknown"))
    rows = ir_steps.height
    steps = Check("triton.steps", rows == headers and headers > 0,
                  {"ir_steps": rows, "dump_headers": headers, "compiles": ir_kernels.height}, words["steps"])
    return [target, steps, result]


def missing_compile(reason: str) -> list[Check]:
    """The Triton checks, not judged."""
    return [not_judged(f"triton.{name}", bound, reason) for name, bound in TRITON_BOUNDS.items()]
