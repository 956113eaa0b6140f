"""The Runs grid's link cells in a real browser: its downloads save a run's Perfetto trace and a table as CSV,
its "Open" links lead to every page with data for the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
from playwright.sync_api import Page, expect

from dashboard import schema
from dashboard.store import RunStore
from dashboard.views import run_pages
from tests.support.kernel_tables import kernel_tables


def wait_for_dash(page: Page) -> None:
    page.wait_for_selector("#react-entry-point ._dash-loading", state="detached", timeout=30_000)
    page.wait_for_load_state("networkidle")


def test_runs_grid_downloads_the_trace_and_a_csv(page: Page, server, console_errors: list[str],
                                                   tmp_path: Path) -> None:
    tables = kernel_tables(kernels_per_stream=10)
    run_id = RunStore(server.data_dir).write("browser-downloads", tables)
    page.goto(server.url + "/")
    wait_for_dash(page)
    cell = page.locator(f'.runs-grid [row-id="{run_id}"] [col-id="download"]')
    expect(cell).to_contain_text("trace.json")

    with page.expect_download() as trace_download:
        cell.get_by_role("link", name="trace.json").click()
    assert trace_download.value.suggested_filename == f"{run_id}.trace.json"
    trace_path = tmp_path / "trace.json"
    trace_download.value.save_as(trace_path)
    events = json.loads(trace_path.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" and e["cat"] == "kernel" for e in events) == tables["kernels"].height
    assert any(e["ph"] == "M" and e["args"].get("name") == "rank 0 · GPU 0" for e in events)

    with page.expect_download() as csv_download:
        cell.get_by_role("link", name="kernels.csv").click()
    assert csv_download.value.suggested_filename == f"{run_id}.kernels.csv"
    csv_path = tmp_path / "kernels.csv"
    csv_download.value.save_as(csv_path)
    downloaded = pl.read_csv(csv_path, schema=schema.schema_of("kernels"))
    assert downloaded.equals(tables["kernels"].sort("start_ns"))

    # Downloading leaves the page where it was.
    assert page.url.rstrip("/") == server.url.rstrip("/")
    expect(page.locator("#runs-grid")).to_be_visible()
    assert console_errors == []


def test_runs_grid_open_cell_links_every_page_with_data_insights_first(page: Page, server,
                                                                       console_errors: list[str]) -> None:
    store = RunStore(server.data_dir)
    run_id = store.write("browser-open-links", kernel_tables(kernels_per_stream=10))
    expected = [(text, path) for path, text, _query in run_pages.run_links(store.open(run_id), {})]
    assert expected[0][1] == "/insights" and len(expected) >= 3
    page.goto(server.url + "/")
    wait_for_dash(page)
    links = page.locator(f'.runs-grid [row-id="{run_id}"] [col-id="open"] a')
    expect(links).to_have_count(len(expected))
    assert links.all_text_contents() == [text for text, _path in expected]
    for index, (_text, path) in enumerate(expected):
        href = links.nth(index).get_attribute("href") or ""
        assert href.startswith(path + "?") and f"run={run_id}" in href, href
    links.first.click()  # a plain link: the page it names, for this run
    expect(page).to_have_url(re.compile(r"/insights\?run=" + re.escape(run_id)))
    expect(page.locator("#insights-page")).to_be_visible()
    assert console_errors == []
