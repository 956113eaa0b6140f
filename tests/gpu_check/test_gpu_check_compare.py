"""The device check's capture-vs-Kineto comparison, without a GPU.

Our side is a real CaptureSession over the fake CUPTI backend (mangled names, as CUPTI reports them);
Kineto's side is a Chrome trace written here in Kineto's shapes (demangled names, µs, `gpu_memcpy` names
that carry the direction) and ingested by the real `python -m dashboard.app ingest`. Both describe the same
three training steps, so every comparison must pass; each perturbation below must fail the check it is
about and only that one.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dashboard.capture.cupti_fake import FakeCuptiBackend, VirtualClock
from dashboard.capture.markers import mark
from dashboard.capture.session import CaptureSession
from dashboard.store import RunStore
from tools.gpu_check.compare import StepActivity, compare_activity, missing_activity, step_activity, step_windows

REPO = Path(__file__).resolve().parents[2]
STEPS = 3
# As CUPTI names it, as Kineto writes it (c++filt's output), ns, grid, block, registers, shared memory.
KERNELS = (
    ("_Z6vecAddPKfS0_Pfi", "vecAdd(float const*, float const*, float*, int)", 12_000, (4, 1, 1), (256, 1, 1), 40,
     1024),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
     "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", 3_000, (108, 1, 1), (128, 1, 1), 16, 0),
    ("nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "nvjet_tst_128x64_64x4_1x2_h_bz_TNT", 40_000, (66, 1, 1), (384, 1, 1),
     168, 197_632),
)
INPUT_BYTES, MEMSET_BYTES, LOSS_BYTES = 65_536, 4096, 4


def _captured() -> dict[str, pl.DataFrame]:
    """kernels, memcpy and ranges of three steps captured on the fake GPU."""
    gpu = FakeCuptiBackend(clock=VirtualClock())
    with CaptureSession("ours", backend=gpu, layers=False) as session:
        gpu.launch_kernel(KERNELS[0][0], 5_000)  # warm-up: outside every step, never compared
        gpu.device_synchronize()  # as the loop does at the end of every step, warm-up ones included
        for step in range(STEPS):
            with mark(f"ProfilerStep#{step}", category="profiler_step"):
                gpu.memcpy(INPUT_BYTES, "HtoD", "Pinned", "Device")
                for mangled, _, ns, grid, block, registers, shared in KERNELS:
                    gpu.launch_kernel(mangled, ns, grid=grid, block=block, registers=registers, dynamic_smem=shared)
                gpu.memset(MEMSET_BYTES)
                gpu.memcpy(LOSS_BYTES, "DtoH", "Device", "Pageable", blocking=True)
                gpu.device_synchronize()  # the loop's torch.cuda.synchronize() inside the step
    tables = session.tables()
    return {name: tables[name] for name in ("kernels", "memcpy", "ranges")}


def _x(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kineto_trace() -> dict:
    """The same three steps as Kineto writes them: CPU step ranges, runtime calls, kernels, copies."""
    events: list[dict] = []
    correlation = 100
    for step in range(STEPS):
        start = 1_700_000_000_000_000.0 + step * 1_000.0
        events.append(_x("user_annotation", f"ProfilerStep#{step}", 4000, 4000, start, 900.0))
        gpu: list[tuple[str, str, float, dict]] = [
            ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 5.0, {"bytes": INPUT_BYTES}),
            *(("kernel", name, ns / 1000, {"grid": list(grid), "block": list(block), "registers per thread": regs,
                                            "shared memory": shared})
              for _, name, ns, grid, block, regs, shared in KERNELS),
            ("gpu_memset", "Memset (Device)", 1.0, {"bytes": MEMSET_BYTES}),
            ("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 1.0, {"bytes": LOSS_BYTES}),
        ]
        at = start + 20.0
        for cat, name, dur, args in gpu:
            correlation += 1
            api = "cudaLaunchKernel" if cat == "kernel" else "cudaMemcpyAsync"
            events.append(_x("cuda_runtime", api, 4000, 4000, at - 10.0, 5.0, correlation=correlation))
            events.append(_x(cat, name, 0, 7, at, dur, device=0, stream=7, correlation=correlation, **args))
            at += dur + 2.0
        # Kineto also projects the step onto the GPU stream: not a CPU step, never counted as one.
        events.append(_x("gpu_user_annotation", f"ProfilerStep#{step}", 0, 7, start + 20.0, at - start - 20.0))
    return {"schemaVersion": 1, "traceEvents": events}


def _ingest(path: Path, data: Path) -> dict[str, pl.DataFrame]:
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(path), "--data", str(data)],
                          cwd=REPO, capture_output=True, text=True, check=True)
    run = RunStore(data).open(done.stdout.strip().splitlines()[-1])
    return {name: run.frame(name) for name in ("kernels", "memcpy", "ranges")}


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[StepActivity, StepActivity]:
    folder = tmp_path_factory.mktemp("kineto")
    trace = folder / "steps.pt.trace.json"
    trace.write_text(json.dumps(kineto_trace()), encoding="utf-8")
    return step_activity(**_captured()), step_activity(**_ingest(trace, folder / "data"))


def _verdicts(ours: StepActivity, theirs: StepActivity) -> dict[str, bool | None]:
    return {check.name.split(".", 1)[1]: check.passed for check in compare_activity(ours, theirs, "capture")}


def test_the_same_steps_compare_equal(sides: tuple[StepActivity, StepActivity]) -> None:
    ours, theirs = sides
    assert ours.steps == theirs.steps == [0, 1, 2]
    assert (ours.kernels_outside, theirs.kernels_outside) == (1, 0)  # our warm-up kernel is left out
    checks = compare_activity(ours, theirs, "capture")
    assert [c.name for c in checks] == [
        "capture.steps", "capture.kernel_names_per_step", "capture.kernel_launches_per_step", "capture.kernel_count",
        "capture.copies_per_step", "capture.copy_bytes", "capture.kernel_time"]
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    by_name = {c.name: c for c in checks}
    assert by_name["capture.kernel_count"].value == {"ours": 9, "kineto": 9}
    assert by_name["capture.copy_bytes"].value["ours"] == STEPS * (INPUT_BYTES + MEMSET_BYTES + LOSS_BYTES)
    assert by_name["capture.kernel_time"].value == 0.0


def _changed(side: StepActivity, kernels: pl.DataFrame | None = None, copies: pl.DataFrame | None = None,
             steps: list[int] | None = None) -> StepActivity:
    return dataclasses.replace(side, kernels=side.kernels if kernels is None else kernels,
                               copies=side.copies if copies is None else copies,
                               steps=side.steps if steps is None else steps)


def test_a_renamed_kernel_fails_names_and_launches_and_says_where(sides) -> None:
    ours, theirs = sides
    renamed = theirs.kernels.with_columns(
        pl.when((pl.col("step") == 1) & pl.col("name").str.starts_with("vecAdd"))
        .then(pl.lit("vecAdd(double)")).otherwise(pl.col("name")).alias("name"))
    checks = {c.name: c for c in compare_activity(ours, _changed(theirs, kernels=renamed), "capture")}
    names = checks["capture.kernel_names_per_step"]
    assert names.passed is False and names.value == {"steps": 3, "steps_differing": 1}
    assert names.detail.startswith("first differing step 1:")
    assert "vecAdd(double): ours 0, kineto 1" in names.detail
    assert "vecAdd(float const*, float const*, float*, int): ours 1, kineto 0" in names.detail
    assert checks["capture.kernel_launches_per_step"].passed is False
    assert checks["capture.kernel_count"].passed and checks["capture.copies_per_step"].passed


def test_a_different_grid_fails_launches_only(sides) -> None:
    ours, theirs = sides
    regridded = theirs.kernels.with_columns(
        pl.when(pl.col("name").str.starts_with("nvjet")).then(pl.lit(132)).otherwise(pl.col("grid_x")).alias("grid_x"))
    verdicts = _verdicts(ours, _changed(theirs, kernels=regridded))
    assert verdicts["kernel_launches_per_step"] is False
    assert verdicts["kernel_names_per_step"] and verdicts["kernel_count"] and verdicts["kernel_time"]


def test_a_copy_of_other_size_fails_copies_and_bytes(sides) -> None:
    ours, theirs = sides
    resized = theirs.copies.with_columns(
        pl.when((pl.col("step") == 2) & (pl.col("kind") == "HtoD")).then(pl.lit(1024)).otherwise(pl.col("bytes"))
        .alias("bytes"))
    verdicts = _verdicts(ours, _changed(theirs, copies=resized))
    assert (verdicts["copies_per_step"], verdicts["copy_bytes"]) == (False, False)
    assert verdicts["kernel_names_per_step"] and verdicts["kernel_launches_per_step"]


@pytest.mark.parametrize(("scale", "passed"), [(1.04, True), (0.96, True), (1.06, False), (0.94, False)])
def test_kernel_time_is_held_to_five_percent(sides, scale: float, passed: bool) -> None:
    ours, theirs = sides
    slower = theirs.kernels.with_columns((pl.col("duration_ns") * scale).round().cast(pl.Int64))
    checks = {c.name: c for c in compare_activity(ours, _changed(theirs, kernels=slower), "capture")}
    assert checks["capture.kernel_time"].passed is passed
    assert checks["capture.kernel_time"].value == pytest.approx(1 / scale - 1, abs=1e-3)


def test_a_step_missing_on_one_side_fails_steps_and_compares_the_rest(sides) -> None:
    ours, theirs = sides
    fewer = _changed(theirs, kernels=theirs.kernels.filter(pl.col("step") < 2),
                     copies=theirs.copies.filter(pl.col("step") < 2), steps=[0, 1])
    verdicts = _verdicts(ours, fewer)
    assert verdicts.pop("steps") is False
    assert all(verdicts.values())  # steps 0 and 1 still match


def test_unknown_launch_configs_are_not_judged(sides) -> None:
    ours, theirs = sides
    unknown = theirs.kernels.with_columns(pl.lit(None, pl.Int32).alias("registers"))
    check = next(c for c in compare_activity(ours, _changed(theirs, kernels=unknown), "capture")
                 if c.name == "capture.kernel_launches_per_step")
    assert check.passed is None and "registers" in check.detail


def test_runs_without_common_steps_or_kernels_are_not_judged(sides) -> None:
    ours, theirs = sides
    no_common = compare_activity(ours, _changed(theirs, steps=[7]), "capture")
    assert no_common[0].passed is False
    assert [c.passed for c in no_common[1:]] == [None] * 6
    empty = _changed(theirs, kernels=theirs.kernels.head(0))
    quiet = compare_activity(_changed(ours, kernels=ours.kernels.head(0)), empty, "capture")
    assert quiet[0].passed and {c.passed for c in quiet[1:]} == {None}
    assert "neither run has a kernel" in quiet[1].detail
    missing = missing_activity("session", "CUPTI unavailable: no driver")
    assert [c.name for c in missing] == [c.name.replace("capture", "session") for c in no_common]
    assert all(c.passed is None and c.bound and c.detail == "CUPTI unavailable: no driver" for c in missing)


def test_step_windows_take_cpu_steps_only_and_the_first_of_a_repeated_step() -> None:
    ranges = pl.DataFrame({
        "name": ["ProfilerStep#3", "ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6x"],
        "category": ["profiler_step", "gpu_user_annotation", "profiler_step", "profiler_step", "profiler_step"],
        "device": [None, 0, None, None, None],
        "start_ns": [100, 110, 300, 200, 400],
        "end_ns": [190, 180, 390, 290, 490],
    }, schema_overrides={"device": pl.Int32})
    later = ranges.head(1).with_columns(pl.lit(500, pl.Int64).alias("start_ns"), pl.lit(590, pl.Int64).alias("end_ns"))
    repeated = pl.concat([ranges, later])
    assert step_windows(repeated).rows() == [(3, 100, 190), (5, 200, 290), (4, 300, 390)]
