"""The device check's other verdicts without a GPU: overhead, CUDA peaks of ingested files, Triton dumps,
and `verdicts()` over a data folder whose stages partly failed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dashboard.demo import torch_snapshot
from dashboard.demo.triton_ir_text import generated_log
from dashboard.store import RunStore
from tests.support.demo_copy import demo_sources
from tests.support.triton_demo import requires_triton
from tools.gpu_check.checks import (
    SNAPSHOT_PEAK_BOUND,
    count_dump_headers,
    cuda_peak,
    feature_checks,
    overhead_check,
    peak_check,
    triton_checks,
)
from tools.gpu_check.verdicts import Evidence, verdicts

REPO = Path(__file__).resolve().parents[2]


def _ingest(path: Path, data: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(path), "--data", str(data)],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_overhead_is_the_median_step_over_the_baseline() -> None:
    baseline = [0.100, 0.101, 0.099, 0.250]  # one slow outlier: the median ignores it
    within = overhead_check("session.overhead", baseline, [0.104, 0.104, 0.103])
    assert within.passed is True and within.value == pytest.approx(0.104 / 0.1005 - 1, abs=1e-4)
    assert "104.00 ms over 3 steps against 100.50 ms over 4" in within.detail
    over = overhead_check("capture.overhead", baseline, [0.106, 0.107, 0.2])
    assert over.passed is False and over.value > 0.05
    assert overhead_check("capture.overhead", baseline, []).passed is None


def test_cuda_peak_ignores_cpu_rows_and_curves_without_absolute_totals() -> None:
    events = pl.DataFrame({
        "device": ["cuda:0", "cuda:0", "cpu", "cuda:1", "cuda:1"],
        "allocated": [10, 30, 99, 20, 1000],
        "relative": [False, False, False, False, True],
    })
    assert cuda_peak(events) == 30
    assert cuda_peak(events.filter(pl.col("device") == "cpu")) is None
    assert cuda_peak(events.head(0)) is None


def test_peak_check_bounds_and_missing_sides() -> None:
    assert peak_check("p", 1000, 1000, 0.001, "w").passed is True
    assert peak_check("p", 1002, 1000, 0.001, "w").passed is False
    assert peak_check("p", 1019, 1000, SNAPSHOT_PEAK_BOUND, "w").passed is True
    assert peak_check("p", None, 1000, 0.001, "w").passed is None
    assert peak_check("p", 1000, None, 0.001, "w").passed is None
    assert peak_check("p", 1002, 1000, 0.001, "w").detail == "dashboard 1,002 B, torch 1,000 B (+2 B)"


def test_the_peak_of_an_ingested_snapshot_is_the_one_its_trace_adds_up_to(tmp_path: Path) -> None:
    builders = torch_snapshot.training_builders(steps=4, layers=6)
    path = torch_snapshot.write(tmp_path / "snapshot.pickle", steps=4, layers=6)
    running, peak = 0, 0
    for entry in builders[0].trace:  # the allocator's own trace, summed here independently of the collector
        running += {"alloc": entry["size"], "free_completed": -entry["size"]}.get(entry["action"], 0)
        peak = max(peak, running)
    run = RunStore(tmp_path / "data").open(_ingest(path, tmp_path / "data"))
    assert cuda_peak(run.frame("device_memory")) == peak > 0


def _triton_run(tmp_path: Path, dump: Path) -> dict[str, pl.DataFrame]:
    run = RunStore(tmp_path / "data").open(_ingest(dump, tmp_path / "data"))
    return {"ir_kernels": run.frame("ir_kernels"), "ir_steps": run.frame("ir_steps")}


def test_triton_checks_on_a_dump_log(tmp_path: Path) -> None:
    kernels = tmp_path / "demo_kernels.py"  # the file the log's locations name
    shutil.copyfile(REPO / "dashboard" / "demo" / "triton_kernels_src.py", kernels)
    dump = tmp_path / "triton_mlir_dump.txt"
    dump.write_text(generated_log(kernels))
    headers = count_dump_headers(dump)
    assert headers == 24  # two compiles of 11 passes and one pipeliner snapshot each
    tables = _triton_run(tmp_path, dump)
    facts = {"expected_target": "cuda:90", "correct": True, "max_abs_error": 0.01}
    checks = {c.name: c for c in triton_checks(tables["ir_kernels"], tables["ir_steps"], headers, facts)}
    assert [c.passed for c in checks.values()] == [True, True, True]
    assert checks["triton.steps"].value == {"ir_steps": 24, "dump_headers": 24, "compiles": 2}
    on_blackwell = triton_checks(tables["ir_kernels"], tables["ir_steps"], headers, {"expected_target": "cuda:100"})
    assert [c.passed for c in on_blackwell] == [False, True, None]  # the kernel never ran: result not judged
    assert triton_checks(tables["ir_kernels"], tables["ir_steps"], headers - 1, facts)[1].passed is False
    assert [c.passed for c in triton_checks(tables["ir_kernels"].head(0), tables["ir_steps"], 0, facts)] == [
        None, None, True]


@requires_triton
def test_triton_checks_on_real_triton_output(tmp_path: Path, demo_template: Path) -> None:
    # The demo compiles add_kernel twice for Hopper and a matmul for Blackwell: a dump of two targets. Its dump
    # as the session's seeding wrote it (triton_compile.write: the same real compile), copied.
    seeded = next(path for path in demo_sources(demo_template, "demo-compiler") if path.suffix == ".txt")
    dump = Path(shutil.copyfile(seeded, tmp_path / seeded.name))
    headers = count_dump_headers(dump)
    tables = _triton_run(tmp_path, dump)
    target, steps, _ = triton_checks(tables["ir_kernels"], tables["ir_steps"], headers,
                                     {"expected_target": "cuda:90", "correct": True})
    assert steps.passed is True and headers > 50
    assert target.passed is False and target.value == ["cuda:100", "cuda:90"]


def test_verdicts_of_a_check_whose_capture_failed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    snapshot = _ingest(torch_snapshot.write(tmp_path / "snapshot.pickle", steps=2, layers=4), data)
    evidence = Evidence(
        data=data, runs={"snapshot": snapshot, "capture": "no-such-run"},
        results={"plain": {"plain_s": [0.1, 0.1]}, "kineto": {"memory": {"max_allocated_before": 1,
                                                                          "max_allocated_window": 2}}},
        dump=tmp_path / "absent.txt",
        missing={"loop": "CUPTI unavailable: no driver", "ingest-trace": "exit 1: error: bad trace",
                 "triton": "skipped: no CUDA device"})
    checks = {c.name: c for c in verdicts(evidence)}
    assert list(checks)[:2] == ["capture.steps", "capture.kernel_names_per_step"]
    assert len(checks) == 2 * 8 + 2 + 6 + 2 + 3
    # The overhead stage never ran: each feature set's check says so instead of passing or failing.
    assert checks["overhead.defaults"].passed is None and checks["overhead.layers_full"].detail == "not produced"
    assert checks["session.kernel_count"].detail == "no session run (loop: CUPTI unavailable: no driver)"
    assert checks["capture.steps"].detail == "no capture run (not produced)"
    assert checks["session.overhead"].passed is None
    assert checks["memory.trace_peak"].detail == "ingest-trace: exit 1: error: bad trace"
    assert checks["memory.snapshot_peak"].passed is False  # the demo's peak is far from the 2 B reported
    assert checks["triton.target"].detail == "triton: skipped: no CUDA device"
    assert all(c.bound for c in checks.values())


def test_each_feature_set_is_judged_against_the_blocks_without_capture_interleaved_with_it() -> None:
    steps = [0.010, 0.011, 0.010, 0.012, 0.010, 0.030]  # one slow phase: the median shrugs it off
    overhead = {
        "features": {
            "none": {"steps_s": steps, "cpu_s": steps, "first_s": [0.02] * 2},
            "layers": {"steps_s": [t * 1.03 for t in steps], "cpu_s": [t * 1.02 for t in steps], "first_s": [0.02] * 2},
            "layers_full": {"steps_s": [t * 1.2 for t in steps], "cpu_s": [t * 1.2 for t in steps]},
            "stacks": {"steps_s": []},
        },
        "settings": {"layers": {"layers": "forward"}},
        "rounds": 1,
    }
    checks = {c.name: c for c in feature_checks(overhead, "unused")}
    assert list(checks) == ["overhead.layers", "overhead.layers_full", "overhead.stacks"]
    assert checks["overhead.layers"].passed is True and checks["overhead.layers"].value == pytest.approx(0.03)
    assert "10th percentile +3.0%" in checks["overhead.layers"].detail
    assert "process CPU time +2.0%" in checks["overhead.layers"].detail
    assert "settings {'layers': 'forward'}" in checks["overhead.layers"].detail
    assert checks["overhead.layers_full"].passed is False
    assert checks["overhead.stacks"].passed is None  # no steps: not judged, never passed
    stage_failed = feature_checks({}, "overhead: timed out after 150 s")
    assert [c.passed for c in stage_failed] == [None] * 6
    assert {c.detail for c in stage_failed} == {"overhead: timed out after 150 s"}
