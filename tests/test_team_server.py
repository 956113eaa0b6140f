"""The team setup for real: gunicorn with two workers sharing one data folder.

One upload through the Dash callback becomes exactly one run, parsed once,
and every worker lists it; the upload limit answers 413 through gunicorn too.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.dash_requests import upload_payload
from tests.support.uploads import upload_over_http

pytest.importorskip("gunicorn")

REPO_ROOT = Path(__file__).resolve().parents[1]
DOT_SOURCE = b'digraph planner {\n  a [label="load"];\n  b [label="mma"];\n  a -> b [label="smem"];\n}\n'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def post_json(base: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def gunicorn_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("team")
    data = root / "data"
    port = free_port()
    env = {**os.environ, "DASHBOARD_DATA": str(data), "DASHBOARD_SEED_DEMO": "0", "DASHBOARD_MAX_UPLOAD_MB": "1",
           "DASHBOARD_MAX_REQUEST_MB": "1"}
    log_path = root / "gunicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "--timeout", "60",
             "dashboard.server.wsgi:server"],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"gunicorn exited early:\n{log_path.read_text()}")
            try:
                get_json(base + "/health")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not answer in time:\n{log_path.read_text()}")
                time.sleep(0.2)
        yield {"url": base, "data": data, "log": log_path, "port": port}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def health_by_worker(base: str, want_workers: int = 2, within_s: float = 60.0) -> dict[int, dict]:
    """/health answers keyed by the worker pid, asking concurrently until every worker has answered.

    Until a deadline, not a number of requests: on a loaded machine the second worker may still be
    loading the app while the first answers hundreds of requests.
    """
    seen: dict[int, dict] = {}
    deadline = time.monotonic() + within_s
    with ThreadPoolExecutor(max_workers=4) as pool:
        while time.monotonic() < deadline:
            for answer in pool.map(lambda _: get_json(base + "/health"), range(4)):
                seen[answer["pid"]] = answer
            if len(seen) >= want_workers:
                return seen
            time.sleep(0.05)
    return seen


def test_one_upload_is_one_run_and_every_worker_lists_it(gunicorn_server: dict) -> None:
    base, data = gunicorn_server["url"], gunicorn_server["data"]
    before = health_by_worker(base)
    assert len(before) == 2, f"expected two workers, saw {list(before)}"
    assert all(answer["runs"] == 0 for answer in before.values())

    status, answer = upload_over_http(base, {"planner.dot": DOT_SOURCE}, "team-upload")
    assert status == 200, answer
    job_id = answer["job"]
    assert len(job_id) == 32

    deadline = time.monotonic() + 30
    while True:
        job = json.loads((data / ".jobs" / f"{job_id}.json").read_text())
        if job["state"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert job["state"] == "done", job

    runs = sorted(p.name for p in (data / "runs").iterdir())
    assert runs == [job["run_id"]] and runs[0].startswith("team-upload-")
    assert len(list((data / ".jobs").glob("*.json"))) == 1  # parsed once, by one worker
    assert not any(p.is_file() for p in (data / "uploads").rglob("*"))  # the upload was consumed

    after = health_by_worker(base)
    assert len(after) == 2 and all(answer["runs"] == 1 for answer in after.values()), after
    # The trace of the new run downloads from whichever worker answers.
    for _ in range(4):
        csv = urllib.request.urlopen(f"{base}/runs/{runs[0]}/tables/dot_nodes.csv", timeout=10).read()
        assert csv.splitlines()[0].startswith(b"group,kind,node")


def test_oversized_upload_gets_413_through_gunicorn(gunicorn_server: dict) -> None:
    runs_dir = gunicorn_server["data"] / "runs"
    runs_before = sorted(runs_dir.iterdir()) if runs_dir.exists() else []
    status, answer = upload_over_http(gunicorn_server["url"], {"big.dot": b"x" * (2 * 1024 * 1024)}, "too-big")
    assert status == 413
    assert answer["error"] == "upload too large: 2 MiB > limit 1 MiB"
    assert (sorted(runs_dir.iterdir()) if runs_dir.exists() else []) == runs_before
    assert not any((gunicorn_server["data"] / "uploads").rglob("*.part"))  # nothing half-written kept


def test_an_oversized_chunked_upload_gets_413_through_gunicorn(gunicorn_server: dict) -> None:
    body = json.dumps(upload_payload(b"x" * (1024 * 1024 + 10), "big.dot", "too-big")).encode()
    chunks = (body[i:i + 65536] for i in range(0, len(body), 65536))
    connection = http.client.HTTPConnection("127.0.0.1", gunicorn_server["port"], timeout=30)
    # The server answers 413 once the limit is passed and stops reading: a loaded machine can schedule that
    # before the client has sent its last chunk (a broken pipe here). Its answer is there to read all the same.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        connection.request("POST", "/_dash-update-component", body=chunks, encode_chunked=True,
                           headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 413
    assert answer["error"] == "upload too large: more than the limit of 1 MiB"


def test_gunicorn_names_no_version(gunicorn_server: dict) -> None:
    with urllib.request.urlopen(gunicorn_server["url"] + "/health", timeout=10) as response:
        assert response.headers["Server"] == "gunicorn"
