"""A real server in a subprocess and Debian's Chromium driven by Playwright.

No browser is downloaded: Playwright launches /usr/bin/chromium (or
$CHROMIUM). The server runs exactly as a user starts it, on a free port with
its own data folder seeded with the demo.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.demo_copy import demo_copy

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    executable = chromium_path()
    if executable is None:
        pytest.fail("Debian's chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    return {**browser_type_launch_args, "executable_path": executable, "args": CHROMIUM_FLAGS}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    url: str
    data_dir: Path
    process: subprocess.Popen
    log_path: Path
    extra: dict = field(default_factory=dict)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """End the server process, killing it when it does not exit in 10 s."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_server(data_dir: Path, log_path: Path, *extra_args: str, env: dict | None = None) -> Server:
    port = free_port()
    with open(log_path, "w") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "dashboard.app", "--data", str(data_dir), "--port", str(port), *extra_args],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return Server(url, data_dir, process, log_path)
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"server did not answer /health in time:\n{log_path.read_text()}")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> Iterator[Server]:
    """The app serving a data folder seeded with the bundled demo: a copy of the session's seeded demo
    (the same `seed_demo` a first start runs; the first start itself is tests/test_first_start.py's),
    instead of ~14 s of seeding per server."""
    root = tmp_path_factory.mktemp("server")
    running = start_server(demo_copy(demo_template, root / "data"), root / "server.log")
    yield running
    running.stop()


@pytest.fixture
def console_errors(page) -> Iterator[list[str]]:
    """Console errors and page exceptions seen during a test; asserted empty by the tests."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield errors


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)
