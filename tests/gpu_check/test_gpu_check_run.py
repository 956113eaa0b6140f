"""The device check as a program, without a GPU: run.sh's dry run, the size of what travels, the wheel
installer's choices, the stage runner, and whole CPU runs that must always end in a summary."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard.store import RunStore
from tools.gpu_check import carried, wheels
from tools.gpu_check.stages import StageFailed, Stages, one_line

REPO = Path(__file__).resolve().parents[2]
LIMIT = carried.LIMIT_MIB * carried.MIB


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def test_dry_run_lists_the_stages_and_the_carried_size() -> None:
    done = subprocess.run(["bash", "tools/gpu_check/run.sh", "--dry-run"], cwd=REPO, env=_env(), capture_output=True,
                          text=True, timeout=60, check=True)
    lines = done.stdout.splitlines()
    stages = [line.split(":")[0].split(". ")[1] for line in lines if line[:2].strip().isdigit()]
    assert stages == ["install the carried wheels this Python lacks (tools/gpu_check/wheels/) into /tmp/gpu-check/"
                      "site-packages", "loop", "capture", "overhead", "kineto", "triton", "ingest-trace",
                      "ingest-snapshot", "ingest-dump", "compare", "artifacts"]
    assert lines[-1].startswith("carried: tree ") and lines[-1].endswith("(limit 60 MiB)")


def test_the_tree_alone_fits_with_room_for_the_wheels() -> None:
    sizes = carried.carried()
    assert sizes.counted_by == "git ls-files"
    # polars 1.30's wheel alone is ~35 MiB: the tree must leave it room.
    assert sizes.tree_bytes < LIMIT - 40 * carried.MIB, sizes.describe()


def test_the_prepared_tree_fits_under_60_mib() -> None:
    sizes = carried.carried()
    if sizes.wheel_bytes is None:
        pytest.skip("tools/gpu_check/wheels/ is absent: run tools/gpu_check/prepare.sh to size the wheels too")
    assert {wheels.distribution(Path(name)) for name in sizes.wheels} >= {"polars", "msgspec", "lark", "cupti-python"}
    assert sizes.total_bytes <= LIMIT, sizes.describe()


def test_carried_counts_untracked_files_and_wheels(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/ignored/\n")
    (tmp_path / "tracked.txt").write_bytes(b"x" * 100)
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "big.bin").write_bytes(b"x" * 10_000)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tracked.txt"], check=True)
    (tmp_path / "untracked.txt").write_bytes(b"x" * 50)
    found = carried.carried(tmp_path, tmp_path / "ignored")
    assert found.tree_bytes == 100 + 50 + len("/ignored/\n")
    assert (found.wheel_bytes, found.wheels) == (0, [])  # the folder exists but holds no wheel
    assert carried.carried(tmp_path, tmp_path / "absent").wheel_bytes is None


def test_only_wheels_of_absent_distributions_are_installed(tmp_path: Path) -> None:
    for name in ("pytest-8.0.0-py3-none-any.whl", "Surely_Absent.Pkg-1.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    assert wheels.distribution(tmp_path / "cupti_python-13.0.1-cp312-cp312-manylinux2014_x86_64.whl") == "cupti-python"
    assert [w.name for w in wheels.missing(tmp_path)] == ["Surely_Absent.Pkg-1.0-py3-none-any.whl"]
    assert wheels.installed_versions(("pytest", "surely-absent-pkg"))["surely-absent-pkg"] is None


def test_a_failing_stage_is_one_line_and_the_next_stage_runs() -> None:
    log = io.StringIO()
    stages = Stages(deadline_s=120, log=log)

    def broken() -> None:
        raise ValueError("first line\nthe reason, last")

    def refused() -> None:
        raise StageFailed("skipped: no CUDA device")

    assert stages.run("broken", broken) is None
    assert stages.run("refused", refused) is None
    assert stages.run("fine", lambda: 42) == 42
    assert [(r.name, r.ok, r.error) for r in stages.results] == [
        ("broken", False, "ValueError: the reason, last"), ("refused", False, "skipped: no CUDA device"),
        ("fine", True, None)]
    assert "-- broken: FAILED: ValueError: the reason, last" in log.getvalue()
    assert stages.failed("refused") == "skipped: no CUDA device" and stages.failed("fine") is None


def test_commands_fail_with_their_last_line_and_time_out_within_the_deadline(tmp_path: Path) -> None:
    stages = Stages(deadline_s=40, log=io.StringIO())
    failing = [sys.executable, "-c", "import sys; print('noise', file=sys.stderr); sys.exit('error: the reason')"]
    with pytest.raises(StageFailed, match=r"^exit 1: error: the reason$"):
        stages.command(failing, 30, os.environ, tmp_path)
    assert stages.command([sys.executable, "-c", "print('run-1')"], 30, os.environ, tmp_path).strip() == "run-1"
    assert stages.budget(1000) == pytest.approx(40 - 20, abs=1)  # cut to the deadline less the reserve
    started = time.monotonic()
    with pytest.raises(StageFailed, match="timed out after 2 s"):
        stages.command([sys.executable, "-c", "import time; time.sleep(30)"], 2, os.environ, tmp_path)
    assert time.monotonic() - started < 10
    spent = Stages(deadline_s=25, log=io.StringIO())  # 25 s - 20 s reserve < the 10 s a stage needs
    assert spent.run("late", lambda: 1) is None
    assert spent.results[0].error.startswith("skipped: the check's time budget is spent")
    assert one_line("\n\n  last words  \n") == "last words" and one_line("") == "(no message)"


def _check(out: Path, *options: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "tools/gpu_check/check.py", "--out", str(out), "--work", str(out / "work"),
                           *options], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_a_cpu_run_ends_in_a_summary_with_every_stage_accounted_for(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "out"
    done = _check(out, "--device", "cpu", "--size", "tiny", "--steps", "3", "--warmup", "1", "--overhead-rounds", "1",
                  "--steps-per-block", "1")
    summary = _summary(out)
    assert done.returncode == 1, done.stdout[-3000:]  # not ok: nothing could be compared on a CPU
    stages = {s["name"]: s for s in summary["stages"]}
    assert list(stages) == ["loop", "capture", "overhead", "kineto", "triton", "ingest-trace", "ingest-snapshot",
                            "ingest-dump", "compare", "artifacts"]
    assert stages["kineto"]["ok"] and stages["ingest-trace"]["ok"] and stages["compare"]["ok"]
    assert all(s["seconds"] >= 0 for s in stages.values())
    if summary["runs"].get("session") is None:  # no CUPTI here: said in one line, not a crash
        assert summary["cupti"].startswith("CUPTI unavailable: ")
        assert stages["capture"]["error"].startswith("exit 3: CUPTI unavailable: ")
    assert stages["triton"]["error"] == "skipped: a Triton compile for this GPU needs a CUDA device"
    assert summary["step_ms"]["plain"] > 0 and summary["step_ms"]["kineto"] > 0
    assert summary["device"]["device"] == "cpu" and summary["versions"]["python"]
    # The real CPU trace went through the real ingest: its three timed steps are there to compare.
    from tools.gpu_check.compare import step_windows

    kineto = RunStore(out / "work" / "data").open(summary["runs"]["kineto"])
    assert step_windows(kineto.frame("ranges")).get_column("step").to_list() == [0, 1, 2]
    checks = {c["name"]: c for c in summary["checks"]}
    assert checks["memory.trace_peak"]["passed"] is None  # no CUDA allocator on a CPU
    assert summary["passed"] + summary["failed"] + summary["not_judged"] == len(checks) == 29
    # Each feature set's cost, judged against the blocks without capture of the same process (the
    # simulated CUPTI here, so its verdict is not asserted: a CPU's timing says nothing of a GPU's).
    features = [name for name in checks if name.startswith("overhead.")]
    assert features == ["overhead.kernels", "overhead.layers", "overhead.layers_full", "overhead.flops",
                        "overhead.stacks", "overhead.defaults"]
    assert all(checks[name]["value"] is not None for name in features)
    assert set(summary["step_ms"]["features"]) == {"none", "kernels", "layers", "layers_full", "flops", "stacks",
                                                   "defaults"}
    assert sorted(summary["artifacts"]) == ["kineto.pt.trace.json.gz"]
    assert "gpu check: " in done.stdout.splitlines()[-1]


def test_a_check_whose_python_is_missing_still_writes_its_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _check(out, "--device", "cpu", "--python", str(tmp_path / "no-python"))
    summary = _summary(out)
    assert done.returncode == 1 and summary["ok"] is False
    errors = {s["name"]: s["error"] for s in summary["stages"]}
    assert errors["loop"].startswith("FileNotFoundError") and errors["compare"].startswith("FileNotFoundError")
    assert errors["ingest-trace"] == "skipped: kineto.pt.trace.json.gz was not written"


def test_a_terminated_check_writes_its_summary(tmp_path: Path) -> None:
    sleeper = tmp_path / "python"
    sleeper.write_text("#!/bin/sh\nexec sleep 60\n")
    sleeper.chmod(0o755)
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "tools/gpu_check/check.py", "--out", str(out), "--device", "cpu",
                                "--python", str(sleeper)], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    time.sleep(2)  # inside the first stage, waiting on its child
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    summary = _summary(out)
    assert process.returncode == 128 + signal.SIGTERM, output
    assert summary["interrupted"] == "SIGTERM" and summary["ok"] is False


def test_artifacts_over_the_limit_are_compressed_or_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.gpu_check import check

    monkeypatch.setattr(check, "ARTIFACT_LIMIT", 4096)
    out = tmp_path / "out"
    out.mkdir()
    (out / "triton_mlir_dump.txt").write_bytes(b"// -----// IR Dump Before X //----- //\n" * 1000)  # compresses
    (out / "memory_snapshot.pickle").write_bytes(os.urandom(8192))  # does not
    (out / "small.json").write_text("{}")
    args = check.parse_args(["--out", str(out), "--work", str(tmp_path / "work")])
    device_check = check.DeviceCheck(args)
    with pytest.raises(StageFailed, match=r"removed: memory_snapshot.pickle \(0.0 MiB compressed\)$"):
        device_check.keep_artifacts()
    assert sorted(p.name for p in out.iterdir()) == ["small.json", "triton_mlir_dump.txt.gz"]
    assert sorted(device_check.artifacts) == ["small.json", "triton_mlir_dump.txt.gz"]


def test_wheels_unpack_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    wheel = tmp_path / "wheels" / "surely_absent_pkg-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("surely_absent_pkg/__init__.py", "VALUE = 7\n")
        archive.writestr("surely_absent_pkg-1.0.dist-info/METADATA", "Name: surely-absent-pkg\nVersion: 1.0\n")
    monkeypatch.setattr(wheels.importlib.util, "find_spec", lambda name: None)  # a venv without pip
    assert wheels.install(wheel.parent, tmp_path / "site-packages") == 0
    assert (tmp_path / "site-packages" / "surely_absent_pkg" / "__init__.py").read_text() == "VALUE = 7\n"


def test_the_final_stage_runs_on_the_reserve() -> None:
    stages = Stages(deadline_s=15, log=io.StringIO())  # less than the reserve left for stages
    assert stages.run("ingest", lambda: 1) is None  # skipped
    assert stages.run("compare", lambda: stages.budget(60, final=True), reserve=False) == pytest.approx(15, abs=1)
    assert stages.budget(60) == 0.0
