"""A real team server for tests: gunicorn on a free loopback port over a data folder, stopped afterwards."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "alice", "correct horse"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def basic_auth(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@dataclass
class TeamServer:
    url: str
    port: int
    data: Path
    log: Path
    process: subprocess.Popen[bytes]

    def get(self, path: str, headers: Mapping[str, str] | None = None, timeout: float = 60) -> tuple[int, bytes]:
        request = urllib.request.Request(self.url + path, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def post(self, path: str, body: bytes | dict, headers: Mapping[str, str] | None = None,
             timeout: float = 60, method: str = "POST") -> tuple[int, bytes]:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", **dict(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()


@contextlib.contextmanager
def team_server(data: Path, log_dir: Path, *, workers: int = 1, threads: int = 2, login: bool = False,
                env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> Iterator[TeamServer]:
    """gunicorn with the project's worker (`dashboard.server.worker.HealthFirstWorker`, gunicorn's gthread
    where a checkout has none) on 127.0.0.1."""
    import importlib.util

    from werkzeug.security import generate_password_hash

    own_worker = importlib.util.find_spec("dashboard.server.worker") is not None
    worker_class = "dashboard.server.worker.HealthFirstWorker" if own_worker else "gthread"

    port = free_port()
    settings = {"DASHBOARD_DATA": str(data), "DASHBOARD_SEED_DEMO": "0", "PYTHONPATH": str(REPO_ROOT)}
    if login:
        settings["DASHBOARD_USERS"] = f"{USER}:{generate_password_hash(PASSWORD)}"
    log_path = log_dir / f"gunicorn-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", str(workers), "--threads", str(threads),
             "-k", worker_class, "-b", f"127.0.0.1:{port}", "--timeout", "120",
             *extra_args, "dashboard.server.wsgi:server"],
            cwd=REPO_ROOT, env={**os.environ, **settings, **dict(env or {})}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    server = TeamServer(f"http://127.0.0.1:{port}", port, data, log_path, process)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited early:\n{log_path.read_text()}")
            try:
                if server.get("/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer in time:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
