"""Probes 4 and 5 of issue 35, for uploads: the worker receiving a big upload holds a bounded amount of
it, and a name the uploader chose never reaches the page as a server path.

The worker receiving a 200 MB upload peaked at 1.5-1.6 GB RSS (8x the file: `dcc.Upload` sent it base64
inside a callback's JSON); a 300-character upload name showed "OSError: [Errno 36] File name too long:
'<the server's data path>…'".
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dash_requests import upload_payload
from tests.support.team_server import team_server
from tests.support.uploads import upload_over_http

pytest.importorskip("gunicorn")
MIB = 1024 * 1024
FILE_MB = 200


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def pattern_chunks(total_mb: int) -> Iterator[bytes]:
    block = bytes(range(256)) * 4096  # 1 MiB
    for index in range(total_mb):
        yield block[index % 256:] + block[:index % 256]


def test_a_200_mb_upload_streams_to_disk_in_bounded_worker_memory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with team_server(data, tmp_path, workers=1, threads=2, env={"DASHBOARD_MAX_UPLOAD_MB": "512"}) as server:
        worker = json.loads(server.get("/health")[1])["pid"]
        server.get("/")  # the app's first request sets Dash up: not the upload's memory
        baseline = resident_mb(worker)
        peak, stop = baseline, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, resident_mb(worker))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            status, opened = server.post("/uploads", b"")
            assert status == 200, opened
            upload = json.loads(opened)["upload"]
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
            connection.request("PUT", f"/uploads/{upload}/files?name=big.json", body=pattern_chunks(FILE_MB),
                               headers={"Content-Length": str(FILE_MB * MIB),
                                        "Content-Type": "application/octet-stream"})
            response = connection.getresponse()
            answer = json.loads(response.read())
            connection.close()
        finally:
            stop.set()
            sampler.join()
        assert response.status == 200 and answer["bytes"] == FILE_MB * MIB, answer
        stored = data / "uploads" / f"{upload}.receiving" / "big.json"
        digest = hashlib.sha256()
        for chunk in pattern_chunks(FILE_MB):
            digest.update(chunk)
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == digest.hexdigest()  # byte for byte
        added = peak - baseline
        print(f"worker RSS {baseline:.0f} MB before, {peak:.0f} MB at most while receiving {FILE_MB} MB "
              f"(+{added:.0f} MB)")
        assert added <= 64, f"receiving a {FILE_MB} MB upload added {added:.0f} MB to the worker"


def test_a_file_inside_a_callback_is_refused_before_it_is_held(tmp_path: Path) -> None:
    """What `dcc.Upload` did: the file base64-encoded in a callback's JSON, all of it in the worker's memory."""
    with team_server(tmp_path / "data", tmp_path, workers=1, threads=1) as server:
        body = json.dumps(upload_payload(b"x" * (24 * MIB), "big.json", "in-a-callback")).encode()
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        # Refused on its declared length, before the body is read: the server may close mid-send.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.request("POST", "/_dash-update-component", body=body,
                               headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        assert response.status == 413, answer[:300]
        assert json.loads(answer)["error"].startswith("upload too large")


def test_a_long_or_hostile_file_name_is_only_a_name(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with team_server(data, tmp_path, workers=1, threads=2) as server:
        names = ["a" * 300 + ".json", "../../" + "b" * 280 + ".trace.json.gz", "x/" * 200 + "c.dot"]
        for name in names:
            status, answer = upload_over_http(server.url, {name: b"\x00 not a trace"}, "long-names")
            assert status == 200, answer
            deadline = time.monotonic() + 60
            while True:
                job = json.loads((data / ".jobs" / f"{answer['job']}.json").read_text())
                if job["state"] != "running" or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert job["state"] == "error", job
            assert str(data) not in job["error"] and str(tmp_path) not in job["error"], job["error"]
            assert "Errno" not in job["error"] and "File name too long" not in job["error"], job["error"]
            assert len(job["files"][0]) <= 120
