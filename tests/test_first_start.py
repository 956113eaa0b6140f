"""The first start on an empty data folder says on the terminal what it does, and leaves git clean."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from dashboard.demo import SOURCE_DEMOS, training_history

ROOT = Path(__file__).resolve().parent.parent
SERVING = "dashboard: serving"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stderr_until_serving(data_dir: Path, timeout: float = 120) -> list[str]:
    """Start the app as a user does; its stderr lines up to "serving ..." (then stop it)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dashboard.app", "--data", str(data_dir), "--port", str(_free_port())],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        assert process.stderr is not None
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break  # exited
            lines.append(line.rstrip("\n"))
            if line.startswith(SERVING):
                break
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    return lines


@dataclass(frozen=True)
class FirstStart:
    data_dir: Path
    lines: list[str]
    runs: int  # run folders right after it, before any other start


@pytest.fixture(scope="module")
def first_start(tmp_path_factory: pytest.TempPathFactory) -> FirstStart:
    """One first start on an empty data folder (~14 s: it generates and ingests the whole demo), which
    both tests read: what it printed, and the folder it left for a second start."""
    data_dir = tmp_path_factory.mktemp("first-start") / "data"
    lines = _stderr_until_serving(data_dir)
    return FirstStart(data_dir, lines, len(list((data_dir / "runs").iterdir())))


def test_first_start_prints_what_it_generates_and_ingests(first_start: FirstStart) -> None:
    data_dir, lines = first_start.data_dir, first_start.lines
    text = "\n".join(lines)
    assert any(line.startswith(SERVING) for line in lines), text
    first = [line for line in lines if line.startswith("first start:")]
    # What it does, where, before it does it.
    assert f"no runs in {data_dir} yet; generating the bundled demo" in first[0], text
    sources = len(SOURCE_DEMOS) + len(training_history.VERSIONS)  # and the training job's earlier versions
    for run_name, _module in SOURCE_DEMOS:
        assert any(f"generating {run_name} sources" in line for line in first), text
        assert any(re.search(rf"% ingesting {run_name} \(\d/{sources}\)", line) for line in first), text
    # Progress: percentages that only go up, ending at 100 %, then the runs it made.
    percents = [float(m.group(1)) for line in first if (m := re.match(r"first start:\s+([\d.]+)%", line))]
    assert percents == sorted(percents) and percents[-1] == 100.0, text
    assert first[-1].startswith("first start: done in "), text
    assert first_start.runs == sources + 1  # and the simulated capture
    # The banner comes before "serving": a user waiting sees why.
    assert lines.index(first[-1]) < next(i for i, line in enumerate(lines) if line.startswith(SERVING))


def test_second_start_is_quiet(first_start: FirstStart) -> None:
    assert any(line.startswith("first start:") for line in first_start.lines)  # the first one was not
    again = _stderr_until_serving(first_start.data_dir)
    assert not [line for line in again if line.startswith("first start:")], again


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_generated_data_is_git_ignored() -> None:
    generated = ["data/demo-sources/demo-planner/x.dot", "data/runs/demo-x/run.json", "data/.seed.lock",
                 "data/uploads/a.json", "data/.staging/x"]
    result = subprocess.run(["git", "check-ignore", "--no-index", *generated], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    assert sorted(result.stdout.split()) == sorted(generated), result.stdout + result.stderr
