"""Background ingest jobs whose progress any server worker can read.

The upload callback starts a job and returns at once; the page polls the
job's status file. Status lives on disk (not in process memory) so several
gunicorn workers sharing one data folder all see the same progress.

The parse itself runs in a child process with a time and memory budget
(`budget.py`): a runaway parser costs that child, never a worker, and the
job fails with a message naming the files and the limit. The child writes the
job's progress; the worker's thread only waits for it and records the outcome.

A running job names the process and host doing it. A process killed mid-ingest
(a restart, `--max-requests` recycling, the out-of-memory killer) cannot say
so itself; the next reader of its status on the same host finds the process
gone, moves the upload to `uploads/failed/<job>/` and reports the job failed.
A failed upload stays there until a user retries or deletes it from the runs page.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from dashboard.collectors.base import ProgressFn
from dashboard.collectors.failures import ingest_failure
from dashboard.ingest.budget import Budget, BudgetScale, input_megabytes, run_in_child
from dashboard.ingest.input_size import ExpansionLimit
from dashboard.ingest.progress import PhaseLog
from dashboard.settings import Settings
from dashboard.store import RunStore
from dashboard.store.owners import owner_is_gone

_log = logging.getLogger(__name__)

_JOB_ID_CHARS = set("0123456789abcdef")
# An empty upload folder younger than this may be one another worker is about to fill.
EMPTY_UPLOAD_GRACE_SECONDS = 600.0
# An upload still being received (`uploads/<id>.receiving/`, see uploads.py) that got no byte for this
# long was abandoned (the browser closed between its requests): it is removed.
ABANDONED_SECONDS = 3600.0
RECEIVING_SUFFIX = ".receiving"
_DISCARDING = ".deleting-"


class JobNotStarted(RuntimeError):
    """The job could not be recorded (a full disk): the message says so in one line; the upload is kept."""


def write_problem(exc: OSError, what: str) -> str:
    """A failed write in words (never the server's path): "no space left on the server while writing …"."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the server while writing {what}; nothing half-written was kept"
    return f"the server could not write {what} ({exc.strerror or 'write error'}); nothing half-written was kept"


def disk_full_in(exc: BaseException) -> OSError | None:
    """The out-of-space error behind `exc` (itself, or what it was raised from), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return current
        current = current.__cause__ or current.__context__
    return None


def _is_job_id(text: object) -> bool:
    return isinstance(text, str) and len(text) == 32 and set(text) <= _JOB_ID_CHARS


class IngestJobs:
    def __init__(self, store: RunStore, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = settings or Settings()
        self.jobs_dir = store.data_dir / ".jobs"
        self.uploads_dir = store.data_dir / "uploads"

    def budget_for(self, files: list[Path]) -> Budget:
        """The time, memory and temporary disk an ingest of `files` may use (settings.py: DASHBOARD_INGEST_*):
        scaled to the files as stored, and again by the child to what it measured it will read."""
        s = self.settings
        scale = BudgetScale(
            s.ingest_seconds_base, s.ingest_seconds_per_mb, s.ingest_memory_mb_base, s.ingest_memory_mb_per_mb,
            s.ingest_disk_mb_base, s.ingest_disk_mb_per_mb, fixed_seconds=s.ingest_max_seconds,
            fixed_memory_mb=s.ingest_max_memory_mb, fixed_disk_mb=s.ingest_max_disk_mb,
            seconds_hint="DASHBOARD_INGEST_MAX_SECONDS", memory_hint="DASHBOARD_INGEST_MAX_MEMORY_MB",
            disk_hint="DASHBOARD_INGEST_MAX_DISK_MB", expansion=ExpansionLimit(ratio=s.ingest_max_expansion))
        return scale.for_megabytes(input_megabytes(files))

    def new_upload_folder(self) -> Path:
        """A fresh folder for one upload's files."""
        folder = self.uploads_dir / uuid.uuid4().hex
        folder.mkdir(parents=True)
        return folder

    def _status_path(self, job_id: str) -> Path:
        if not _is_job_id(job_id):
            raise KeyError(job_id)
        return self.jobs_dir / f"{job_id}.json"

    def _write(self, job_id: str, status: dict[str, Any]) -> None:
        path = self._status_path(job_id)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        try:
            temporary.write_text(json.dumps(status), encoding="utf-8")
            os.replace(temporary, path)
        except BaseException:  # a full disk: no empty or half-written status file is left behind
            temporary.unlink(missing_ok=True)
            raise

    def status(self, job_id: str) -> dict[str, Any]:
        """The job's state: running (fraction, message), done (run_id) or error (error)."""
        try:
            status = json.loads(self._status_path(job_id).read_text(encoding="utf-8"))
        except (KeyError, FileNotFoundError, json.JSONDecodeError):
            return {"state": "unknown", "message": "no such ingest job"}
        if status.get("state") == "running" and self._worker_is_gone(status):
            status = self._orphaned(job_id, status)
        return status

    def _recorded_phases(self, job_id: str) -> dict[str, Any]:
        """{"phases": [...]} as the status file has them, or {}."""
        try:
            phases = json.loads(self._status_path(job_id).read_text(encoding="utf-8")).get("phases")
        except (KeyError, OSError, ValueError, AttributeError):
            return {}
        return {"phases": phases} if isinstance(phases, list) else {}

    def _recorded_state(self, job_id: str) -> str | None:
        try:
            return json.loads(self._status_path(job_id).read_text(encoding="utf-8")).get("state")
        except (KeyError, OSError, ValueError, AttributeError):
            return None

    @staticmethod
    def _worker_is_gone(status: dict[str, Any]) -> bool:
        # Another host's process cannot be checked from here: it stays running.
        return owner_is_gone({"pid": status.get("pid"), "host": status.get("host")})

    def _orphaned(self, job_id: str, status: dict[str, Any]) -> dict[str, Any]:
        upload = Path(status.get("upload", ""))
        kept = self._keep_failed_upload(upload, job_id) if status.get("upload") and upload.is_dir() else None
        names = status.get("files", [])
        failed = {
            "state": "error", "files": names, "name": status.get("name"),
            "error": f"{', '.join(names)}: the server process ingesting this upload (pid {status['pid']}) stopped "
                     "before it finished (restarted or killed); retry it under Failed uploads",
        }
        if kept is not None:
            failed["kept_at"] = str(kept)
        self._write(job_id, failed)
        return failed

    def start(self, upload_folder: Path, name: str | None = None) -> str:
        """Ingest every file of an upload folder in a child process watched by a thread; return the job id."""
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.remove_empty_upload_folders()
        job_id = uuid.uuid4().hex
        files = sorted(p for p in upload_folder.iterdir() if p.is_file() and not p.is_symlink())
        job = {"job_id": job_id, "upload": str(upload_folder), "files": [p.name for p in files], "name": name}
        try:
            self._write(job_id, self._running(upload_folder, job["files"], 0.0, "queued", name))
        except OSError as exc:
            # Not even the job's status fits: the files stay, listed under failed uploads (Retry / Delete).
            self._keep_failed_upload(upload_folder, job_id)
            raise JobNotStarted(f"{', '.join(job['files'])}: {write_problem(exc, 'the ingest job')}") from None
        thread = threading.Thread(target=self._run, args=(job, files), name=f"ingest-{job_id[:8]}", daemon=True)
        thread.start()
        return job_id

    def run_sync(self, upload_folder: Path, name: str | None = None) -> str:
        """Like start() but waits; returns the job id once finished (for tests and the CLI)."""
        job_id = self.start(upload_folder, name)
        while self.status(job_id)["state"] == "running":
            time.sleep(0.05)
        return job_id

    def _run(self, job: dict[str, Any], files: list[Path]) -> None:
        def started(pid: int) -> None:
            # From now on the child owns the job: if this worker dies, the job is not orphaned while it runs.
            self._write(job["job_id"], self._running(Path(job["upload"]), job["files"], 0.0, "starting",
                                                     job["name"], pid=pid))

        def ending() -> None:
            # ...and this worker owns it again until it has written the outcome (the child's phases kept).
            self._write(job["job_id"], self._running(Path(job["upload"]), job["files"], 1.0, "finishing",
                                                     job["name"]) | self._recorded_phases(job["job_id"]))

        try:
            run_id = run_in_child(self.store.data_dir, files, job["name"], self.budget_for(files), job=job,
                                  started=started, ending=ending)
        except Exception as exc:  # every failure must reach the page, named
            _log.warning('ingest job %s failed', job['job_id'], exc_info=True)  # the traceback for the server log
            self.finish(job, None, exc)
            return
        self.finish(job, run_id, None)

    def finish(self, job: dict[str, Any], run_id: str | None, failure: BaseException | None) -> None:
        """Record a job's outcome: done (the upload is consumed) or error (the upload is kept)."""
        upload_folder, names, job_id = Path(job["upload"]), list(job["files"]), job["job_id"]
        if self._recorded_state(job_id) in ("done", "error"):
            return  # already finished: a reader found the child dead first and kept the upload
        phases = self._recorded_phases(job_id)
        if failure is None:
            shutil.rmtree(upload_folder, ignore_errors=True)  # the run's source/ holds the bytes now
            self._write(job_id, {"state": "done", "run_id": run_id, "fraction": 1.0, "files": names} | phases)
            return
        prefix = f"{upload_folder}{os.sep}"
        # One plain line for the page (the error contract); a child's unexpected error arrives only
        # as its type's name, so it is worded like any parser failure.
        problem = ingest_failure(failure, ", ".join(names)).replace(prefix, "")
        kept = self._keep_failed_upload(upload_folder, job_id)
        self._write(job_id, {"state": "error", "error": problem, "files": names, "kept_at": str(kept),
                             "name": job.get("name")} | phases)

    @staticmethod
    def _running(upload_folder: Path, names: list[str], fraction: float | None, message: str,
                 name: str | None = None, pid: int | None = None) -> dict[str, Any]:
        return {"state": "running", "fraction": fraction, "message": message, "files": names, "name": name,
                "upload": str(upload_folder), "pid": pid or os.getpid(), "host": socket.gethostname()}

    # ---- housekeeping: empty upload folders, failed uploads -------------------
    def remove_empty_upload_folders(self, older_than_s: float = EMPTY_UPLOAD_GRACE_SECONDS) -> int:
        """Remove `uploads/<id>/` folders that hold nothing; returns how many.

        Only folders empty for a while: another worker may have just made one
        and be about to write into it. os.rmdir removes only an empty folder,
        so a file that arrives meanwhile is never lost.
        """
        if not self.uploads_dir.is_dir():
            return 0
        removed = 0
        now = time.time()
        for folder in [*self.uploads_dir.iterdir(), *self._failed_dir().glob("*")]:
            try:
                if folder.is_symlink() or not folder.is_dir() or folder == self._failed_dir():
                    continue
                if folder.name.endswith(RECEIVING_SUFFIX):
                    if now - _newest_change(folder) > ABANDONED_SECONDS:
                        shutil.rmtree(folder)
                        removed += 1
                    continue
                if now - folder.stat().st_mtime > older_than_s:
                    if folder.name.startswith(_DISCARDING):  # a confirmed delete that was cut short
                        shutil.rmtree(folder)
                    else:
                        folder.rmdir()
                    removed += 1
            except OSError:  # not empty, or removed by another worker meanwhile
                continue
        return removed

    def _failed_dir(self) -> Path:
        return self.uploads_dir / "failed"

    def failed_uploads(self) -> list[dict[str, Any]]:
        """Kept uploads whose ingest failed, newest first: job_id, files, error, name, when (epoch s)."""
        failed_dir = self._failed_dir()
        if not failed_dir.is_dir():
            return []
        found = []
        for folder in failed_dir.iterdir():
            if not _is_job_id(folder.name) or folder.is_symlink() or not folder.is_dir():
                continue
            status = self.status(folder.name)
            files = sorted(p.name for p in folder.iterdir() if p.is_file())
            if not files:
                continue
            found.append({"job_id": folder.name, "files": files, "name": status.get("name"),
                          "error": status.get("error") or "the ingest did not finish",
                          "when": folder.stat().st_mtime})
        return sorted(found, key=lambda item: item["when"], reverse=True)

    def retry(self, job_id: str) -> str:
        """Ingest a failed upload's kept files again as a new job; returns the new job id.

        The folder moves back under uploads/ in one rename first, so two clicks
        (or two workers) cannot start two ingests of it: the second finds it gone.
        """
        kept = self._kept_folder(job_id)
        folder = self.uploads_dir / uuid.uuid4().hex
        os.rename(kept, folder)  # FileNotFoundError when another retry took it
        return self.start(folder, name=self.status(job_id).get("name"))

    def discard_failed(self, job_id: str) -> None:
        """Delete a failed upload's kept files (after the user confirmed)."""
        kept = self._kept_folder(job_id)
        trash = self.uploads_dir / f"{_DISCARDING}{uuid.uuid4().hex}"
        os.rename(kept, trash)
        shutil.rmtree(trash, ignore_errors=True)

    def discard_upload(self, upload_folder: Path) -> None:
        """Remove an upload folder that never became a job (its content arrived damaged)."""
        if upload_folder.parent == self.uploads_dir:
            shutil.rmtree(upload_folder, ignore_errors=True)

    def _kept_folder(self, job_id: str) -> Path:
        if not _is_job_id(job_id):
            raise KeyError(job_id)
        return self._failed_dir() / job_id

    def _keep_failed_upload(self, upload_folder: Path, job_id: str) -> Path:
        # Nothing a user gave us is lost: a file we could not read stays on disk.
        failed = self.uploads_dir / "failed" / job_id
        failed.parent.mkdir(parents=True, exist_ok=True)
        if upload_folder.is_dir():
            os.replace(upload_folder, failed)
        return failed


def _newest_change(folder: Path) -> float:
    """The latest modification of a folder or a file in it (a file being written changes every second)."""
    newest = folder.stat().st_mtime
    for entry in os.scandir(folder):
        try:
            newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
        except OSError:
            continue
    return newest


def throttled_status(jobs: IngestJobs, job: dict[str, Any]) -> ProgressFn:
    """A progress sink writing the job's status file at most five times a second (from the child), and at
    every new phase: the status lists the phases the CLI prints (`progress.py`)."""
    last_write = 0.0
    upload_folder = Path(job["upload"])
    phases = PhaseLog()

    def progress(fraction: float | None, message: str) -> None:
        nonlocal last_write
        now = time.monotonic()
        if not phases.note(message) and now - last_write < 0.2:
            return
        last_write = now
        status = jobs._running(upload_folder, job["files"], fraction, message, job.get("name"))
        jobs._write(job["job_id"], status | {"phases": phases.as_list()})

    return progress
