"""Probe 1 of issue 35: the page-PNG export's browser opens only the app itself, and the user's login
goes nowhere else.

A logged-in user sent gunicorn `SCRIPT_NAME: @127.0.0.1:<port>` (a header gunicorn honours from trusted
peers) with a matching request target: the export built its URL from the script root, and the server's
Chromium loaded `http://127.0.0.1:8050@127.0.0.1:<port>/…`, another service, with the user's
`Authorization` header; that service's page came back as the PNG.
"""

from __future__ import annotations

import http.client
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.store import RunStore
from tests.support.kernel_tables import kernel_tables
from tests.support.team_server import PASSWORD, REPO_ROOT, USER, basic_auth, free_port

pytest.importorskip("playwright")


def send_html(handler: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class Trap:
    """Another service on this machine: records every request it gets (path and Authorization)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        trap = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                trap.requests.append((self.path, self.headers.get("Authorization")))
                send_html(self, b'<html><body><div id="_pages_content"><div>internal secret</div></div></body></html>')

            def log_message(self, *_args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def trap() -> Iterator[Trap]:
    found = Trap()
    yield found
    found.close()


# What gunicorn does for a trusted peer's `SCRIPT_NAME` header (and a proxy configured to pass one on):
# the header becomes the WSGI script name. gunicorn 27 refuses a request target that does not start with
# '/', so the header's value is applied here as such a front end hands it over. The app runs in its own
# process (one Dash app per process).
SERVE_BEHIND_A_TRUSTING_FRONT = """
import sys
from pathlib import Path
from werkzeug.serving import run_simple
from dashboard.app import create_app
from dashboard.settings import Settings

app = create_app(Settings(data_dir=Path(sys.argv[1]), seed_demo=False, users=sys.argv[3])).server

def front(environ, start_response):
    if "HTTP_SCRIPT_NAME" in environ:
        environ["SCRIPT_NAME"] = environ.pop("HTTP_SCRIPT_NAME")
    return app(environ, start_response)

run_simple("127.0.0.1", int(sys.argv[2]), front, threaded=True)
"""


def test_a_forged_script_name_does_not_send_the_export_browser_elsewhere(tmp_path: Path, trap: Trap) -> None:
    from werkzeug.security import generate_password_hash

    data = tmp_path / "data"
    run_id = RunStore(data).write("export", kernel_tables(10))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVE_BEHIND_A_TRUSTING_FRONT, str(data), str(port),
                               f"{USER}:{generate_password_hash(PASSWORD)}"],
                              cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the app did not start"
                time.sleep(0.2)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
        connection.request("GET", f"/runs/{run_id}/export/kernels.png?export_width=800",
                           headers={**basic_auth(), "Script-Name": f"@127.0.0.1:{trap.port}"})
        response = connection.getresponse()
        body = response.read()
        connection.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert trap.requests == [], f"the export's browser reached another service: {trap.requests}"
    assert response.status == 200, body[:300]
    assert body.startswith(b"\x89PNG")  # the app's own page, drawn


def test_the_export_browser_reaches_no_other_origin_and_sends_the_login_only_home(tmp_path: Path,
                                                                                   trap: Trap) -> None:
    """A page of the app's origin that asks for a resource elsewhere, directly and through a redirect."""
    from dashboard.exports.page_png import capture_page

    seen: list[tuple[str, str | None]] = []
    other = f"http://127.0.0.1:{trap.port}"

    class Home(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            if self.path.startswith("/bounce"):
                self.send_response(302)
                self.send_header("Location", f"{other}/after-redirect")
                self.end_headers()
                return
            body = (f'<html><body><div id="_pages_content"><div>home</div></div>'
                    f'<img src="{other}/image.png"><img src="/bounce.png">'
                    f'<iframe src="{other}/frame"></iframe><script>fetch("{other}/fetch")</script>'
                    '</body></html>').encode()
            send_html(self, body)

        def log_message(self, *_args: object) -> None:
            pass

    home = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Home)
    threading.Thread(target=home.serve_forever, daemon=True).start()
    try:
        shot = capture_page(f"http://127.0.0.1:{home.server_address[1]}/kernels?run=x", 800, 1,
                            headers=basic_auth(), timeout_ms=30_000)
    finally:
        home.shutdown()
        home.server_close()
    assert shot.png.startswith(b"\x89PNG")
    assert trap.requests == [], f"the export's browser reached another origin: {trap.requests}"
    assert ("/kernels?run=x", basic_auth()["Authorization"]) in seen  # the login went home
