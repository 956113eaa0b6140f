"""Probe 9 of issue 35 (in part): `/health` answers from a path that no busy worker thread can block.

Under load `/health` took over 1 s in 2 of 110 probes, and in 25 of 240 while a 200 MB upload arrived:
it waited for a worker thread like any page. Here the worker's only thread is held by a request whose
body arrives slowly (as a big upload's does), and `/health` must still answer at once.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from tests.support.team_server import basic_auth, team_server

pytest.importorskip("gunicorn")


def timed_health(port: int) -> tuple[float, dict]:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return time.perf_counter() - started, json.loads(body)


def test_health_answers_while_every_thread_is_busy(tmp_path: Path) -> None:
    with team_server(tmp_path / "data", tmp_path, workers=1, threads=1, login=True) as server:
        holders = []
        for _ in range(2):  # the only thread reads a body that never finishes; the next waits behind it
            holder = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            holder.sendall(b"POST /_dash-update-component HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Authorization: " + basic_auth()["Authorization"].encode() +
                           b"\r\nContent-Length: 1000000\r\n\r\n{\"output\": ")
            holders.append(holder)
        time.sleep(1.0)
        try:
            worst = 0.0
            for _ in range(5):
                seconds, answer = timed_health(server.port)
                worst = max(worst, seconds)
                assert answer["status"] == "ok" and answer["runs"] == 0
            assert worst < 1.0, f"/health took {worst:.2f} s behind a busy thread"
        finally:
            for holder in holders:
                holder.close()
        # The verbose health (this worker's memory: caches against their budgets) is the app's, behind the login.
        assert server.get("/health?verbose=1")[0] == 401
        status, body = server.get("/health?verbose=1", headers=basic_auth())
        memory = json.loads(body)["memory"]
        assert status == 200 and memory["cache_limit_mb"] > 0 and memory["worker_limit_mb"] > memory["cache_limit_mb"]
        assert memory["rss_mb"] > 0 and memory["cache_mb"] >= 0
