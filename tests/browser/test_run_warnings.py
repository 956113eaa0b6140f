"""Ingest warnings in the browser: on the runs page and on the page of the evidence they concern."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.browser.test_foundation import wait_for_dash
from tests.collectors.test_kineto_parsing import launch, write, x

LINE = "1 kernel starts or ends more than 10 years away from the rest of the trace; dropped"


def test_dropped_kernels_are_told_on_the_runs_page_and_the_kernels_page(page: Page, server, tmp_path: Path,
                                                                         console_errors: list[str]) -> None:
    events = [x("cpu_op", "aten::mm", 10, 50, **{"External id": 1}), *launch(11, 1, 20, 3, ext=1),
              *launch(12, 2, 7e14, 3, ext=1)]
    path = write(tmp_path / "warned.json", events)
    run_id = ingest_paths(RunStore(server.data_dir), [path], name="warned")

    page.goto(server.url + "/")
    wait_for_dash(page)
    row = page.locator(f".runs-grid .ag-row[row-id='{run_id}']")
    expect(row.locator("[col-id='warnings']")).to_have_text("⚠ 1", timeout=20_000)
    overview = page.locator(f".runs-warnings .run-warnings[data-run='{run_id}']")
    expect(overview).to_contain_text("⚠ 1 ingest warning")
    overview.locator("summary").click()
    expect(overview.locator("li")).to_have_text(f"warned.json: {LINE}")

    page.goto(f"{server.url}/kernels?run={run_id}")
    wait_for_dash(page)
    warnings = page.locator(".page-header .run-warnings")
    expect(warnings).to_contain_text("⚠ 1 ingest warning", timeout=20_000)
    expect(warnings.locator("li")).to_be_hidden()  # collapsed until asked
    warnings.locator("summary").click()
    expect(warnings.locator("li")).to_have_text(f"warned.json: {LINE}")
    assert console_errors == []
