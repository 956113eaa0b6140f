"""Decode a large Kineto trace on every core.

Decoding is CPU-bound (msgspec into small structs, then columns), and a trace
is one JSON document, so a single process tops out well below disk speed.
Here the `traceEvents` array is cut into byte ranges that worker processes
(`worker`) decode independently, each mapping the file itself, so no
event bytes are copied between processes and the parent never reads the body:

1. the array's span is found without parsing the body: the `"traceEvents": [`
   key near the head, and the `]` near the end such that the head, an empty
   array and the tail decode as a trace document (this also yields the
   top-level metadata);
2. the body is cut into tasks at `}` `,` `{` boundaries; each worker decodes
   its tasks in chunks exactly like the single-process path (`decode`)
   and writes polars frames as Arrow IPC files;
3. the frames are joined in file order, so the result equals the
   single-process decode of the same file.

Any surprise (a cut inside a string, a span the checks do not confirm, a
worker that fails) returns None and the caller decodes the file in one
process, which also produces the precise error messages for broken files.
Gzip traces are decompressed once to a temporary file that the workers map.
"""

from __future__ import annotations

import logging
import mmap
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zlib
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

import dashboard
from dashboard.collectors.base import is_gzip, open_source
from dashboard.collectors.kineto.decode import CHUNK_BYTES, DecodedTrace, event_spans, top_fields
from dashboard.collectors.kineto.event_types import TOP_DECODER
from dashboard.collectors.kineto.worker import KINDS, decode_range, read_result

_log = logging.getLogger(__name__)
_WORKER = "dashboard.collectors.kineto.worker"

# Below this, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 48 * 1024 * 1024
TASK_BYTES = 32 * 1024 * 1024
MAX_WORKERS = 8
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_LAST_EVENT_END = re.compile(rb"\}\s*\]")
_HEAD_BYTES = 16 * 1024 * 1024
_TAIL_BYTES = 1024 * 1024
_TAIL_CANDIDATES = 64


def worker_count() -> int:
    """Processes to decode with: the CPUs this process may use, `DASHBOARD_INGEST_WORKERS` to override."""
    configured = os.environ.get("DASHBOARD_INGEST_WORKERS", "")
    if configured.isdigit():
        return max(1, int(configured))
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))


def _find_span(data: mmap.mmap) -> tuple[int, int, msgspec.Struct] | None:
    """(position of `[`, position of its `]`, top-level struct) when the checks confirm them.

    The closing bracket follows the last event's `}`. Of the `}` `]` pairs near
    the end, the first one after which the rest of the file completes the
    document is taken: a later pair can also complete it (a list of objects
    among top-level keys after the events), an earlier one sits inside the
    last event.
    """
    key = _KEY.search(data, 0, min(len(data), _HEAD_BYTES))
    if key is None:
        return None
    open_at = key.end() - 1
    head = data[3 if data[:3] == b"\xef\xbb\xbf" else 0 : open_at]  # JSON parsers refuse a byte order mark
    floor = max(open_at + 1, len(data) - _TAIL_BYTES)
    closers = [match.end() - 1 for match in _LAST_EVENT_END.finditer(data, floor)][-_TAIL_CANDIDATES:]
    for close_at in closers:
        try:
            top = TOP_DECODER.decode(head + b"[]" + data[close_at + 1 :])
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            continue
        if bytes(top.traceEvents) == b"[]":
            return open_at, close_at, top
    return None


def _gzip_size_hint(path: Path) -> int:
    """The uncompressed size from the gzip trailer (modulo 4 GiB, so only a hint)."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size < 4:
            return 0
        handle.seek(size - 4)
        return max(int.from_bytes(handle.read(4), "little"), size)


def _plain_file(path: Path, workdir: Path) -> Path | None:
    """The trace as a plain file the workers can map: itself, or a decompressed copy in `workdir`."""
    if not is_gzip(path):
        return path
    plain = workdir / "trace.json"
    try:
        with open(plain, "wb") as out, open_source(path) as source:
            shutil.copyfileobj(source, out, 8 * 1024 * 1024)
    except (OSError, EOFError, zlib.error):
        return None  # broken gzip or a full disk: the single-process path reports it properly
    return plain


def decode_parallel(
    path: Path,
    progress: Callable[[float], None] = lambda fraction: None,
    *,
    min_bytes: int = PARALLEL_MIN_BYTES,
    task_bytes: int = TASK_BYTES,
    chunk_bytes: int | None = None,
    workers: int | None = None,
) -> DecodedTrace | None:
    """Decode `path` across worker processes; None when it is small or the fast checks fail.

    With one CPU this process decodes every range itself: the file stays mapped and each range's pages
    go back once decoded, where the single-process path holds the whole file in memory (a 262 MB trace
    peaked at 1.8x the file that way, against 1.4x here).
    """
    workers = worker_count() if workers is None else workers
    size = _gzip_size_hint(path) if is_gzip(path) else path.stat().st_size
    if size < min_bytes:
        return None
    workdir = Path(tempfile.mkdtemp(prefix="kineto-decode-"))
    try:
        plain = _plain_file(path, workdir)
        if plain is None:
            return None
        located = _locate(plain, task_bytes, workers)
        if located is None:
            return None
        top, tasks = located
        chunk = chunk_bytes or min(task_bytes, CHUNK_BYTES)
        results = _Dispatch(path, plain, tasks, chunk, workdir, progress).run(workers - 1)
        return None if results is None else _joined(path, top, results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _locate(plain: Path, task_bytes: int, processes: int) -> tuple[msgspec.Struct, list[tuple[int, int]]] | None:
    with open(plain, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            span = _find_span(data)
            if span is None:
                return None
            open_at, close_at, top = span
            return top, balanced_tasks(data, list(event_spans(data, open_at + 1, close_at, task_bytes)), processes,
                                       task_bytes)


def balanced_tasks(data: Any, spans: list[tuple[int, int]], processes: int,
                   task_bytes: int) -> list[tuple[int, int]]:
    """Big tasks first, small ones last, so that every process runs dry at about the same time.

    When the queue empties, a worker may still hold two big tasks (its current and the
    next one) while this process idles: up to a second at 32 MB tasks. Re-cutting the
    last tasks, the ones still in flight at that point, into small pieces bounds the
    wait by a couple of small tasks.
    """
    tail = min(len(spans), 2 * processes)
    small = max(task_bytes // 8, 64 * 1024)
    ends = [piece for start, stop in spans[len(spans) - tail:] for piece in event_spans(data, start, stop, small)]
    return spans[:len(spans) - tail] + ends


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    # The workers must import this very package, wherever it was imported from.
    package_root = str(Path(dashboard.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH", "")]))
    # Each worker's polars work is small per chunk; one thread each avoids
    # oversubscribing the cores the workers already fill.
    env["POLARS_MAX_THREADS"] = "1"
    return env


_Result = tuple[dict[str, pl.DataFrame], dict[str, Any]]


class _Dispatch:
    """Tasks handed out on demand to worker processes and to this process itself.

    This process decodes too (it has everything imported already and keeps its
    results without a round trip through files); each worker holds two tasks
    at a time so it never waits for the next one.
    """

    def __init__(
        self,
        path: Path,
        plain: Path,
        tasks: list[tuple[int, int]],
        chunk_bytes: int,
        workdir: Path,
        progress: Callable[[float], None],
    ) -> None:
        self.path, self.plain, self.tasks, self.chunk_bytes, self.workdir = path, plain, tasks, chunk_bytes, workdir
        self.progress = progress
        self.pending = deque(range(len(tasks)))
        self.lock = threading.Lock()
        self.finished: queue.Queue[int | None] = queue.Queue()
        self.results: dict[int, _Result] = {}
        self.done_bytes = 0
        self.total_bytes = max(1, sum(stop - start for start, stop in tasks))

    def _take(self) -> int | None:
        with self.lock:
            return self.pending.popleft() if self.pending else None

    def _done(self, index: int) -> None:
        start, stop = self.tasks[index]
        self.done_bytes += stop - start
        self.progress(self.done_bytes / self.total_bytes)

    def _send(self, process: subprocess.Popen[str]) -> None:
        assert process.stdin is not None
        index = self._take()
        try:
            if index is None:
                process.stdin.close()
                return
            start, stop = self.tasks[index]
            process.stdin.write(f"{start} {stop} {index}\n")
            process.stdin.flush()
        except OSError:
            pass  # the worker died; its exit status tells

    def _feed(self, process: subprocess.Popen[str]) -> None:
        """Relay a worker's finished tasks and give it the next one; None when it has exited."""
        assert process.stdout is not None
        self._send(process)
        self._send(process)
        for line in process.stdout:
            if line.strip().isdigit():
                self.finished.put(int(line))
                self._send(process)
        process.wait()
        self.finished.put(None)

    def _start(self, count: int) -> list[subprocess.Popen[str]]:
        processes = []
        env = _worker_env()
        command = [sys.executable, "-m", _WORKER, str(self.plain), str(self.workdir), str(self.chunk_bytes)]
        for worker in range(count):
            with open(self.workdir / f"worker-{worker}.log", "wb") as log:
                process = subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env
                )
            processes.append(process)
            threading.Thread(target=self._feed, args=(process,), daemon=True).start()
        return processes

    def run(self, worker_processes: int) -> list[_Result] | None:
        """Every task's frames and counts in file order; None when any task failed."""
        processes = self._start(worker_processes)
        running = len(processes)
        try:
            # A private mapping: chunks are bracketed in place (see worker.decode_range).
            with open(self.plain, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) as data:
                while (index := self._take()) is not None:
                    start, stop = self.tasks[index]
                    try:
                        self.results[index] = decode_range(data, start, stop, self.chunk_bytes)
                    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                        # A wrong cut, or content the single-process path repairs or names precisely.
                        return None
                    self._done(index)
                    running = self._drain(running, block=False)
            while running:
                running = self._drain(running, block=True)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait()
        if any(process.returncode != 0 for process in processes):
            self._log_failures(processes)
            return None
        return [self.results[index] for index in range(len(self.tasks))]

    def _drain(self, running: int, *, block: bool) -> int:
        """Account for tasks the workers finished; the number of workers still running."""
        while running:
            try:
                index = self.finished.get(block=block)
            except queue.Empty:
                break
            if index is None:
                running -= 1
            else:
                # Read a worker's result as soon as it is there, while the other processes
                # still decode, rather than all of them after the last task.
                self.results[index] = read_result(self.workdir, index)
                self._done(index)
            block = False
        return running

    def _log_failures(self, processes: list[subprocess.Popen[str]]) -> None:
        for worker, process in enumerate(processes):
            if process.returncode != 0:
                detail = (self.workdir / f"worker-{worker}.log").read_text(errors="replace")[-2000:]
                _log.warning(
                    "%s: decode worker exited with %s; decoding in one process: %s",
                    self.path,
                    process.returncode,
                    detail,
                )


def _joined(path: Path, top: msgspec.Struct, results: list[_Result]) -> DecodedTrace:
    trace = DecodedTrace(path=path, top=top_fields(top), frames={})
    parts: dict[str, list[pl.DataFrame]] = {kind: [] for kind in KINDS}
    for frames, counts in results:
        trace.events += counts["events"]
        trace.ignored += counts["ignored"]
        trace.problems.update(counts["problems"])
        trace.categories.update(counts["categories"])
        trace.lenient = trace.lenient or counts["lenient"]
        for kind, frame in frames.items():
            parts[kind].append(frame)
    trace.frames = {
        kind: pl.concat(found, how="diagonal_relaxed") if found else pl.DataFrame() for kind, found in parts.items()
    }
    return trace
