"""Real page loads, recorded once in Chromium and replayed over HTTP, and a gunicorn to replay them on.

`record_page_load(base, "/kernels?run=R")` opens the page in the system Chromium (Playwright, as the
browser tests do) and keeps every request the page made to the server until it was drawn: the page
itself, `_dash-layout`, `_dash-dependencies` and each callback with the body the renderer sent, in
order. Scripts, styles and component suites are left out: a browser keeps them (they are served with a
year-long max-age). `replay(base, step)` sends one of them again; `PageLoad.with_run` swaps the run id, so
one recording serves every run of a soak. Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[1]
_SKIPPED_PREFIXES = ("/assets/", "/_dash-component-suites/", "/_favicon", "/favicon")
# The page is drawn: nothing loading, every graph has its SVG (the page-PNG export's test, simplified).
_DRAWN = """() => !document.querySelector('._dash-loading, [data-dash-is-loading="true"]')
    && document.querySelector('#_pages_content > *') !== null
    && [...document.querySelectorAll('.dash-graph')].every(g => g.querySelector('.main-svg'))"""


@dataclass(frozen=True)
class Step:
    kind: str  # "page", "layout", "dependencies", "callback <first output>"
    method: str
    path: str  # path and query
    body: bytes | None = None
    referer: str | None = None  # Dash draws the page of the Referer's path into `_dash-layout`


@dataclass
class PageLoad:
    page: str
    steps: list[Step] = field(default_factory=list)

    def with_run(self, old: str, new: str) -> list[Step]:
        if old == new:
            return list(self.steps)
        return [Step(step.kind, step.method, step.path.replace(old, new),
                     step.body.replace(old.encode(), new.encode()) if step.body else step.body,
                     step.referer.replace(old, new) if step.referer else step.referer)
                for step in self.steps]


def _kind(path: str, body: bytes | None) -> str:
    if path.startswith("/_dash-layout"):
        return "layout"
    if path.startswith("/_dash-dependencies"):
        return "dependencies"
    if path.startswith("/_dash-update-component") and body:
        try:
            output = json.loads(body)["output"]
        except (ValueError, KeyError, TypeError):
            return "callback"
        first = output.strip(".").split("...")[0].split("@")[0]
        return "router" if first.startswith("_pages_content") else f"callback {first}"
    return "page"


def record_page_load(base: str, path: str, timeout_ms: int = 120_000, tries: int = 3) -> PageLoad:
    """The requests Chromium makes to `base` loading `path`, until the page is drawn and the network idle.

    A recording without `_dash-layout` is incomplete (seen on a worker's very first page, under load: the
    renderer had not asked for it before the network went quiet) and is made again.
    """
    for _ in range(tries - 1):
        recorded = _record_once(base, path, timeout_ms)
        if any(step.kind == "layout" for step in recorded.steps):
            return recorded
    return _record_once(base, path, timeout_ms)


def _record_once(base: str, path: str, timeout_ms: int) -> PageLoad:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from dashboard.exports.png import chromium_path

    steps: list[Step] = []
    origin = urlsplit(base)

    def keep(request: Any) -> None:  # playwright's Request
        parts = urlsplit(request.url)
        if (parts.hostname, parts.port) != (origin.hostname, origin.port) or parts.path.startswith(_SKIPPED_PREFIXES):
            return
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        body = request.post_data_buffer if request.method == "POST" else None
        referer = request.headers.get("referer")
        steps.append(Step(_kind(parts.path, body), request.method, target, body,
                          referer[len(base):] if referer and referer.startswith(base) else None))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(),
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.on("request", keep)  # the context's: requests a page's workers make too
            page = context.new_page()
            page.goto(base + path, wait_until="networkidle", timeout=timeout_ms)
            # A graph left empty on purpose (a section without data) never draws: then what idled is it.
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_function(_DRAWN, timeout=30_000, polling=100)
            page.wait_for_load_state("networkidle", timeout=timeout_ms)
            page.wait_for_timeout(500)  # callbacks chained after the last one answered
        finally:
            browser.close()
    return PageLoad(path, steps)


def replay(base: str, step: Step, headers: Mapping[str, str] | None = None, timeout: float = 120) -> tuple[int, bytes]:
    sent = dict(headers or {})
    if step.body is not None:
        sent["Content-Type"] = "application/json"
    if step.referer is not None:
        sent["Referer"] = base + step.referer
    request = urllib.request.Request(base + step.path, data=step.body, method=step.method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_gunicorn(data_dir: Path, workers: int, threads: int, log_path: Path,
                   env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn with the project's worker on a free loopback port, once every worker answers."""
    port = free_port()
    settings = {"DASHBOARD_DATA": str(data_dir), "DASHBOARD_SEED_DEMO": "0", "PYTHONPATH": str(REPO_ROOT),
                **dict(env or {})}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-k", "dashboard.server.worker.HealthFirstWorker", "-w", str(workers),
             "--threads", str(threads), "-b", f"{HOST}:{port}", "--timeout", "300", "dashboard.server.wsgi:server"],
            env={**os.environ, **settings}, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
            start_new_session=True)
    base = f"http://{HOST}:{port}"
    deadline, seen = time.monotonic() + 300, set()
    while time.monotonic() < deadline and len(seen) < workers:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{log_path.read_text()}")
        try:
            status, body = replay(base, Step("health", "GET", "/health"), timeout=5)
            if status == 200:
                seen.add(json.loads(body)["pid"])
                continue
        except OSError:
            pass
        time.sleep(0.2)
    if len(seen) < workers:
        stop_gunicorn(process)
        raise RuntimeError(f"gunicorn's {workers} workers did not all answer in time:\n{log_path.read_text()}")
    return process, base


def worker_pids(process: subprocess.Popen[bytes]) -> list[int]:
    """gunicorn's workers: the master's children."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{process.pid}/task"):
        try:
            found += [int(pid) for pid in Path(f"/proc/{process.pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def stop_gunicorn(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
