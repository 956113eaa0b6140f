"""One PNG of a page as the user sees it: its URL, view state included, rendered in headless Chromium.

Why Playwright (a main dependency for this): it drives the system Chromium (`executable_path`, the
same binary kaleido uses; no browser is ever downloaded) and gives what a faithful page image
needs in a few calls: the user's credentials on every request of the page (the Basic-auth header
and cookies of the request that asked for the export), waiting until the page has drawn, and a
full-height screenshot. The `chromium --headless --screenshot` command line can do neither the
credentials nor the full height.

The page is loaded from one fixed origin, this server's own (`own_base_url`): the public URL an
administrator configured (`Settings.public_url`), else the address the server is bound on (the
socket the request came in on, never its Host header nor its `SCRIPT_NAME`: gunicorn takes the
latter from a header of trusted peers, and a forged one once made this browser load an internal
URL with the user's login). The path is the page's own (Dash's page registry, handed over by the
app), the query the page's view state parsed and written again (`views.<page>.State`). The browser
is jailed to that origin twice: every request it makes is intercepted and anything for another
origin is aborted, and its proxy is a closed port that only the origin bypasses (a redirect's
follow-up, which interception does not see, goes nowhere). The user's credentials travel only on
the requests for that origin. One export at a time per process: each holds a browser (a few
hundred MB) for a few seconds; a second one is answered "busy" at once instead of holding a worker.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from dashboard.exports.png import PngExportUnavailable, chromium_path

log = logging.getLogger("dashboard.exports.page_png")

DEFAULT_WIDTH = 1440
MIN_WIDTH, MAX_WIDTH = 640, 3840
SCALES = (1, 2)
TIMEOUT_MS = 60_000
# Chromium cannot paint a screenshot taller than its largest texture; a page beyond it is refused.
MAX_HEIGHT_PX = 32_000
WIDTH_PARAM, SCALE_PARAM = "export_width", "export_scale"  # the export's own; not passed to the page
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]
_one_at_a_time = threading.Lock()
# The export's browser sends everything but its own origin here: a port nothing listens on (discard).
_NOWHERE_PROXY = "http://127.0.0.1:9"

# Drawn: Dash has no callback in flight, every chart has its SVG, tables waiting for the charts are
# in, Graphviz frames are attached, and the document's height has held still for SETTLE_MS (a grid
# or a lazily loaded component arrives after the first idle moment). Polled by `wait_for_function`.
SETTLE_MS = 700
_DRAWN_JS = """() => {
    const drawn = (() => {
        if (!document.querySelector('#_pages_content > *')) { return false; }
        if (document.querySelector('._dash-loading, [data-dash-is-loading="true"]')) { return false; }
        for (const graph of document.querySelectorAll('.dash-graph')) {
            if (!graph.querySelector('.main-svg')) { return false; }
        }
        if (document.querySelector('[data-after-charts="waiting"]')) { return false; }
        for (const frame of document.querySelectorAll('iframe.dot-view')) {
            if (frame.dataset.ready !== '1') { return false; }
        }
        return true;
    })();
    const height = document.documentElement.scrollHeight, now = performance.now();
    if (!drawn || window.__exportHeight !== height) {
        window.__exportHeight = height;
        window.__exportSince = now;
        return false;
    }
    return now - window.__exportSince >= SETTLE_MS;
}""".replace("SETTLE_MS", str(SETTLE_MS))


# Every table is drawn: each AG Grid shows rows or says it has none. A grid (or a `content-visibility` code
# panel) out of the browser's view may not draw its rows at all, so the page is captured with a viewport
# as tall as the page itself (`_whole_page`): what is below the fold is in view too.
_TABLES_JS = """() => Array.from(document.querySelectorAll('.ag-root-wrapper')).every(grid =>
    grid.querySelector('.ag-row, .ag-overlay-no-rows-wrapper, .ag-overlay-no-rows-center') !== null)"""


def _whole_page(page: Any, width: int, timeout_ms: int) -> int:
    """Make the viewport as tall as the page, wait for what that brings into view to draw, and return the
    page's height (a table drawing its rows can make the page taller: measured again until it holds)."""
    height = int(page.evaluate("() => document.documentElement.scrollHeight"))
    for _ in range(3):
        page.set_viewport_size({"width": width, "height": max(1, min(height, MAX_HEIGHT_PX))})
        page.wait_for_function(_DRAWN_JS, timeout=timeout_ms, polling=100)
        page.wait_for_function(_TABLES_JS, timeout=timeout_ms, polling=100)
        now = int(page.evaluate("() => document.documentElement.scrollHeight"))
        if now == height:
            break
        height = now
    return height


class PageExportFailed(RuntimeError):
    """The page could not be rendered; the message says why in one line."""


class PageExportBusy(PageExportFailed):
    """Another export holds this process's browser: try again (HTTP 503)."""


@dataclass(frozen=True)
class PageShot:
    png: bytes
    width: int  # CSS px
    height: int  # CSS px: the document's full scroll height
    scale: int


def export_options(query: Mapping[str, str]) -> tuple[int, int]:
    """(width in CSS px, device scale) asked for by the export's own query parameters."""
    try:
        width = int(float(query.get(WIDTH_PARAM) or DEFAULT_WIDTH))
    except ValueError:
        width = DEFAULT_WIDTH
    try:
        scale = round(float(query.get(SCALE_PARAM) or 1))
    except ValueError:
        scale = 1
    return min(MAX_WIDTH, max(MIN_WIDTH, width)), scale if scale in SCALES else 1


def page_query(query: Mapping[str, str], run_id: str) -> dict[str, str]:
    """The page's own view state: the export's parameters dropped, the run fixed."""
    state = {key: value for key, value in query.items() if key not in (WIDTH_PARAM, SCALE_PARAM)}
    state["run"] = run_id
    return state


def local_base_url(environ: Mapping[str, Any]) -> str:
    """This server as bound: the connection's local address (werkzeug or gunicorn), e.g.
    `http://127.0.0.1:8050`; never the Host header nor the script root, which a client chooses."""
    connection = environ.get("werkzeug.socket") or environ.get("gunicorn.socket")
    if connection is not None:
        host, port = connection.getsockname()[:2]
        scheme = "https" if isinstance(connection, ssl.SSLSocket) else "http"
    else:  # a WSGI server that does not expose its socket: its bind address
        host, port = environ.get("SERVER_NAME", "127.0.0.1"), environ.get("SERVER_PORT", "80")
        scheme = "http"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise PageExportFailed(f"cannot tell this server's own address (got {host!r}); "
                               "set DASHBOARD_PUBLIC_URL") from None
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"{scheme}://{shown}:{int(port)}"


def own_base_url(public_url: str, environ: Mapping[str, Any]) -> str:
    """Where the export's browser loads pages: the configured public URL (scheme, host, port and path
    prefix, nothing else of it), else this server as bound (`local_base_url`)."""
    if not public_url:
        return local_base_url(environ)
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise PageExportFailed("the configured public URL (DASHBOARD_PUBLIC_URL) is not an http(s) URL of a host")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def origin_of(url: str) -> str:
    """scheme://host:port of a URL, the port always written (two spellings of one origin compare equal)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port}"


def page_url(base_url: str, page_path: str, state: Mapping[str, str]) -> str:
    """The page's URL: the base, the page's registered path, its view state as a query."""
    if not page_path.startswith("/") or page_path.startswith("//"):
        raise PageExportFailed(f"not a page path: {page_path!r}")
    return f"{base_url}{page_path}?{urlencode(state)}"


def _jail_args(origin: str) -> list[str]:
    # Chromium never proxies loopback unless told (`<-loopback>`); the bypass names the origin's host:port.
    host_port = origin.split("://", 1)[1]
    return [f"--proxy-server={_NOWHERE_PROXY}", f"--proxy-bypass-list=<-loopback>;{host_port}"]


def capture_page(url: str, width: int = DEFAULT_WIDTH, scale: int = 1, headers: Mapping[str, str] | None = None,
                 cookies: Mapping[str, str] | None = None, timeout_ms: int = TIMEOUT_MS) -> PageShot:
    """The page at `url`, once drawn, as one full-height PNG at `width` CSS px and `scale`x.

    The browser reaches `url`'s origin and nothing else; `headers` (the user's login) go only there.
    Playwright's sync API refuses a thread that runs an asyncio loop (an async server, a notebook, a test
    process holding pytest-playwright's browser), so the browser is driven from a thread of its own.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-export") as driver:
        return driver.submit(_capture_page, url, width, scale, headers, cookies, timeout_ms).result()


def _capture_page(url: str, width: int, scale: int, headers: Mapping[str, str] | None,
                  cookies: Mapping[str, str] | None, timeout_ms: int) -> PageShot:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import Route, sync_playwright

    executable = chromium_path()  # PngExportUnavailable names the package to install
    origin = origin_of(url)
    credentials = dict(headers or {})
    refused: list[str] = []

    def only_own_origin(route: Route) -> None:
        request = route.request
        if origin_of(request.url) != origin:
            refused.append(origin_of(request.url) if request.url.startswith("http") else request.url[:40])
            route.abort("blockedbyclient")
            return
        route.continue_(headers={**request.headers, **credentials})

    if not _one_at_a_time.acquire(blocking=False):
        raise PageExportBusy("another page export is running in this server process; try again in a minute")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS + _jail_args(origin))
            try:
                context = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=scale,
                                              service_workers="block")
                context.route("**/*", only_own_origin)
                if cookies:
                    context.add_cookies([{"name": name, "value": value, "url": url}
                                         for name, value in cookies.items()])
                page = context.new_page()
                response = page.goto(url, wait_until="networkidle", timeout=timeout_ms)
                if response is None or not response.ok:
                    status = response.status if response is not None else "no answer"
                    raise PageExportFailed(f"the page answered {status} to the export's browser")
                page.evaluate("() => document.fonts.ready")
                page.wait_for_function(_DRAWN_JS, timeout=timeout_ms, polling=100)
                height = _whole_page(page, width, timeout_ms)
                if height * scale > MAX_HEIGHT_PX:
                    raise PageExportFailed(f"the page is {height} px tall, more than one image can hold "
                                           f"({MAX_HEIGHT_PX // scale} px at {scale}x); use the per-chart zip")
                png = page.screenshot(full_page=True, type="png", animations="disabled", timeout=timeout_ms)
                return PageShot(png, width, height, scale)
            finally:
                browser.close()
    except PlaywrightError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PageExportFailed(f"the export's browser failed: {first_line}") from None
    finally:
        _one_at_a_time.release()
        if refused:
            log.warning("page export of %s: refused requests for %s", url, ", ".join(sorted(set(refused))[:10]))


__all__ = ["PageExportBusy", "PageExportFailed", "PageShot", "PngExportUnavailable", "capture_page", "export_options",
           "local_base_url", "origin_of", "own_base_url", "page_query", "page_url"]
