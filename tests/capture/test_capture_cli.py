"""`dashboard capture -- script.py`: run a script under capture and write the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from dashboard.capture.command import ScriptFailed, capture_command, capture_script, merge_command
from dashboard.capture.cupti_backend import probe
from dashboard.capture.cupti_fake import FakeCuptiBackend
from dashboard.capture.session import active_session
from dashboard.store import RunStore

REPO_ROOT = Path(__file__).resolve().parents[2]

WORKLOAD = textwrap.dedent(
    """
    import sys
    from dashboard.capture.session import active_session
    from dashboard.capture.markers import mark

    gpu = active_session().backend

    def step(i):
        with mark(f"step {i}"):
            gpu.launch_kernel("_Z6vecAddPKfS0_Pfi", 1000)
            gpu.memcpy(64, "DtoH", "Device", "Pinned", blocking=True)

    for i in range(3):
        step(i)
    print("argv:", sys.argv[1:])
    if "--raise" in sys.argv:
        raise ValueError("boom in the script")
    if "--exit" in sys.argv:
        sys.exit(4)
    """
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(WORKLOAD, encoding="utf-8")
    return path


def _run(args: list[str]):
    return CliRunner().invoke(capture_command, args, catch_exceptions=False)


def test_capture_writes_a_run_and_prints_its_id(script: Path, data_dir: Path) -> None:
    result = _run(["--data", str(data_dir), "--name", "cli", "--fake-gpu", "--no-layers", "--stacks", "--",
                   str(script), "-x", "1"])
    assert result.exit_code == 0, result.stderr
    assert "argv: ['-x', '1']" in result.stdout  # the script's own output, its own argv
    run_id = result.stdout.strip().splitlines()[-1]
    run = RunStore(data_dir).open(run_id)
    assert run.info.name == "cli"
    assert run.frame("kernels").height == 3 and run.frame("memcpy").height == 3
    assert set(run.frame("ranges").get_column("name")) == {"step 0", "step 1", "step 2"}
    functions = run.frame("stack").get_column("function").to_list()
    assert any(f.startswith("step (train.py:") for f in functions)
    assert run.info.metadata["script"]["exit_code"] == 0
    assert active_session() is None


def test_a_script_that_raises_still_writes_its_run(script: Path, data_dir: Path) -> None:
    result = _run(["--data", str(data_dir), "--fake-gpu", "--no-layers", "--", str(script), "--raise"])
    assert result.exit_code == 1
    run_id = result.stdout.strip().splitlines()[-1]
    assert "ValueError: boom in the script" in result.stderr
    assert f'File "{script}"' in result.stderr  # the script's traceback, from its own frames
    assert "runpy" not in result.stderr
    run = RunStore(data_dir).open(run_id)
    assert run.frame("kernels").height == 3
    assert run.info.metadata["script"]["error"] == "ValueError: boom in the script"
    assert any("script failed" in w for w in run.info.warnings)


def test_the_scripts_exit_status_is_kept(script: Path, data_dir: Path) -> None:
    result = _run(["--data", str(data_dir), "--fake-gpu", "--no-layers", "--", str(script), "--exit"])
    assert result.exit_code == 4
    assert RunStore(data_dir).exists(result.stdout.strip().splitlines()[-1])


def test_data_folder_from_the_environment(script: Path, tmp_path: Path) -> None:
    data = tmp_path / "from-env"
    result = CliRunner(env={"DASHBOARD_DATA": str(data)}).invoke(
        capture_command, ["--fake-gpu", "--no-layers", "--no-stacks", "--", str(script)]
    )
    assert result.exit_code == 0, result.stderr
    assert RunStore(data).exists(result.stdout.strip().splitlines()[-1])


def test_without_cupti_one_line_and_a_non_zero_exit(
    script: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # no cupti-python here
    result = _run(["--data", str(data_dir), "--", str(script)])
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "CUPTI unavailable: cupti-python is not installed (pip install 'dashboard[cuda]' beside torch cu130, "
        "'dashboard[cuda12]' beside torch cu128 / cu129)"
    ]
    assert result.stdout == ""
    assert not (data_dir / "runs").exists() or not any((data_dir / "runs").iterdir())


@pytest.mark.skipif(probe() is None, reason="CUPTI works here: the no-GPU path cannot be shown")
def test_no_gpu_path_in_a_real_process(script: Path, data_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    completed = subprocess.run(
        [sys.executable, "-m", "dashboard.capture", "--data", str(data_dir), "--", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert completed.returncode == 3
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("CUPTI unavailable: ")


def test_capture_script_with_the_fake_backend(script: Path, data_dir: Path) -> None:
    gpu = FakeCuptiBackend()
    run_id = capture_script(script, ["a"], name="direct", data_dir=data_dir, backend=gpu, layers=False)
    assert RunStore(data_dir).open(run_id).frame("api_calls").height == 6
    with pytest.raises(ScriptFailed) as failed:
        capture_script(script, ["--raise"], data_dir=data_dir, backend=FakeCuptiBackend(), layers=False)
    assert failed.value.exit_code == 1
    assert RunStore(data_dir).open(failed.value.run_id).frame("kernels").height == 3
    assert sys.argv[1:] != ["--raise"]  # argv restored after the script


def test_ranks_staged_then_merged(script: Path, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    for rank in ("0", "1"):
        result = CliRunner(env={"RANK": rank}).invoke(
            capture_command, ["--fake-gpu", "--no-layers", "--staging", str(staging), "--", str(script)]
        )
        assert result.exit_code == 0, result.stderr
        assert result.stdout.strip().endswith(f"capture.rank{rank}.json")
    data = tmp_path / "data"
    merged = CliRunner().invoke(merge_command, [str(staging), "--data", str(data), "--name", "ddp"])
    assert merged.exit_code == 0, merged.stderr
    kernels = RunStore(data).open(merged.stdout.strip()).frame("kernels")
    assert kernels.get_column("rank").value_counts().sort("rank").rows() == [(0, 3), (1, 3)]


def test_usage_names_the_script_separator() -> None:
    result = CliRunner().invoke(capture_command, ["--help"])
    assert "Usage: capture [--name N] [--data DIR] [OPTIONS] -- SCRIPT.py [ARGS]..." in result.stdout


@pytest.mark.parametrize(("version", "expected"), [((3, 11, 9), False), ((3, 12, 3), True), ((3, 13, 0), True)])
def test_stacks_are_on_by_default_only_where_sys_monitoring_makes_them_cheap(
    monkeypatch: pytest.MonkeyPatch, script: Path, data_dir: Path, version: tuple, expected: bool
) -> None:
    from dashboard.capture import command

    with monkeypatch.context() as patched:
        patched.setattr(command.sys, "version_info", version)
        assert command.stacks_by_default() is expected
    monkeypatch.setattr(command, "stacks_by_default", lambda: expected)
    seen: dict = {}
    real = command.CaptureSession

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(command, "CaptureSession", spy)
    command.capture_script(script, data_dir=data_dir, backend=command._fake_backend(), layers=False)
    assert bool(seen["stacks"]) is expected


@pytest.mark.parametrize(("option", "expected"), [([], "forward"), (["--layers", "full"], "full"),
                                                  (["--layers", "off"], False), (["--no-layers"], False)])
def test_layer_hooks_default_to_their_cheap_form(script: Path, data_dir: Path, option: list[str], expected) -> None:
    pytest.importorskip("torch")
    result = _run(["--data", str(data_dir), "--fake-gpu", "--no-stacks", *option, "--", str(script)])
    assert result.exit_code == 0, result.stderr
    run = RunStore(data_dir).open(result.stdout.strip().splitlines()[-1])
    assert run.info.metadata["capture"]["layers"] == expected


def test_the_cuda_extras_stay_on_the_libcupti_minor_pytorch_pins() -> None:
    import tomllib

    Requirement = pytest.importorskip("packaging.requirements").Requirement

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    cuda13, cuda12 = Requirement(extras["cuda"][0]), Requirement(extras["cuda12"][0])
    assert cuda13.name == cuda12.name == "cupti-python"
    # Published releases (PyPI, 2026-11): each extra takes exactly the minor its PyTorch wheels ship.
    releases = ["12.6.0", "12.8.0", "13.0.0", "13.0.1", "13.2.0", "13.3.0", "13.3.1", "13.4.0"]
    assert [v for v in releases if cuda13.specifier.contains(v)] == ["13.0.1"]
    assert [v for v in releases if cuda12.specifier.contains(v)] == ["12.8.0"]
