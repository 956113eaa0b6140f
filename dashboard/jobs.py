"""Background ingest jobs whose progress any server worker can read.

The upload callback starts a job and returns at once; the page polls the
job's status file. Status lives on disk (not in process memory) so several
gunicorn workers sharing one data folder all see the same progress.

A running job names the process and host doing it. A worker killed mid-ingest
(a restart, `--max-requests` recycling, the out-of-memory killer) cannot say
so itself; the next reader of its status on the same host finds the process
gone, moves the upload to `uploads/failed/<job>/` and reports the job failed.
"""

from __future__ import annotations

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

from dashboard.collectors.failures import ingest_failure
from dashboard.store import RunStore

_log = logging.getLogger(__name__)

_JOB_ID_CHARS = set("0123456789abcdef")


class IngestJobs:
    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.jobs_dir = store.data_dir / ".jobs"
        self.uploads_dir = store.data_dir / "uploads"

    def new_upload_folder(self) -> Path:
        """A fresh folder for one upload's files."""
        folder = self.uploads_dir / uuid.uuid4().hex
        folder.mkdir(parents=True)
        return folder

    def _status_path(self, job_id: str) -> Path:
        if not job_id or not set(job_id) <= _JOB_ID_CHARS or len(job_id) != 32:
            raise KeyError(job_id)
        return self.jobs_dir / f"{job_id}.json"

    def _write(self, job_id: str, status: dict[str, Any]) -> None:
        path = self._status_path(job_id)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        temporary.write_text(json.dumps(status), encoding="utf-8")
        os.replace(temporary, path)

    def status(self, job_id: str) -> dict[str, Any]:
        """The job's state: running (fraction, message), done (run_id) or error (error)."""
        try:
            status = json.loads(self._status_path(job_id).read_text(encoding="utf-8"))
        except (KeyError, FileNotFoundError, json.JSONDecodeError):
            return {"state": "unknown", "message": "no such ingest job"}
        if status.get("state") == "running" and self._worker_is_gone(status):
            status = self._orphaned(job_id, status)
        return status

    @staticmethod
    def _worker_is_gone(status: dict[str, Any]) -> bool:
        pid, host = status.get("pid"), status.get("host")
        if not isinstance(pid, int) or host != socket.gethostname():
            return False  # another host's process cannot be checked from here
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # alive, owned by someone else
        return False

    def _orphaned(self, job_id: str, status: dict[str, Any]) -> dict[str, Any]:
        upload = Path(status.get("upload", ""))
        kept = self._keep_failed_upload(upload, job_id) if status.get("upload") and upload.is_dir() else None
        names = status.get("files", [])
        failed = {
            "state": "error", "files": names,
            "error": f"{', '.join(names)}: the server process ingesting this upload (pid {status['pid']}) stopped "
                     "before it finished (restarted or killed); upload the files again",
        }
        if kept is not None:
            failed["kept_at"] = str(kept)
        self._write(job_id, failed)
        return failed

    def start(self, upload_folder: Path, name: str | None = None) -> str:
        """Ingest every file of an upload folder in a background thread; return the job id."""
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        job_id = uuid.uuid4().hex
        files = sorted(p for p in upload_folder.iterdir() if p.is_file())
        self._write(job_id, self._running(upload_folder, [p.name for p in files], 0.0, "queued"))
        thread = threading.Thread(target=self._run, args=(job_id, upload_folder, files, name),
                                  name=f"ingest-{job_id[:8]}", daemon=True)
        thread.start()
        return job_id

    def run_sync(self, upload_folder: Path, name: str | None = None) -> str:
        """Like start() but waits; returns the job id once finished (for tests and the CLI)."""
        job_id = self.start(upload_folder, name)
        while self.status(job_id)["state"] == "running":
            time.sleep(0.05)
        return job_id

    def _run(self, job_id: str, upload_folder: Path, files: list[Path], name: str | None) -> None:
        last_write = 0.0
        names = [p.name for p in files]

        def progress(fraction: float | None, message: str) -> None:
            nonlocal last_write
            now = time.monotonic()
            if now - last_write < 0.2:
                return
            last_write = now
            self._write(job_id, self._running(upload_folder, names, fraction, message))

        prefix = f"{upload_folder}{os.sep}"
        try:
            run_id = self.store.ingest(files, name=name, progress=progress)
        except Exception as exc:  # every failure must reach the page, named
            _log.warning("ingest job %s failed", job_id, exc_info=True)  # the traceback for the server log
            problem = ingest_failure(exc, ", ".join(names)).replace(prefix, "")
            kept = self._keep_failed_upload(upload_folder, job_id)
            self._write(job_id, {"state": "error", "error": problem, "files": names, "kept_at": str(kept)})
            return
        shutil.rmtree(upload_folder, ignore_errors=True)  # the run's source/ holds the bytes now
        self._write(job_id, {"state": "done", "run_id": run_id, "fraction": 1.0, "files": names})

    @staticmethod
    def _running(upload_folder: Path, names: list[str], fraction: float | None, message: str) -> dict[str, Any]:
        return {"state": "running", "fraction": fraction, "message": message, "files": names,
                "upload": str(upload_folder), "pid": os.getpid(), "host": socket.gethostname()}

    def _keep_failed_upload(self, upload_folder: Path, job_id: str) -> Path:
        # Nothing a user gave us is lost: a file we could not read stays on disk.
        failed = self.uploads_dir / "failed" / job_id
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(upload_folder, failed)
        return failed
