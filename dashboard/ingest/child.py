"""The child side of a budgeted ingest: `python -m dashboard.ingest.child` (started by `budget.py`).

It reads its task as one line of JSON on stdin, says `ready` on its private channel once
its modules are loaded (the parent starts the clock then), ingests, and
writes one JSON outcome on that channel: {"run_id"}, {"path", "problem"} for
an IngestError, {"kind", "error"} for anything else. The channel is a copy of
the original stdout; fd 1 itself is pointed at stderr, so nothing a library
prints can corrupt the outcome.

Progress goes to the job's status file (the web) or to stderr (the CLI). If
the parent has died meanwhile (a server worker restarted), nobody will read
the outcome, so the child does the job's bookkeeping itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, TextIO


def _channel() -> TextIO:
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(private, "w", encoding="utf-8")


# How much lower than the server's workers an ingest child runs (DASHBOARD_INGEST_NICE; `nice` units): a
# parse is batch work, pages and /health are people waiting. Its helper processes inherit it.
DEFAULT_NICE = 10


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.stdin.readline())
    channel = _channel()
    if spec.get("job"):  # an upload on a server; the command line's ingest is the user's own foreground work
        with contextlib.suppress(OSError, ValueError):
            os.nice(int(os.environ.get("DASHBOARD_INGEST_NICE", DEFAULT_NICE)))
    temp = _own_temp_dir(spec["data_dir"])
    try:
        _run(spec, channel)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _own_temp_dir(data_dir: str) -> Path:
    """Temporary files go under the data folder, in a folder the parent measures against the disk budget
    (set before polars or the Kineto decoder's helpers read TMPDIR)."""
    from dashboard.ingest.child_temp import child_temp_dir

    temp = child_temp_dir(data_dir, os.getpid())
    try:
        temp.mkdir(parents=True, exist_ok=True)
    except OSError:  # a full disk: the ingest will say so where it writes; temporary files stay where they were
        return temp
    os.environ["TMPDIR"] = os.environ["POLARS_TEMP_DIR"] = str(temp)
    tempfile.tempdir = None  # read TMPDIR again
    return temp


def _run(spec: dict[str, Any], channel: TextIO) -> None:
    if spec.get("backstop_seconds"):
        # Default action (terminate) even inside C code that never returns to Python.
        signal.alarm(int(spec["backstop_seconds"]))

    from dashboard.ingest.jobs import IngestJobs, throttled_status
    from dashboard.ingest.progress import StderrProgress
    from dashboard.store import RunStore

    store = RunStore(spec["data_dir"])
    job = spec.get("job")
    jobs = IngestJobs(store)
    progress = throttled_status(jobs, job) if job else StderrProgress("ingest")
    try:
        channel.write("ready\n")
        channel.flush()
    except BrokenPipeError:
        pass  # the parent is gone already: finish the job alone (below)
    outcome = _ingest(store, spec, progress, channel)
    if isinstance(progress, StderrProgress):
        progress.done()
    if job and os.getppid() != spec.get("parent_pid"):
        jobs.finish(job, outcome.get("run_id"), None if "run_id" in outcome else _failure(outcome))
    with contextlib.suppress(BrokenPipeError, OSError):
        channel.write(json.dumps(outcome) + "\n")
        channel.close()
    # Alive until the parent has taken the job back from this process (it then closes stdin; a parent
    # that died closes it too): see `budget._release`.
    with contextlib.suppress(OSError, ValueError):
        sys.stdin.read()


def _ingest(store: Any, spec: dict[str, Any], progress: Any, channel: TextIO) -> dict[str, Any]:
    from dashboard.collectors.base import IngestError
    from dashboard.ingest.input_size import ExpansionLimit, measured_bytes
    from dashboard.ingest.jobs import disk_full_in, write_problem
    from dashboard.ingest.pipeline import ingest_paths

    paths = [Path(p) for p in spec["paths"]]
    try:
        if spec.get("expansion") is not None:
            # What the parse will read, counted (gzip decompressed as a stream, capped): the parent scales
            # the budget to it. A bomb stops here, before anything parses it or writes it out.
            size = measured_bytes(paths, ExpansionLimit(**spec["expansion"]))
            with contextlib.suppress(BrokenPipeError, OSError):
                channel.write(f"size {size}\n")
                channel.flush()
        return {"run_id": ingest_paths(store, paths, name=spec.get("name"), progress=progress)}
    except KeyboardInterrupt:
        return {"interrupted": True}
    except Exception as exc:
        _log(spec)
        full = disk_full_in(exc)
        if full is not None:  # whatever was writing (the run's tables, its copy, a temporary file): say so
            names = ", ".join(str(path) for path in paths)
            problem = write_problem(full, "the run (its tables and its copy of the inputs)")
            return {"path": names, "problem": problem, "message": f"{names}: {problem}"}
        if isinstance(exc, IngestError):
            return {"path": exc.path, "problem": exc.problem, "message": str(exc)}
        return {"kind": type(exc).__name__, "error": str(exc)}  # a parser bug: named and reported, never lost


def _log(spec: dict[str, Any]) -> None:
    # The traceback goes to stderr under --debug and always into a server's log.
    if spec.get("debug") or spec.get("job"):
        traceback.print_exc(file=sys.stderr)


def _failure(outcome: dict[str, Any]) -> Exception:
    from dashboard.ingest.budget import ChildIngestFailed, ingest_error

    if "path" in outcome:
        return ingest_error(outcome)
    if outcome.get("interrupted"):
        return ChildIngestFailed("KeyboardInterrupt", "interrupted")
    return ChildIngestFailed(str(outcome.get("kind")), str(outcome.get("error")))


if __name__ == "__main__":
    main()
