"""A parse that exceeds its time or memory budget is stopped, named, and takes nothing else down.

The slow input is real: an 80k-kernel Kineto trace (70 MB of JSON, gzip'd to
~4 MB), which parses in well over a second here, so a budget of a fraction of
a second is exceeded by the parse itself (the clock starts once the child has
loaded its modules).
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.gen_kineto_trace import write_trace
from dashboard.collectors.base import IngestError
from dashboard.ingest.budget import (
    Budget,
    BudgetExceeded,
    input_megabytes,
    resident_mb,
    run_in_child,
    scaled_budget,
    tree_resident_mb,
)
from dashboard.ingest.jobs import IngestJobs
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.support.uploads import upload_over_http

REPO_ROOT = Path(__file__).resolve().parents[1]
TIME_BUDGET_S = 0.25


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def post_json(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


@pytest.fixture(scope="module")
def slow_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slow")
    plain = write_trace(folder / "big.json", kernels=80_000)
    packed = folder / "big.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), 6))
    plain.unlink()
    return packed


def test_the_parse_is_stopped_at_its_time_budget_and_leaves_nothing(slow_trace: Path, data_dir: Path) -> None:
    with pytest.raises(BudgetExceeded) as stopped:
        run_in_child(data_dir, [slow_trace], None, Budget(seconds=TIME_BUDGET_S, memory_mb=None))
    assert str(stopped.value) == (f"{slow_trace}: parsing took longer than its time budget of 0.25 s and was "
                                  "stopped (the limit is set by --max-seconds)")
    assert RunStore(data_dir).list_runs() == []
    staging = data_dir / ".staging"
    assert not staging.exists() or list(staging.iterdir()) == []  # the killed child's half-run is gone


def test_the_parse_is_stopped_at_its_memory_budget(slow_trace: Path, data_dir: Path) -> None:
    with pytest.raises(BudgetExceeded, match=r"parsing needed more than its memory budget of 150 MB \(\d+ MB\)"):
        run_in_child(data_dir, [slow_trace], None, Budget(seconds=None, memory_mb=150))
    assert RunStore(data_dir).list_runs() == []


def test_within_budget_the_child_ingests_and_errors_keep_their_text(slow_trace: Path, data_dir: Path,
                                                                   tmp_path: Path) -> None:
    run_id = run_in_child(data_dir, [slow_trace], "big", Budget(seconds=120, memory_mb=4096))
    assert RunStore(data_dir).open(run_id).info.row_counts["kernels"] >= 80_000
    bad = tmp_path / "bad.json"
    bad.write_text("not json at all")
    with pytest.raises(IngestError) as failed:
        run_in_child(data_dir, [bad], None, Budget(seconds=120, memory_mb=None))
    assert str(failed.value).startswith(f"{bad}: ") and "\n" not in str(failed.value)


def test_the_child_lives_until_the_job_is_taken_back(data_dir: Path, tmp_path: Path) -> None:
    # A job's status names the child while it runs: were the child gone before `ending()` replaced that
    # status, a page polling in between would fail a finished job as orphaned.
    dot = tmp_path / "planner.dot"
    dot.write_bytes(b'digraph planner {\n  a [label="load"];\n  a -> b;\n}\n')
    child: list[int] = []
    states: list[str] = []

    def ending() -> None:
        time.sleep(0.5)  # ample time for a child that does not wait to have exited
        states.append(Path(f"/proc/{child[0]}/stat").read_text().rsplit(")", 1)[1].split()[0])

    run_id = run_in_child(data_dir, [dot], "waits", Budget(seconds=120, memory_mb=None),
                          started=child.append, ending=ending)
    assert RunStore(data_dir).exists(run_id)
    assert states and states[0] != "Z", states  # alive (waiting for its stdin to end), not exited
    with pytest.raises(ProcessLookupError):  # and gone once released and reaped
        os.kill(child[0], 0)


def test_the_budget_scales_with_the_bytes_the_parse_reads(slow_trace: Path) -> None:
    from dashboard.ingest.input_size import ExpansionLimit, measured_bytes

    on_disk = input_megabytes([slow_trace])
    assert on_disk == pytest.approx(slow_trace.stat().st_size / 2**20)  # as received, never from the trailer
    measured = measured_bytes([slow_trace], ExpansionLimit()) / 2**20
    assert measured > 10 * on_disk  # decompressed as a stream and counted
    budget = scaled_budget([slow_trace], fixed_seconds=None, fixed_memory_mb=None, seconds_base=60,
                           seconds_per_mb=1, memory_mb_base=1024, memory_mb_per_mb=10,
                           seconds_hint="s", memory_hint="m")
    assert budget.seconds == pytest.approx(60 + on_disk) and budget.memory_mb == pytest.approx(1024 + 10 * on_disk)
    assert budget.rescale is not None  # the child reports what it measured; the budget is scaled to that
    again = budget.rescale(measured)
    assert again.seconds == pytest.approx(60 + measured) and again.memory_mb == pytest.approx(1024 + 10 * measured)
    fixed = scaled_budget([slow_trace], fixed_seconds=5, fixed_memory_mb=0, seconds_base=60, seconds_per_mb=1,
                          memory_mb_base=1024, memory_mb_per_mb=10, seconds_hint="s", memory_hint="m")
    assert (fixed.seconds, fixed.memory_mb) == (5, None)  # 0 turns a limit off
    jobs = IngestJobs(RunStore(slow_trace.parent / "data"), Settings(ingest_max_seconds=2.5))
    assert jobs.budget_for([slow_trace]).seconds == 2.5


def test_cli_ingest_has_the_same_budget_behind_flags(slow_trace: Path, data_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(slow_trace), "--data", str(data_dir),
                           "--max-seconds", str(TIME_BUDGET_S)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (f"error: {slow_trace}: parsing took longer than its time budget of 0.25 s and "
                                   "was stopped (the limit is set by --max-seconds)")
    by_env = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(slow_trace), "--data",
                             str(data_dir)], capture_output=True, text=True, timeout=120,
                            env={**env, "DASHBOARD_INGEST_MAX_MEMORY_MB": "150"})
    assert by_env.returncode == 1 and "memory budget of 150 MB" in by_env.stderr
    assert RunStore(data_dir).list_runs() == []


@pytest.fixture
def budget_server(tmp_path: Path) -> Iterator[dict]:
    """One gunicorn worker (so the worker watching the parse is the one that must answer) with a tiny budget."""
    pytest.importorskip("gunicorn")
    data = tmp_path / "data"
    port = free_port()
    env = {**os.environ, "DASHBOARD_DATA": str(data), "DASHBOARD_SEED_DEMO": "0",
           "DASHBOARD_INGEST_MAX_SECONDS": str(TIME_BUDGET_S), "PYTHONPATH": str(REPO_ROOT)}
    log_path = tmp_path / "gunicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", "1", "--threads", "4", "-b",
                                    f"127.0.0.1:{port}", "dashboard.server.wsgi:server"],
                                   cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                get_json(base + "/health")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not start:\n{log_path.read_text()}")
                time.sleep(0.2)
        yield {"url": base, "data": data}
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_an_upload_over_its_budget_fails_named_while_health_keeps_answering(budget_server: dict,
                                                                            slow_trace: Path) -> None:
    base, data = budget_server["url"], budget_server["data"]
    status, answer = upload_over_http(base, {"big.json.gz": slow_trace.read_bytes()}, "slow")
    assert status == 200, answer
    job_id = answer["job"]
    health_seconds: list[float] = []
    answered_while_running = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = json.loads((data / ".jobs" / f"{job_id}.json").read_text())
        started = time.monotonic()
        with urllib.request.urlopen(base + "/health", timeout=5) as response:
            assert response.status == 200
        health_seconds.append(time.monotonic() - started)
        if job["state"] != "running":
            break
        answered_while_running += 1
    assert job["state"] == "error", job
    assert job["error"] == ("big.json.gz: parsing took longer than its time budget of 0.25 s and was stopped "
                            "(the limit is set by DASHBOARD_INGEST_MAX_SECONDS)")
    assert answered_while_running >= 2 and max(health_seconds) < 1.0, health_seconds
    kept = data / "uploads" / "failed" / job_id / "big.json.gz"
    assert kept.read_bytes() == slow_trace.read_bytes()  # nothing the user gave is lost
    assert get_json(base + "/health")["runs"] == 0
    assert urllib.request.urlopen(base + "/", timeout=5).status == 200  # pages keep answering


GRANDCHILD_HOLDS_MEMORY = """
import subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c",
    "import sys; block = bytearray(200 * 2**20); print('held', flush=True); sys.stdin.read()"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print(grandchild.stdout.readline().decode().strip(), flush=True)
sys.stdin.read()
grandchild.stdin.close()
grandchild.wait()
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="memory is read from /proc")
def test_memory_counts_the_childs_own_helper_processes() -> None:
    # The Kineto collector decodes big traces in helper processes: their memory is the parse's too.
    child = subprocess.Popen([sys.executable, "-c", GRANDCHILD_HOLDS_MEMORY], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        own, tree = resident_mb(child.pid), tree_resident_mb(child.pid)
        assert own is not None and own < 100 and tree is not None and tree > 200
    finally:
        child.communicate("", timeout=30)


def test_budget_settings_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("DASHBOARD_INGEST_MAX_SECONDS", "2.5")
    monkeypatch.setenv("DASHBOARD_INGEST_MAX_MEMORY_MB", "0")
    monkeypatch.setenv("DASHBOARD_INGEST_SECONDS_PER_MB", "3")
    monkeypatch.setenv("DASHBOARD_INGEST_MEMORY_MB_BASE", "512")
    settings = Settings.from_env()
    assert (settings.ingest_max_seconds, settings.ingest_max_memory_mb) == (2.5, 0)
    assert (settings.ingest_seconds_per_mb, settings.ingest_memory_mb_base) == (3, 512)
    monkeypatch.delenv("DASHBOARD_INGEST_MAX_SECONDS")
    assert Settings.from_env().ingest_max_seconds is None


def test_the_parse_is_stopped_at_its_temporary_disk_budget_and_leaves_nothing(slow_trace: Path,
                                                                               data_dir: Path) -> None:
    # The run's copy of the input alone (3.5 MB) is over a 1 MB budget.
    with pytest.raises(BudgetExceeded, match=r"parsing wrote more than its temporary-disk budget of 1 MB "
                                             r"\(\d+ MB\) and was stopped \(the limit is set by DASHBOARD_INGEST"):
        run_in_child(data_dir, [slow_trace], None, Budget(seconds=None, memory_mb=None, disk_mb=1))
    assert RunStore(data_dir).list_runs() == []
    for folder in (".staging", ".tmp"):
        assert not (data_dir / folder).exists() or list((data_dir / folder).iterdir()) == []
