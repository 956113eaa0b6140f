"""The upload routes: files streamed to disk in bounded memory, then one ingest job.

    POST /uploads                         a new upload        -> {"upload": "<id>"}
    PUT  /uploads/<id>/files?name=<file>  one file, raw body   -> {"file": "<stored name>", "bytes": n}
    POST /uploads/<id>/ingest             {"name": run name}   -> {"job": "<job id>"}
    GET  /uploads/jobs/<job>              the job's state      -> {"state", "fraction", "message", "run_id", ...}

Why not Dash's `dcc.Upload`: it reads the file in the browser into a base64 data URL and sends it
inside a callback's JSON; the worker then held the JSON text, the parsed string and the decoded bytes
at once (a 200 MB upload peaked at 1.5-1.6 GB of RSS). Here the body is read from the socket 1 MiB at a
time and written straight to its file (`assets/upload.js` sends each file as the body of one request).

An upload is received into `uploads/<id>.receiving/`, each file as `<name>.part` until its last byte
is in; `ingest` renames the folder to `uploads/<id>/` (one step: a job never sees a half-received
upload) and starts the job. Whatever fails while writing (a full disk, the client going away) removes
every file of that upload and answers one line saying what failed ("no space left on the server while
writing trace.json.gz (26 of 77 MiB received)"): nothing half-written is left behind. An upload
abandoned between its requests (the browser closed) is removed after `ABANDONED_SECONDS` without a
byte (`IngestJobs.remove_empty_upload_folders`).

Answers are JSON `{"error": "..."}` with 4xx/5xx: the page shows the sentence. File names are data: the
folder part is dropped, anything but letters, digits and `._+-` becomes `_`, and the name is cut to
`MAX_NAME_CHARS` (a 300-character name once made the server answer with its own data path).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from dashboard.ingest.jobs import RECEIVING_SUFFIX, IngestJobs, JobNotStarted
from dashboard.server.security import too_large_message

MIB = 1024 * 1024
CHUNK_BYTES = 1 * MIB
MAX_NAME_CHARS = 120
MAX_FILES = 512
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._+-]+")
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
PART_SUFFIX = ".part"


class UploadFailed(Exception):
    """One line for the page, and the HTTP status that goes with it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def safe_file_name(name: str, index: int = 0) -> str:
    """A name a user gave, usable as a file name: no folder part, no odd characters, not too long (the
    suffixes kept: `.json.gz` says how to read it)."""
    cleaned = _UNSAFE_FILE_CHARS.sub("_", (name or "").replace("\\", "/").rsplit("/", 1)[-1]).strip("._")
    if len(cleaned) > MAX_NAME_CHARS:
        stem, dot, suffix = cleaned.partition(".")
        suffix = suffix[-40:] if dot else ""
        cleaned = stem[: MAX_NAME_CHARS - len(suffix) - 1] + (f".{suffix}" if suffix else "")
    return cleaned or f"upload-{index}"


def _mib(size: int) -> str:
    return f"{size / MIB:,.1f}".removesuffix(".0")


def write_failure(exc: OSError, name: str, received: int, expected: int | None) -> str:
    """What failed while writing an upload, in words (never the server's path)."""
    of = f"{_mib(received)} of {_mib(expected)} MiB" if expected else f"{_mib(received)} MiB"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the server while writing {name} ({of} received); nothing was kept"
    if exc.errno == errno.EFBIG:
        return f"{name} is larger than the server's file system allows ({of} received); nothing was kept"
    return f"the server could not write {name} ({exc.strerror or 'write error'}; {of} received); nothing was kept"


class Uploads:
    """Receiving uploads into a job runner's uploads folder."""

    def __init__(self, jobs: IngestJobs, max_bytes: int) -> None:
        self.jobs = jobs
        self.max_bytes = max_bytes

    def receiving_folder(self, upload_id: str) -> Path:
        if not isinstance(upload_id, str) or not _UPLOAD_ID.match(upload_id):
            raise UploadFailed("no such upload", 404)
        folder = self.jobs.uploads_dir / f"{upload_id}{RECEIVING_SUFFIX}"
        if not folder.is_dir() or folder.is_symlink():
            raise UploadFailed("no such upload (it was finished, abandoned or removed); start it again", 404)
        return folder

    def new(self) -> str:
        upload_id = uuid.uuid4().hex
        try:
            (self.jobs.uploads_dir / f"{upload_id}{RECEIVING_SUFFIX}").mkdir(parents=True)
        except OSError as exc:
            raise UploadFailed(write_failure(exc, "the upload's folder", 0, None), 507) from None
        return upload_id

    def receive(self, upload_id: str, name: str, stream: Any, length: int | None) -> dict[str, Any]:
        """Write one file from `stream` (at most `length` bytes when given) into the upload."""
        folder = self.receiving_folder(upload_id)
        present = [p for p in folder.iterdir() if p.is_file()]
        if len(present) >= MAX_FILES:
            raise UploadFailed(f"one upload holds at most {MAX_FILES} files", 400)
        already = sum(p.stat().st_size for p in present)
        if length is not None and already + length > self.max_bytes:
            self.discard(folder)
            raise UploadFailed(too_large_message(already + length, self.max_bytes), 413)
        stored = safe_file_name(name, len(present))
        if (folder / stored).exists() or (folder / f"{stored}{PART_SUFFIX}").exists():
            stored = f"{len(present)}-{stored}"
        part = folder / f"{stored}{PART_SUFFIX}"
        received = 0
        try:
            with open(part, "xb") as out:
                while chunk := stream.read(CHUNK_BYTES):
                    received += len(chunk)
                    if already + received > self.max_bytes:
                        raise UploadFailed(too_large_message(None, self.max_bytes), 413)
                    out.write(chunk)
            if length is not None and received < length:
                raise UploadFailed(f"{stored}: the upload was cut off ({_mib(received)} of {_mib(length)} MiB "
                                   "arrived); try again", 400)
            os.replace(part, folder / stored)
        except UploadFailed:
            self.discard(folder)
            raise
        except ClientDisconnected:
            self.discard(folder)
            raise UploadFailed(f"{stored}: the upload was cut off ({_mib(received)} MiB arrived); try again",
                               400) from None
        except OSError as exc:
            self.discard(folder)
            raise UploadFailed(write_failure(exc, stored, received, length), 507) from None
        return {"file": stored, "bytes": received}

    def ingest(self, upload_id: str, name: str | None) -> str:
        folder = self.receiving_folder(upload_id)
        files = [p for p in folder.iterdir() if p.is_file() and not p.name.endswith(PART_SUFFIX)]
        if not files:
            self.discard(folder)
            raise UploadFailed("the upload holds no file", 400)
        ready = folder.with_name(upload_id)
        os.rename(folder, ready)  # one step: a second `ingest` of the same upload finds it gone (404)
        try:
            return self.jobs.start(ready, name=name.strip()[:100] if name and name.strip() else None)
        except JobNotStarted as exc:  # kept under failed uploads: Retry once there is room
            raise UploadFailed(str(exc), 507) from None

    @staticmethod
    def discard(folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)


def install_upload_routes(server: Flask, jobs: IngestJobs, max_bytes: int) -> None:
    """The upload routes on `server`, writing into `jobs`' uploads folder, at most `max_bytes` per upload."""
    uploads = Uploads(jobs, max_bytes)

    def failed(exc: UploadFailed) -> tuple[Response, int]:
        return jsonify({"error": str(exc)}), exc.status

    @server.post("/uploads")
    def new_upload() -> Any:
        try:
            return jsonify({"upload": uploads.new(), "max_bytes": max_bytes})
        except UploadFailed as exc:
            return failed(exc)

    @server.put("/uploads/<upload_id>/files")
    def upload_file(upload_id: str) -> Any:
        # The body is this route's to read, with its own limit (the app's is for everything else).
        request.max_content_length = max_bytes
        try:
            return jsonify(uploads.receive(upload_id, request.args.get("name", ""), request.stream,
                                           request.content_length))
        except UploadFailed as exc:
            return failed(exc)
        except RequestEntityTooLarge:
            return failed(UploadFailed(too_large_message(request.content_length, max_bytes), 413))

    @server.get("/uploads/jobs/<job_id>")
    def job_status(job_id: str) -> Any:
        # What the page shows of a job; where its files and process are is the server's business.
        status = jobs.status(job_id)
        shown = {key: status[key] for key in ("state", "fraction", "message", "run_id", "error", "files", "phases")
                 if key in status}
        return jsonify(shown), 404 if status.get("state") == "unknown" else 200

    @server.post("/uploads/<upload_id>/ingest")
    def ingest_upload(upload_id: str) -> Any:
        body = request.get_json(silent=True)
        name = body.get("name") if isinstance(body, dict) and isinstance(body.get("name"), str) else None
        try:
            return jsonify({"job": uploads.ingest(upload_id, name)})
        except UploadFailed as exc:
            return failed(exc)
        except (FileNotFoundError, OSError):
            return failed(UploadFailed("that upload is being ingested already or is gone", 404))


__all__ = ["PART_SUFFIX", "UploadFailed", "Uploads", "install_upload_routes", "safe_file_name"]
