"""Ingest jobs: progress on disk, failures named, and a job whose process died reported as failed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from dashboard.ingest.jobs import IngestJobs
from dashboard.store import RunStore


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _running_job(jobs: IngestJobs, pid: int, host: str) -> tuple[str, Path]:
    upload = jobs.new_upload_folder()
    (upload / "trace.json").write_text("{}")
    job_id = "ab" * 16
    jobs.jobs_dir.mkdir(parents=True, exist_ok=True)
    (jobs.jobs_dir / f"{job_id}.json").write_text(json.dumps(
        {"state": "running", "fraction": 0.4, "message": "decoding", "files": ["trace.json"],
         "upload": str(upload), "pid": pid, "host": host}))
    return job_id, upload


def test_a_job_whose_process_died_is_failed_and_its_upload_kept(tmp_path: Path) -> None:
    jobs = IngestJobs(RunStore(tmp_path))
    job_id, upload = _running_job(jobs, _dead_pid(), socket.gethostname())
    status = jobs.status(job_id)
    assert status["state"] == "error"
    assert "trace.json" in status["error"] and "stopped before it finished" in status["error"]
    kept = Path(status["kept_at"])
    assert (kept / "trace.json").read_text() == "{}" and not upload.exists()
    assert jobs.status(job_id) == status  # written back: every worker now sees the same


def test_a_live_or_remote_job_stays_running(tmp_path: Path) -> None:
    jobs = IngestJobs(RunStore(tmp_path))
    job_id, upload = _running_job(jobs, os.getpid(), socket.gethostname())
    assert jobs.status(job_id)["state"] == "running"
    other_id, _ = _running_job(jobs, _dead_pid(), "another-host")
    assert jobs.status(other_id)["state"] == "running"  # another host's processes cannot be checked
    assert upload.exists()


def test_a_running_status_names_its_process(tmp_path: Path) -> None:
    jobs = IngestJobs(RunStore(tmp_path))
    upload = jobs.new_upload_folder()
    (upload / "bad.json").write_text("not json at all")
    job_id = jobs.run_sync(upload)
    status = jobs.status(job_id)
    assert status["state"] == "error" and "bad.json" in status["error"]
    started = jobs._running(upload, ["bad.json"], 0.0, "queued")
    assert (started["pid"], started["host"], started["upload"]) == (os.getpid(), socket.gethostname(), str(upload))


WORKER_DIES = """
import json, os, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from dashboard.ingest.jobs import IngestJobs
from dashboard.store import RunStore
jobs = IngestJobs(RunStore({data!r}))
job_id = jobs.start(Path({upload!r}), name="outlived")
print(job_id, flush=True)
while json.loads((jobs.jobs_dir / (job_id + ".json")).read_text())["pid"] == os.getpid():
    time.sleep(0.005)
os._exit(0)  # the worker dies while its child parses
"""


def test_a_child_that_outlives_its_worker_finishes_the_job_itself(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    jobs = IngestJobs(store)
    upload = jobs.new_upload_folder()
    (upload / "planner.dot").write_bytes(b'digraph planner {\n  a [label="load"];\n  a -> b;\n}\n')
    repo = str(Path(__file__).resolve().parents[1])
    worker = subprocess.run([sys.executable, "-c", WORKER_DIES.format(repo=repo, data=str(store.data_dir),
                                                                       upload=str(upload))],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
    job_id = worker.stdout.strip()
    status = jobs.status(job_id)
    assert status["state"] == "running", status  # the worker is gone, its child (named in the status) is not
    deadline = time.monotonic() + 60
    while (status := jobs.status(job_id))["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status["state"] == "done", status
    assert status["run_id"].startswith("outlived-") and store.exists(status["run_id"])
    assert not upload.exists()


def test_a_job_read_all_the_time_is_never_taken_for_orphaned(tmp_path: Path) -> None:
    # Between the child's exit and the outcome being written, the status must name a live process:
    # a reader polling then (the page polls every 0.4 s, from any worker) must not fail the job.
    jobs = IngestJobs(RunStore(tmp_path / "data"))
    for attempt in range(4):
        upload = jobs.new_upload_folder()
        (upload / "planner.dot").write_bytes(b'digraph planner {\n  a [label="load"];\n  a -> b;\n}\n')
        job_id = jobs.start(upload, name=f"polled{attempt}")
        deadline = time.monotonic() + 60
        while (status := jobs.status(job_id))["state"] == "running" and time.monotonic() < deadline:
            pass  # as often as possible
        assert status["state"] == "done", status
