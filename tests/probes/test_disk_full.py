"""Probe 7 of issue 35: a full disk, on a small size-limited folder (a tmpfs mounted for the test).

A 77 MiB upload left a 26 MB partial file in `uploads/<uuid>/`, not listed under failed uploads and never
removed; a 38 MiB one said "could not be read" (it was a write that failed) and left a zero-byte
`.jobs/…` file; the CLI left a `.staging/*.owner` marker.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.gen_kineto_trace import write_trace
from dashboard.collectors.failures import ingest_failure
from dashboard.ingest.jobs import IngestJobs
from dashboard.ingest.pipeline import ingest_paths
from dashboard.settings import Settings
from dashboard.store import RunStore

MIB = 1024 * 1024
DISK_MB = 24


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A DISK_MB MiB file system (tmpfs), empty; skipped where this machine cannot mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def leftovers(data: Path) -> list[str]:
    """Files that a failed write may have left: partial uploads, job files, staging and temporary files."""
    found = []
    for folder in ("uploads", ".jobs", ".staging", ".tmp"):
        root = data / folder
        if not root.exists():
            continue
        for path in root.rglob("*"):
            if path.is_file() and "failed" not in path.relative_to(data).parts:
                found.append(str(path.relative_to(data)))
    return sorted(found)


def wait(jobs: IngestJobs, job_id: str) -> dict:
    deadline = time.monotonic() + 120
    while (status := jobs.status(job_id))["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    return status


def test_an_upload_bigger_than_the_free_space_is_refused_in_words_and_leaves_nothing(small_disk: Path) -> None:
    """What the upload route (`PUT /uploads/<id>/files`) does with the request's body stream."""
    from dashboard.ingest.uploads import UploadFailed, Uploads

    data = small_disk / "data"
    uploads = Uploads(IngestJobs(RunStore(data), Settings(data_dir=data, seed_demo=False)), max_bytes=512 * MIB)
    upload = uploads.new()
    with pytest.raises(UploadFailed) as refused:
        uploads.receive(upload, "big.json", io.BytesIO(os.urandom(40 * MIB)), 40 * MIB)
    assert refused.value.status == 507
    message = str(refused.value)
    assert message.startswith("no space left on the server while writing big.json (") and "of 40 MiB" in message
    assert str(data) not in message and "Errno" not in message
    assert leftovers(data) == [] and not any((data / "uploads").iterdir())  # the partial file is gone
    with pytest.raises(UploadFailed):  # nothing left to ingest
        uploads.ingest(upload, None)


def test_a_run_that_does_not_fit_fails_in_words_keeps_the_upload_and_leaves_nothing(small_disk: Path,
                                                                                    tmp_path: Path) -> None:
    data = small_disk / "data"
    trace = write_trace(tmp_path / "trace.json", kernels=12_000)  # ~10 MiB: the upload fits, its run does not
    jobs = IngestJobs(RunStore(data), Settings(data_dir=data, seed_demo=False))
    upload = jobs.new_upload_folder()
    shutil.copyfile(trace, upload / "trace.json")
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * max(0, shutil.disk_usage(small_disk).free - 6 * MIB))  # 6 MiB left
    status = wait(jobs, jobs.start(upload, name="too-big"))
    assert status["state"] == "error", status
    assert status["error"].startswith("trace.json: no space left on the server while writing the run"), status
    assert "could not be read" not in status["error"] and str(data) not in status["error"]
    assert leftovers(data) == [f".jobs/{path.name}" for path in sorted((data / ".jobs").glob("*.json"))]
    assert all(path.stat().st_size > 0 for path in (data / ".jobs").iterdir())  # no empty status file
    (failed,) = jobs.failed_uploads()  # listed: Retry / Delete
    assert failed["files"] == ["trace.json"] and "no space left" in failed["error"]
    filler.unlink()  # room again: Retry works
    again = wait(jobs, jobs.retry(failed["job_id"]))
    assert again["state"] == "done", again
    assert jobs.failed_uploads() == []


def test_the_command_line_leaves_no_staging_marker_on_a_full_disk(small_disk: Path, tmp_path: Path) -> None:
    data = small_disk / "data"
    trace = write_trace(tmp_path / "trace.json", kernels=40_000)  # ~33 MiB: its copy does not fit
    with pytest.raises(OSError) as failed:
        ingest_paths(RunStore(data), [trace], name="cli")
    assert leftovers(data) == [], leftovers(data)
    assert ingest_failure(failed.value, str(trace)) == (f"{trace}: no space left on the disk while writing the run; "
                                                         "nothing half-written was kept")
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(trace), "--data", str(data)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 1 and "no space left on the disk while writing the run" in done.stderr, done.stderr
    assert leftovers(data) == [], leftovers(data)
