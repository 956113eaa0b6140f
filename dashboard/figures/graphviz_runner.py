"""Running `dot` on a server: one bounded queue for every worker, answers kept on disk, no orphans.

Every graph of a many-graph DOT file used to be a new `dot` run of the whole file, cached per worker:
a dozen requests for different graphs of one file ran a dozen `dot`s at once and held every worker
thread (and `/health`) for a minute, and a `dot` whose worker was killed ran on as an orphan. Now:

- **One run per file, kept on disk.** `dot` draws every graph of the text at once; the sanitised
  drawings (or the one-line problem: a timeout is not retried on every view) are written to
  `<data>/.cache/graphviz/<sha256 of the text>.json` and every worker reads them from there.
  A run's sources never change, so the entry never goes stale; the oldest are pruned past
  `MAX_CACHE_FILES`.
- **One bounded queue per server.** `RUNNING` slots and `WAITING` places are lock files
  (`filelock`, an advisory `flock`, released by the kernel when a process dies), shared by every
  gunicorn worker of the data folder. A request takes a place or is told at once that Graphviz is
  busy (HTTP 503); a place waits at most `WAIT_SECONDS` for a slot (a waiting request holds a worker
  thread, and requests behind it in that worker's queue wait too). Two requests for the same file
  wait on one lock and the second reads the first's answer, or is told to try again shortly.
- **No orphans.** `dot` runs in its own process group, with the parent-death signal set to SIGKILL
  (`setpriv --pdeathsig KILL`: the kernel kills it when the thread that started it dies, whatever
  kills the worker) and a CPU-time limit a little over the timeout (`prlimit --cpu`: the kernel stops
  it even if both other guards fail). Without util-linux (macOS) only the timeout applies.

Without `configure` (the command line, tests) the queue is per process and the answers are kept in
memory (a few entries).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

RUNNING = 2  # `dot` processes at once per server
WAITING = 1  # requests that may wait for one of them (each holds a server thread); more are told "busy"
# A waiting request holds a server thread, and gunicorn queues other requests behind busy threads: it
# waits briefly, then is told "busy" (the drawing, once made, is served from disk to the next try).
WAIT_SECONDS = 3.0
MAX_CACHE_FILES = 2000
_MEMORY_ENTRIES = 8
_POLL_SECONDS = 0.1


class GraphvizBusy(RuntimeError):
    """Every place in the queue is taken: try again in a moment."""


@dataclass
class _Config:
    cache_dir: Path | None = None
    running: int = RUNNING
    waiting: int = WAITING
    wait_seconds: float = WAIT_SECONDS


_config = _Config()
_local_slots = threading.BoundedSemaphore(RUNNING)
_memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
_memory_lock = threading.Lock()


def configure(cache_dir: Path | None, running: int = RUNNING, waiting: int = WAITING,
              wait_seconds: float = WAIT_SECONDS) -> None:
    """Share the queue and the answers with every process using `cache_dir` (a server's data folder)."""
    global _config, _local_slots
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        (cache_dir / "locks").mkdir(exist_ok=True)
    _config = _Config(cache_dir, max(1, running), max(0, waiting), wait_seconds)
    _local_slots = threading.BoundedSemaphore(_config.running)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ---- the answers ---------------------------------------------------------------
def cached(key: str) -> dict[str, Any] | None:
    """The kept answer for a text: {"documents": [...]} or {"problem": ..., "missing": bool}."""
    if _config.cache_dir is None:
        with _memory_lock:
            if key in _memory:
                _memory.move_to_end(key)
                return _memory[key]
        return None
    try:
        return json.loads((_config.cache_dir / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def keep(key: str, answer: dict[str, Any]) -> None:
    if _config.cache_dir is None:
        with _memory_lock:
            _memory[key] = answer
            while len(_memory) > _MEMORY_ENTRIES:
                _memory.popitem(last=False)
        return
    target = _config.cache_dir / f"{key}.json"
    temporary = target.with_name(f".{key}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_text(json.dumps(answer), encoding="utf-8")
        os.replace(temporary, target)
    except OSError:  # a full disk: the answer is not kept, the page still gets it
        temporary.unlink(missing_ok=True)
        return
    _prune(_config.cache_dir)


def _prune(folder: Path) -> None:
    entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json")]
    if len(entries) <= MAX_CACHE_FILES:
        return
    entries.sort(key=lambda entry: entry.stat().st_mtime)
    for entry in entries[: len(entries) - MAX_CACHE_FILES]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)


# ---- the queue -------------------------------------------------------------------
@contextlib.contextmanager
def _file_slot(names: list[str], deadline: float | None) -> Iterator[bool]:
    """Hold one of the lock files `names` (under the cache folder), waiting until `deadline` (None:
    only if one is free now); yields False when none could be taken."""
    assert _config.cache_dir is not None
    locks = [FileLock(_config.cache_dir / "locks" / name) for name in names]
    while True:
        for lock in locks:
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue
            try:
                yield True
            finally:
                lock.release()
            return
        if deadline is None or time.monotonic() >= deadline:
            yield False
            return
        time.sleep(_POLL_SECONDS)


@contextlib.contextmanager
def _local_slot(deadline: float) -> Iterator[bool]:
    taken = _local_slots.acquire(timeout=max(0.0, deadline - time.monotonic()))
    try:
        yield taken
    finally:
        if taken:
            _local_slots.release()


def answer_for(text: str, draw_all: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The kept answer for `text`, or `draw_all(text)` run in a queue slot and kept; GraphvizBusy when
    the queue is full or no slot came free in time."""
    key = text_key(text)
    found = cached(key)
    if found is not None:
        return found
    deadline = time.monotonic() + _config.wait_seconds
    if _config.cache_dir is None:
        with _local_slot(deadline) as taken:
            if not taken:
                raise GraphvizBusy(_busy_message())
            found = cached(key)
            if found is None:
                found = draw_all(text)
                keep(key, found)
            return found
    places = [f"place-{i}.lock" for i in range(_config.running + _config.waiting)]
    with _file_slot(places, None) as placed:
        if not placed:
            raise GraphvizBusy(_busy_message())
        # One lock per first byte of the key: a few files, never removed (removing a lock file others may
        # be waiting on would let two holders in); two different texts rarely share one.
        same_text = FileLock(_config.cache_dir / "locks" / f"text-{key[:2]}.lock")
        try:
            same_text.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except Timeout:
            raise GraphvizBusy(_busy_message()) from None
        try:
            found = cached(key)  # drawn by another request while this one waited
            if found is not None:
                return found
            with _file_slot([f"run-{i}.lock" for i in range(_config.running)], deadline) as running:
                if not running:
                    raise GraphvizBusy(_busy_message())
                found = draw_all(text)
            keep(key, found)
            return found
        finally:
            same_text.release()


def _busy_message() -> str:
    return (f"Graphviz is busy drawing graphs on this server ({_config.running} at a time); "
            "try again in a moment")


# ---- the process -------------------------------------------------------------------
def _guarded(binary: str, timeout: float) -> list[str]:
    """`dot -Tsvg`, killed by the kernel when its parent dies and past a CPU-time limit (where util-linux is)."""
    command = [binary, "-Tsvg"]
    prlimit, setpriv = shutil.which("prlimit"), shutil.which("setpriv")
    if prlimit:
        cpu = int(timeout) + 5
        command = [prlimit, f"--cpu={cpu}:{cpu + 1}", "--", *command]
    if setpriv:
        command = [setpriv, "--pdeathsig", "KILL", "--", *command]
    return command


@dataclass(frozen=True)
class DotOutput:
    returncode: int
    stdout: bytes
    stderr: bytes


class DotTimedOut(RuntimeError):
    pass


def run_dot_process(binary: str, data: bytes, timeout: float) -> DotOutput:
    """`dot -Tsvg` on `data` in its own process group, GV_FILE_PATH confined to an empty folder; the
    whole group is killed at `timeout` (DotTimedOut)."""
    with tempfile.TemporaryDirectory(prefix="dashboard-gv-") as empty:
        env = {"PATH": os.environ.get("PATH", ""), "GV_FILE_PATH": empty, "HOME": empty, "LANG": "C.UTF-8"}
        process = subprocess.Popen(_guarded(binary, timeout), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=env, process_group=0)
        try:
            stdout, stderr = process.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise DotTimedOut from None
        except BaseException:
            _kill_group(process)
            raise
    return DotOutput(process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.communicate()
