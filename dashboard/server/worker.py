"""gunicorn's threaded worker, with `/health` answered by the worker's own loop.

    gunicorn -k dashboard.server.worker.HealthFirstWorker -w 4 --threads 2 ... dashboard.server.wsgi:server

A gthread worker hands every connection to its thread pool; when every thread is busy (a heavy page,
a big upload's body arriving, a page export), a health check waits in line behind them and a load
balancer takes a healthy worker for dead. This worker looks at a new connection's first bytes in its
main loop (a non-consuming peek; a connection with no bytes yet waits in the loop's poller, not in a
thread): a plain `GET /health` is answered right there, from `server.health` (no app, no lock, no
thread), and everything else goes to the pool as before. `/health?verbose` (behind the login) and every
other request take the usual path.

It also tells the app how many workers share the machine (`DASHBOARD_WORKERS`): the default byte
budget of a worker's caches is the machine's memory shared among them (settings.py).
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import time
from functools import partial
from pathlib import Path
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from dashboard.server.health import health

_REQUEST_LINES = (b"GET /health HTTP/1.1\r\n", b"GET /health HTTP/1.0\r\n")
_PEEK_BYTES = 8192


class HealthFirstWorker(ThreadWorker):
    def init_process(self) -> None:
        os.environ.setdefault("DASHBOARD_WORKERS", str(self.cfg.workers))
        self._data_dir = Path(os.environ.get("DASHBOARD_DATA", "data"))
        super().init_process()

    def enqueue_req(self, conn: Any) -> None:
        if not conn.initialized and not self.cfg.is_ssl:
            verdict = self._health_first(conn)
            if verdict == "answered":
                self.nr_conns -= 1
                conn.close()
                return
            if verdict == "wait":  # nothing sent yet: wait in the poller, not in a thread
                conn.timeout = time.monotonic() + max(self.cfg.keepalive, 5)
                self.pending_conns.append(conn)
                self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._first_bytes, conn))
                return
        super().enqueue_req(conn)

    def _first_bytes(self, conn: Any, client: Any) -> None:
        self.poller.unregister(client)
        self.pending_conns.remove(conn)
        conn.data_ready = True
        if self._health_first(conn) == "answered":
            self.nr_conns -= 1
            conn.close()
            return
        super().enqueue_req(conn)

    def _health_first(self, conn: Any) -> str:
        """'answered' (a health check, answered here), 'wait' (no bytes yet, first look) or 'pass'."""
        sock: socket.socket = conn.sock
        try:
            head = sock.recv(_PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return "pass" if conn.data_ready else "wait"
        except OSError:
            return "pass"
        if not head.startswith(_REQUEST_LINES):
            return "pass"
        end = head.find(b"\r\n\r\n")
        if end < 0 or b"\ncontent-length:" in head[:end].lower() or b"\ntransfer-encoding:" in head[:end].lower():
            return "pass"  # headers not all here yet, or a body: the usual path
        try:
            sock.recv(end + 4, socket.MSG_DONTWAIT)  # the request, consumed: closing then sends no reset
            body = json.dumps(health(self._data_dir)).encode()
            sock.setblocking(True)
            sock.settimeout(5)
            sock.sendall(b"HTTP/1.1 200 OK\r\nServer: gunicorn\r\nContent-Type: application/json\r\n"
                         b"Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                         b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        except OSError:
            pass  # the client went away: nothing to answer
        return "answered"
