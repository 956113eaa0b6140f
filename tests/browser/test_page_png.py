""""Export page as PNG": one image of the page as seen, full height, view state and login included."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageChops
from playwright.sync_api import Browser, Page, expect

from dashboard.server.auth import make_user_line
from dashboard.store import RunStore

WIDTH = 1280
# Drawn, and the height unchanged for a second (the kernels grid arrives after the charts).
SETTLED = """() => {
    const drawn = !document.querySelector('._dash-loading, [data-dash-is-loading="true"]')
        && [...document.querySelectorAll('.dash-graph')].every(g => g.querySelector('.main-svg'))
        && document.querySelector('.ag-row') !== null;
    const height = document.documentElement.scrollHeight;
    if (!drawn || window.__testHeight !== height) {
        window.__testHeight = height; window.__testSince = performance.now(); return false;
    }
    return performance.now() - window.__testSince > 1000;
}"""


@pytest.fixture(autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=15_000)
    yield
    expect.set_options(timeout=5_000)


def kernel_run(data_dir: Path) -> str:
    return next(info.id for info in RunStore(data_dir).list_runs() if info.name == "demo-training")


def open_drawn(page: Page, url: str) -> int:
    """Open `url` at WIDTH, wait until drawn, then scrolled through (a window as tall as the page: what is
    below the fold draws, as when a reader scrolls to it); the document's scroll height."""
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(url)
    page.wait_for_function(SETTLED, timeout=30_000, polling=100)
    height = int(page.evaluate("() => document.documentElement.scrollHeight"))
    page.set_viewport_size({"width": WIDTH, "height": height})
    page.wait_for_function(SETTLED, timeout=30_000, polling=100)
    return int(page.evaluate("() => document.documentElement.scrollHeight"))


def ink(image: Image.Image, box: dict[str, float]) -> float:
    """The share of dark pixels (text) inside `box` (CSS px of the page, image at 1x)."""
    region = image.convert("L").crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]),
                                      int(box["y"] + box["height"])))
    return sum(1 for value in region.getdata() if value < 110) / max(region.width * region.height, 1)


def export_page_png(page: Page, tmp_path: Path) -> tuple[str, str, Image.Image]:
    with page.expect_download(timeout=120_000) as download_info:
        page.locator(".export-page-png").click()
    download = download_info.value
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    image = Image.open(io.BytesIO(target.read_bytes()))
    assert image.format == "PNG"
    return download.suggested_filename, download.url, image


def share_differing(a: Image.Image, b: Image.Image) -> float:
    """The share of pixels that differ visibly (any channel by more than 48 of 255)."""
    difference = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).convert("L").point(lambda v: v > 48)
    return sum(difference.getdata()) / (a.width * a.height)


@pytest.mark.parametrize(("demo", "path", "view"), [
    ("demo-training", "kernels", "top=5&group=name"),
    ("demo-planner", "planner", "op=61"),  # plotly timelines in scroll boxes, a cytoscape graph, grids
])
def test_the_page_png_is_the_page_as_seen_at_its_full_height(page: Page, server, tmp_path: Path,
                                                             console_errors: list[str], demo: str, path: str,
                                                             view: str) -> None:
    # The demo's runs by name: other tests add runs with the same evidence to the shared server.
    run_id = next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == demo)
    height = open_drawn(page, f"{server.url}/{path}?run={run_id}&{view}")
    assert height > 900  # taller than the window: the export must not stop at the fold
    seen = Image.open(io.BytesIO(page.screenshot(full_page=True)))
    name, url, image = export_page_png(page, tmp_path)
    assert name == f"{run_id}-{path}.png"
    assert view.split("&")[0] in url and f"export_width={WIDTH}" in url  # view state and window width travel
    assert image.size == (WIDTH, height)  # one image, the page's full height, at the window's scale (1x)
    # The same page: pixel for pixel but a few (a focus ring on the clicked button, anti-aliasing).
    assert seen.size == image.size
    assert share_differing(seen, image) < 0.03
    assert console_errors == []


def test_the_page_png_carries_the_login(browser: Browser, server, tmp_path: Path) -> None:
    """With login on, the export's own browser is let in with the user's credentials (not a 401 page)."""
    from tests.browser.conftest import start_server

    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    run_id = kernel_run(server.data_dir)
    shutil.copytree(server.data_dir / "runs" / run_id, data / "runs" / run_id)
    other = start_server(data, tmp_path / "server.log", "--no-demo",
                         env={"DASHBOARD_USERS": make_user_line("alice", "wonderland-7")})
    context = browser.new_context(http_credentials={"username": "alice", "password": "wonderland-7"})
    try:
        page = context.new_page()
        height = open_drawn(page, f"{other.url}/kernels?run={run_id}&top=3")
        _name, _url, image = export_page_png(page, tmp_path)
        assert image.size == (WIDTH, height)
        # Without credentials the route itself is closed.
        anonymous = browser.new_context()
        response = anonymous.request.get(f"{other.url}/runs/{run_id}/export/kernels.png")
        assert response.status == 401
        anonymous.close()
    finally:
        context.close()
        other.stop()


def test_the_page_png_has_the_rows_of_the_tables_below_the_fold(page: Page, server, tmp_path: Path) -> None:
    """The planner's Partitions and Channels grids sit far below the first screen: their rows are in the PNG."""
    run_id = next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == "demo-planner")
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{server.url}/planner?run={run_id}")
    page.wait_for_function(SETTLED, timeout=30_000, polling=100)
    below = {}
    for grid in ("planner-partition-table", "planner-channel-table"):
        box = page.evaluate("""(id) => { const body = document.querySelector('#' + id + ' .ag-body-viewport');
            const r = body.getBoundingClientRect();
            return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: Math.min(r.height, 60)}; }""",
                            grid)
        assert box["y"] > 900  # below the fold
        below[grid] = box
    _name, _url, image = export_page_png(page, tmp_path)
    for grid, box in below.items():
        assert ink(image, box) > 0.001, f"{grid}: no rows in the PNG"  # an empty grid body: no dark pixel
