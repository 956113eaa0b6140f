"""Probe 4 of issue 35: a budget is never a number the uploader wrote.

The parse budget came from the gzip trailer's size field: a 1 MiB file with a forged trailer got 4,156 s
and 41,984 MB. A 1 MiB gzip that expands to 1 GiB took 18 s, peaked at 2.9 GB and wrote 1 GB of temporary
files before it failed.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from pathlib import Path

from dashboard.ingest.jobs import IngestJobs
from dashboard.settings import Settings
from dashboard.store import RunStore

EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"correlation": 1}}


def forged_trailer(path: Path) -> Path:
    """A ~1 MiB gzip trace whose trailer claims 4 GiB of content."""
    events = [dict(EVENT, ts=10 + i, name=f"kernel_{i * 7919 % 100_003}") for i in range(12_000)]
    data = bytearray(gzip.compress(json.dumps({"traceEvents": events}).encode(), 9))
    data[-4:] = (2**32 - 16).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def kineto_bomb(path: Path, gibibytes: int = 1) -> Path:
    """A valid trace of `gibibytes` GiB (two events and blanks between them, which JSON allows), compressed
    to about 1 MiB: deflate's best ratio (concatenated gzip members, as `cat a.gz b.gz` makes)."""
    member = gzip.compress(b" " * (64 * 2**20), 9)
    with open(path, "wb") as out:
        out.write(gzip.compress(b'{"schemaVersion": 1, "traceEvents": [' + json.dumps(EVENT).encode() + b",", 9))
        for _ in range(gibibytes * 16):
            out.write(member)
        out.write(gzip.compress(json.dumps(EVENT).encode() + b"]}", 9))
    return path


def test_a_forged_trailer_does_not_set_the_budget(tmp_path: Path) -> None:
    upload = tmp_path / "data" / "uploads" / "forged"
    upload.mkdir(parents=True)
    forged = forged_trailer(upload / "trace.json.gz")
    assert forged.stat().st_size < 2 * 2**20
    jobs = IngestJobs(RunStore(tmp_path / "data"), Settings(data_dir=tmp_path / "data", seed_demo=False))
    budget = jobs.budget_for([forged])
    assert budget.seconds is not None and budget.seconds < 100, budget
    assert budget.memory_mb is not None and budget.memory_mb < 1100, budget
    job = jobs.status(jobs.run_sync(upload))
    # zlib checks the trailer as it reads: the file is refused as damaged, its budget never grown by it.
    assert job["state"] == "error" and job["error"].startswith("trace.json.gz: "), job


def test_a_gzip_bomb_is_stopped_early_before_anything_parses_or_writes_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    upload = data / "uploads" / "bomb"
    upload.mkdir(parents=True)
    bomb = kineto_bomb(upload / "bomb.json.gz")
    assert bomb.stat().st_size < 2 * 2**20
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert decompressor.decompress(bomb.read_bytes()[:4096], 1024).startswith(b'{"schemaVersion"')  # real gzip
    jobs = IngestJobs(RunStore(data), Settings(data_dir=data, seed_demo=False))
    started = time.monotonic()
    job = jobs.status(jobs.run_sync(upload))
    seconds = time.monotonic() - started
    assert job["state"] == "error", job
    assert job["error"].startswith("bomb.json.gz: its compressed content expands to more than ") and (
        "DASHBOARD_INGEST_MAX_EXPANSION" in job["error"]), job
    assert seconds < 15, f"the bomb took {seconds:.1f} s to refuse"
    for folder in (".staging", ".tmp"):  # nothing was written out for it
        assert not (data / folder).exists() or not any(p.is_file() for p in (data / folder).rglob("*"))
    assert (data / "uploads" / "failed" / job_id_of(data) / "bomb.json.gz").is_file()  # kept: Retry / Delete


def job_id_of(data: Path) -> str:
    (status,) = (data / ".jobs").glob("*.json")
    return status.stem
