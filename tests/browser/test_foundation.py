"""The shell in a real browser: every page renders, the run travels in the URL, upload and delete work."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from dashboard.store import RunStore
from tests.support.native_select import choose

PAGES = {
    "/": "#runs-grid",
    "/insights": "#insights-page",
    "/kernels": "#kernels-page",
    "/layers": "#layers-page",
    "/timeline": "#timeline-page",
    "/memory": "#memory-page",
    "/planner": "#planner-page",
    "/compare": "#compare-page",
    "/history": "#history-page",
    "/ranks": "#ranks-page",
}


# The demo's run each page is opened on: other tests add runs of their own to the shared server (one
# without profiler steps, the newest with kernels, would leave /ranks without a chart to draw).
DEMO_RUN = {"/memory": "demo-memory", "/planner": "demo-planner"}


def demo_address(server, path: str) -> str:
    if path == "/":
        return server.url + path
    name = DEMO_RUN.get(path, "demo-training")
    run = next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == name)
    return f"{server.url}{path}?run={run}"


def wait_for_dash(page: Page) -> None:
    page.wait_for_selector("#react-entry-point ._dash-loading", state="detached", timeout=30_000)
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_renders_without_console_errors(page: Page, server, console_errors: list[str], path: str) -> None:
    page.goto(demo_address(server, path))
    wait_for_dash(page)
    expect(page.locator(PAGES[path])).to_be_visible(timeout=20_000)
    expect(page.locator(".navbar")).to_contain_text("Timeline")
    # The demo gives every page something to show: no page says its evidence is missing.
    expect(page.locator(".missing-evidence")).to_have_count(0)
    assert console_errors == []
    if path != "/":
        # Charts are drawn by the plotly.js bundle in assets/; the full 4.6 MB one is never fetched.
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
        fetched = page.evaluate("() => performance.getEntriesByType('resource').map(entry => entry.name)")
        assert any("/assets/plotly-dashboard-" in name for name in fetched)
        assert not any(name.split("?")[0].endswith("/plotly.min.js") for name in fetched)
        # Babel's ES5 polyfill is not loaded; the regenerator runtime that lazy components need is.
        assert not any("polyfill@" in name for name in fetched)
        assert page.evaluate("() => typeof regeneratorRuntime") == "object"


def test_a_page_opens_without_waiting_for_the_router_callback(page: Page, server, console_errors) -> None:
    # The layout request already holds the page (from its Referer): no callback round trip before the
    # charts, and the run picker is filled all the same.
    run = next(info.id for info in RunStore(server.data_dir).list_runs() if info.id.startswith("demo-training-"))
    posts: list[str] = []
    chunks: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.on("request", lambda request: chunks.append(request.url) if "/async-" in request.url else None)
    page.goto(f"{server.url}/kernels?run={run}&top=5")
    wait_for_dash(page)
    expect(page.locator("#kernels-bar g.trace.bars g.point")).to_have_count(5)
    assert not [url for url in posts if "_dash-update-component" in url]
    # The chart's code came with the page's scripts (versioned, cached), not asked for once React drew a
    # graph; no page draws a dcc.Dropdown, whose chunk is not fetched at all.
    graphs = [url for url in chunks if "/async-graph" in url]
    assert len(graphs) == 1 and re.search(r"/async-graph\.v[\w]+\.js$", graphs[0])
    assert not [url for url in chunks if "/async-dropdown" in url]
    expect(page.locator("#run-picker")).to_have_value(page.locator(".run-badge").inner_text())
    expect(page.locator('.navbar a[href^="/layers"]')).to_have_attribute("href", f"/layers?run={run}")
    assert console_errors == []


def test_a_page_opens_when_the_browser_sends_no_referrer(page: Page, server, console_errors) -> None:
    # Privacy settings or a proxy may strip the Referer: Dash's router then fills the page as usual.
    def without_referrer(route: Route) -> None:
        headers = {k: v for k, v in route.request.headers.items() if k.lower() != "referer"}
        route.continue_(headers=headers)

    run = next(info.id for info in RunStore(server.data_dir).list_runs() if info.id.startswith("demo-training-"))
    page.route("**/_dash-layout", without_referrer)
    page.goto(f"{server.url}/kernels?run={run}&top=5")
    wait_for_dash(page)
    expect(page.locator("#kernels-bar g.trace.bars g.point")).to_have_count(5)
    expect(page.locator("#run-picker")).to_have_value(page.locator(".run-badge").inner_text())
    assert console_errors == []


def test_demo_seeded_every_kind_of_evidence(server) -> None:
    evidence = {kind for info in RunStore(server.data_dir).list_runs() for kind in info.evidence}
    assert {"kernels", "layers", "memory", "planner"} <= evidence


def test_run_picker_writes_the_run_into_the_url_and_nav_links(page: Page, server, console_errors) -> None:
    runs = RunStore(server.data_dir).list_runs()
    target = next(info.id for info in runs if "memory" in info.evidence)
    page.goto(server.url + "/kernels")
    wait_for_dash(page)
    choose(page.locator("#run-picker"), target)
    expect(page).to_have_url(re.compile(rf"/kernels\?run={re.escape(target)}$"))
    # A run without kernels says so plainly on the kernels page and offers runs that have them.
    expect(page.locator(".missing-evidence")).to_contain_text("has no kernel activity")
    expect(page.locator('.navbar a[href^="/memory"]')).to_have_attribute("href", f"/memory?run={target}")
    page.locator('.navbar a[href^="/memory"]').click()
    expect(page.locator("#memory-page")).to_be_visible()
    expect(page.locator(".run-badge")).to_have_text(target)
    assert console_errors == []


def test_picker_names_the_default_run_of_a_page(page: Page, server) -> None:
    page.goto(server.url + "/memory")
    wait_for_dash(page)
    shown = page.locator(".run-badge").inner_text()
    # the newest run with memory evidence, whichever other tests of this server added
    assert shown == next(info.id for info in RunStore(server.data_dir).list_runs() if "memory" in info.evidence)
    expect(page.locator("#run-picker")).to_have_value(shown)
    assert "run=" not in page.url  # naming the default does not rewrite the link


def test_unknown_run_in_url_is_explained(page: Page, server) -> None:
    page.goto(server.url + "/planner?run=no-such-run")
    expect(page.locator(".missing-evidence")).to_contain_text("There is no run named")


def _upload(page: Page, files: list[Path]) -> None:
    # The zone opens the browser's file chooser (assets/upload.js), as a person clicking it sees.
    with page.expect_file_chooser() as chooser:
        page.locator("#upload").click()
    chooser.value.set_files([str(f) for f in files])


def test_upload_ingests_with_progress_and_the_run_appears(page: Page, server, tmp_path: Path,
                                                           console_errors) -> None:
    from dashboard.demo import tt_memory_log

    folder = tt_memory_log.write(tmp_path / "tt")[0]
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    page.goto(server.url + "/")
    wait_for_dash(page)
    page.locator("#run-name").fill("uploaded-memory")
    _upload(page, files)
    expect(page.locator(".ingest-success")).to_be_visible(timeout=60_000)
    expect(page.locator(".ingest-success")).to_contain_text("uploaded-memory-")
    expect(page.locator("#runs-grid")).to_contain_text("uploaded-memory-")
    created = [info for info in RunStore(server.data_dir).list_runs() if info.name == "uploaded-memory"]
    assert len(created) == 1 and "memory" in created[0].evidence
    assert console_errors == []


def test_bad_upload_names_file_and_problem_and_server_keeps_serving(page: Page, server, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 100)
    page.goto(server.url + "/")
    wait_for_dash(page)
    before = len(RunStore(server.data_dir).list_runs())
    _upload(page, [garbage])
    alert = page.locator(".ingest-error")
    expect(alert).to_be_visible(timeout=30_000)
    expect(alert).to_contain_text("garbage.bin")
    expect(alert).to_contain_text("binary data")
    assert len(RunStore(server.data_dir).list_runs()) == before
    kept = list((server.data_dir / "uploads" / "failed").rglob("garbage.bin"))
    assert kept and kept[0].read_bytes() == garbage.read_bytes()  # nothing a user gave us is lost
    expect(page.locator("#failed-uploads")).to_contain_text("garbage.bin")  # offered for a retry or delete
    with urllib.request.urlopen(server.url + "/health", timeout=5) as response:
        assert response.status == 200
    page.goto(server.url + "/memory")
    expect(page.locator("#memory-page")).to_be_visible()


def test_delete_asks_for_confirmation(page: Page, server) -> None:
    store = RunStore(server.data_dir)
    victim = store.write("to-delete", {"kernels": __import__("polars").DataFrame(
        {"name": ["k"], "start_ns": [0], "end_ns": [5]})})
    page.goto(server.url + "/")
    wait_for_dash(page)
    page.locator(f'.ag-row[row-id="{victim}"] input[type=checkbox]').first.check()
    dialogs: list[str] = []

    def accept(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.locator("#delete-runs").click()
    expect(page.locator("#delete-message")).to_contain_text(f"Deleted {victim}")
    assert dialogs and victim in dialogs[0]
    assert not store.exists(victim)
    expect(page.locator(f'.ag-row[row-id="{victim}"]')).to_have_count(0)


def test_charts_zip_downloads_a_zip_of_the_pages_charts(page: Page, server, tmp_path: Path) -> None:
    """The second choice beside "Export page as PNG" (tests/browser/test_page_png.py): one PNG per chart."""
    import zipfile

    run_id = next(info.id for info in RunStore(server.data_dir).list_runs() if "memory" in info.evidence)
    page.goto(f"{server.url}/memory?run={run_id}&unit=device")
    wait_for_dash(page)
    with page.expect_download(timeout=120_000) as download_info:
        page.locator(".export-chart-pngs").click()
    download = download_info.value
    assert download.suggested_filename == f"{run_id}-memory.zip"
    assert "unit=device" in download.url  # the view state in the address bar travels with the export
    target = tmp_path / "page.zip"
    download.save_as(target)
    names = zipfile.ZipFile(target).namelist()
    assert len(names) == 2 and all(name.endswith(".png") for name in names)


def test_the_layout_is_fetched_once_from_the_head_while_the_scripts_load(page: Page, server, console_errors) -> None:
    # The head preloads _dash-layout and _dash-dependencies (app.interpolate_index); the renderer's own
    # requests are served from those: one request each, sent before the renderer could have asked.
    run = next(info.id for info in RunStore(server.data_dir).list_runs() if info.id.startswith("demo-training-"))
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url.split("?")[0].rsplit("/", 1)[-1]))
    page.goto(f"{server.url}/kernels?run={run}")
    wait_for_dash(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
    assert asked.count("_dash-layout") == 1 and asked.count("_dash-dependencies") == 1
    entries = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter(entry => entry.name.includes('/_dash-layout') || entry.name.includes('dash_renderer'))
        .map(entry => [entry.name.includes('/_dash-layout') ? 'layout' : 'renderer', entry.initiatorType,
                       entry.startTime])""")
    starts = {name: (initiator, start) for name, initiator, start in entries}
    assert starts["layout"][0] == "link" and starts["layout"][1] <= starts["renderer"][1] + 5
    assert console_errors == []
