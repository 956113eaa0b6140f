"""Ingest in a child process with a wall-time and memory budget, so no input can take a server hostage.

A parser that runs away (a pathological regular expression, a decompression
bomb, a bug) must cost the server one child process, never a worker: the
child runs `pipeline.ingest_paths`, reports progress itself, and sends its outcome
back on a pipe. The parent only waits (in a thread that holds no lock and
no GIL while it waits), and kills the child's whole process group when

- the parse has run longer than `Budget.seconds` (counted from the moment the
  child has loaded its modules and starts reading, so a tiny budget still
  measures parsing, not Python's start-up), or
- the resident memory of the child and its own children (the Kineto
  collector decodes big traces in helper processes) exceeds
  `Budget.memory_mb` (read from /proc every 50 ms; where /proc is missing, as
  on macOS, only the time budget applies).

- the temporary disk it fills (its own `DATA/.tmp/child-<host>-<pid>/`, which
  is its TMPDIR, plus the staging folders it owns) exceeds `Budget.disk_mb`.

A killed child's staging and temporary folders are removed at once (their owner
is gone). The budget scales with the bytes the parse will actually read: it
starts from the bytes on disk, and the child, before it parses, measures its
inputs (a gzip file decompressed as a stream and counted, with a hard cap on
how far it may expand: `input_size`) and reports the count, from which the
budget is scaled again. Never from a gzip trailer: the uploader writes that.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard.collectors.base import IngestError
from dashboard.ingest.allocator import ALLOCATOR_ENV, input_bytes, setting_for
from dashboard.ingest.child_temp import child_temp_dir, remove_child_temp
from dashboard.ingest.input_size import ExpansionLimit, weighted_bytes_on_disk
from dashboard.store import RunStore
from dashboard.store.owners import read_owner

MB = 1024 * 1024
# Importing polars and the collectors takes well under a second; this only catches a child that never starts.
STARTUP_SECONDS = 120.0
_POLL_SECONDS = 0.05
_DISK_POLL_SECONDS = 0.5
READY = b"ready\n"
SIZE_PREFIX = b"size "  # the child's report of the bytes it will read: `size <bytes>`


class BudgetExceeded(IngestError):
    """The child used more time or memory than its budget and was stopped."""


class ChildIngestFailed(Exception):
    """The child failed with an unexpected error (a parser bug); `kind` is the exception's type name."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True)
class Budget:
    """How long, how much memory and how much temporary disk one ingest may use; None means no limit."""

    seconds: float | None
    memory_mb: float | None
    # Where the limit is set, for the message when it is exceeded.
    seconds_hint: str = "--max-seconds"
    memory_hint: str = "--max-memory-mb"
    disk_mb: float | None = None
    disk_hint: str = "DASHBOARD_INGEST_MAX_DISK_MB"
    # How far a compressed input may expand before it is refused unparsed (input_size.py).
    expansion: ExpansionLimit = field(default_factory=ExpansionLimit)
    # The budget again for the MB the child measured it will read (None: this budget stays).
    rescale: Callable[[float], Budget] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class BudgetScale:
    """A budget as base + share per MB of input, or a fixed limit where one is set (0 turns one off)."""

    seconds_base: float
    seconds_per_mb: float
    memory_mb_base: float
    memory_mb_per_mb: float
    disk_mb_base: float = 256.0
    disk_mb_per_mb: float = 2.0
    fixed_seconds: float | None = None
    fixed_memory_mb: float | None = None
    fixed_disk_mb: float | None = None
    seconds_hint: str = "--max-seconds"
    memory_hint: str = "--max-memory-mb"
    disk_hint: str = "DASHBOARD_INGEST_MAX_DISK_MB"
    expansion: ExpansionLimit = field(default_factory=ExpansionLimit)

    def for_megabytes(self, size: float) -> Budget:
        def scaled(fixed: float | None, base: float, per_mb: float) -> float | None:
            return (fixed if fixed is not None else base + per_mb * size) or None

        return Budget(seconds=scaled(self.fixed_seconds, self.seconds_base, self.seconds_per_mb),
                      memory_mb=scaled(self.fixed_memory_mb, self.memory_mb_base, self.memory_mb_per_mb),
                      seconds_hint=self.seconds_hint, memory_hint=self.memory_hint,
                      disk_mb=scaled(self.fixed_disk_mb, self.disk_mb_base, self.disk_mb_per_mb),
                      disk_hint=self.disk_hint, expansion=self.expansion, rescale=self.for_megabytes)


def input_megabytes(paths: Sequence[Path]) -> float:
    """The inputs' size in MB as stored (a gzip file at its compressed size until the child has measured
    it), a tinygrad VIZ pickle at HEAVY_PICKLE_WEIGHT times it; links are not counted (not read)."""
    return weighted_bytes_on_disk(paths) / MB


def scaled_budget(paths: Sequence[Path], *, fixed_seconds: float | None, fixed_memory_mb: float | None,
                  seconds_base: float, seconds_per_mb: float, memory_mb_base: float,
                  memory_mb_per_mb: float, seconds_hint: str, memory_hint: str) -> Budget:
    """A fixed limit where one is set, else base + per-MB share of the input as stored; 0 turns a limit off.
    The child rescales it once it has measured what it will read (`Budget.rescale`)."""
    return BudgetScale(seconds_base, seconds_per_mb, memory_mb_base, memory_mb_per_mb, fixed_seconds=fixed_seconds,
                       fixed_memory_mb=fixed_memory_mb, seconds_hint=seconds_hint,
                       memory_hint=memory_hint).for_megabytes(input_megabytes(paths))


def resident_mb(pid: int) -> float | None:
    """A process's resident memory in MB, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                found.extend(int(child) for child in children.read().split())
        except (OSError, ValueError):
            continue
    return found


def tree_resident_mb(pid: int) -> float | None:
    """Resident memory of a process and all its descendants in MB, or None where it cannot be read."""
    own = resident_mb(pid)
    if own is None:
        return None
    total, pending, seen = own, _children(pid), {pid}
    while pending:
        child = pending.pop()
        if child in seen:
            continue
        seen.add(child)
        total += resident_mb(child) or 0.0
        pending.extend(_children(child))
    return total


def _child_env(paths: Sequence[Path]) -> dict[str, str]:
    # The child imports `dashboard` from where this process did, whatever its working directory.
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    # As the command line sets it for the same inputs (an ingest it runs under a budget already did).
    env.setdefault(ALLOCATOR_ENV, setting_for(input_bytes(paths)))
    return env


def _disk_bytes(folder: Path) -> int:
    """Bytes a folder takes on disk (allocated blocks: a sparse file counts what it holds)."""
    total = 0
    for root, _folders, names in os.walk(folder, followlinks=False):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def child_disk_bytes(data_dir: Path, pid: int) -> int:
    """Temporary disk an ingest child fills: its TMPDIR and the staging folders it owns."""
    total = _disk_bytes(child_temp_dir(data_dir, pid))
    staging = Path(data_dir) / ".staging"
    with contextlib.suppress(OSError):
        for marker in staging.glob("*.owner"):
            owner = read_owner(marker)
            if owner and owner.get("pid") == pid and owner.get("host") == socket.gethostname():
                total += _disk_bytes(marker.with_name(marker.name.removesuffix(".owner")))
    return total


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_in_child(data_dir: Path, paths: Sequence[Path], name: str | None, budget: Budget, *,
                 job: dict[str, Any] | None = None, debug: bool = False,
                 started: Callable[[int], None] | None = None,
                 ending: Callable[[], None] | None = None) -> str:
    """Ingest `paths` into `data_dir` in a child process within `budget`; return the run id.

    `job` (job_id, upload, files, name) makes the child write its progress to
    that job's status file; without it progress goes to stderr (the CLI).
    `started(pid)` is called as soon as the child exists, `ending()` before the
    child is reaped or killed (and again after a kill): a job's status must
    name a live process until its outcome is written, or a reader would take
    the job for orphaned.
    Raises BudgetExceeded, IngestError (the child's, same text) or ChildIngestFailed.
    """
    names = ", ".join(str(p) for p in paths)
    expansion = budget.expansion
    spec = {"data_dir": str(data_dir), "paths": [str(p) for p in paths], "name": name, "debug": debug,
            "job": job, "parent_pid": os.getpid(), "backstop_seconds": _backstop(budget),
            "expansion": {"ratio": expansion.ratio, "floor": expansion.floor, "absolute": expansion.absolute,
                          "hint": expansion.hint}}
    process = subprocess.Popen([sys.executable, "-m", "dashboard.ingest.child"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env=_child_env(paths), start_new_session=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        if started is not None:
            started(process.pid)
        # One line; stdin then stays open: the child waits for its end before it exits (see `_release`).
        process.stdin.write(json.dumps(spec).encode() + b"\n")
        process.stdin.flush()
        output = _watch(process, budget, names, Path(data_dir))
    except BaseException:  # a budget, Ctrl-C in the CLI, a worker shutting down: the child goes too
        if ending is not None:
            ending()
        _stop(process)
        _release(process)
        if ending is not None:
            ending()  # a status the child replaced just before it was killed names it again
        RunStore(data_dir).remove_stale_staging()
        remove_child_temp(Path(data_dir), process.pid)
        raise
    if ending is not None:
        ending()
    _release(process)
    process.wait()
    remove_child_temp(Path(data_dir), process.pid)  # the child removes it; a crashed one cannot
    return _outcome(_outcome_line(output), process.returncode, names)


def _release(process: subprocess.Popen[bytes]) -> None:
    """Let the child exit: it waits for the end of its stdin after writing its outcome, so that it is
    alive until `ending()` has taken the job back (a reader polling between the child's exit and that
    status would otherwise take the job for orphaned and fail it)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _backstop(budget: Budget) -> int:
    # If this process dies, nobody watches the child: it stops itself (SIGALRM) a while after its budget.
    return int(budget.seconds * 2 + 60) if budget.seconds else 0


def _lines_after_ready(output: bytes) -> list[bytes]:
    return output.partition(READY)[2].split(b"\n")


def _outcome_line(output: bytes) -> bytes:
    """The child's outcome: its one complete JSON line after `ready` (b"" when there is none)."""
    lines = _lines_after_ready(output)
    return next((line for line in lines[:-1] if line.startswith(b"{")), b"")


def _watch(process: subprocess.Popen[bytes], budget: Budget, names: str, data_dir: Path) -> bytes:
    assert process.stdout is not None
    stream = process.stdout.fileno()
    output = b""
    started = time.monotonic()
    ready_at: float | None = None
    disk_checked = 0.0
    rescaled = False
    while True:
        readable, _, _ = select.select([stream], [], [], _POLL_SECONDS)
        if readable:
            chunk = os.read(stream, 65536)
            if not chunk:
                return output  # the child has exited (or closed its end)
            output += chunk
        now = time.monotonic()
        if ready_at is None and READY in output:
            ready_at = now
        if ready_at is not None:
            lines = _lines_after_ready(output)
            if not rescaled and budget.rescale is not None:
                size = next((line for line in lines[:-1] if line.startswith(SIZE_PREFIX)), None)
                if size is not None:  # what the child measured it will read: the budget for that
                    budget, rescaled = budget.rescale(int(size[len(SIZE_PREFIX):]) / MB), True
            if any(line.startswith(b"{") for line in lines[:-1]):
                return output  # the outcome is complete: a run just published is never killed as "over budget"
        if ready_at is None and now - started > STARTUP_SECONDS:
            raise IngestError(names, f"the ingest process did not start within {STARTUP_SECONDS:g} s")
        if budget.seconds and ready_at is not None and now - ready_at > budget.seconds:
            raise BudgetExceeded(names, f"parsing took longer than its time budget of {budget.seconds:.3g} s "
                                        f"and was stopped (the limit is set by {budget.seconds_hint})")
        if budget.memory_mb:
            used = tree_resident_mb(process.pid)
            if used is not None and used > budget.memory_mb:
                raise BudgetExceeded(names, f"parsing needed more than its memory budget of "
                                            f"{budget.memory_mb:.0f} MB ({used:.0f} MB) and was stopped "
                                            f"(the limit is set by {budget.memory_hint})")
        if budget.disk_mb and now - disk_checked >= _DISK_POLL_SECONDS:
            disk_checked = now
            written = child_disk_bytes(data_dir, process.pid) / MB
            if written > budget.disk_mb:
                raise BudgetExceeded(names, f"parsing wrote more than its temporary-disk budget of "
                                            f"{budget.disk_mb:.0f} MB ({written:.0f} MB) and was stopped "
                                            f"(the limit is set by {budget.disk_hint})")


def ingest_error(outcome: dict[str, Any]) -> IngestError:
    """The child's IngestError again, its text exactly as the child had it."""
    error = IngestError(outcome["path"], outcome["problem"])
    if isinstance(outcome.get("message"), str):
        error.args = (outcome["message"],)
    return error


def _outcome(report: bytes, returncode: int, names: str) -> str:
    try:
        outcome = json.loads(report)
    except ValueError:
        outcome = None
    if not isinstance(outcome, dict):
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
        raise IngestError(names, f"the ingest process {how} before it finished; no run was written")
    if "run_id" in outcome:
        return str(outcome["run_id"])
    if "path" in outcome:
        raise ingest_error(outcome)
    if outcome.get("interrupted"):
        raise KeyboardInterrupt
    raise ChildIngestFailed(str(outcome.get("kind", "Exception")), str(outcome.get("error", "")))
