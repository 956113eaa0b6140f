"""Compare beyond kernels in a real browser: runs picked on the Runs page, the memory section, the history trend.

Its own server: the second memory run and the history series added here would change the default run of
other pages' tests sharing the session server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dashboard.demo import tt_memory_log
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.browser.conftest import Server, start_server
from tests.support.demo_copy import demo_copy
from tests.support.kernel_tables import kernel_tables
from tests.support.native_select import choose
from tests.support.settled_click import click_centre


@pytest.fixture(scope="module")
def compare_server(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("compare-sections")
    running = start_server(demo_copy(demo_template, root / "data"), root / "server.log")
    store = RunStore(running.data_dir)
    memory = next(info.id for info in store.list_runs() if info.name == "demo-memory")
    planner = next(info.id for info in store.list_runs() if info.name == "demo-planner")
    small = ingest_paths(store, tt_memory_log.write(root / "memory-small", n_ops=200), name="memory-small")
    series = [store.write("series", kernel_tables(kernels_per_stream=40 + 20 * i, seed=i)) for i in range(3)]
    running.extra.update(memory=memory, small=small, series=series, planner=planner)
    yield running
    running.stop()


def test_two_runs_ticked_on_the_runs_page_open_their_compare(page: Page, compare_server, console_errors) -> None:
    memory, small = compare_server.extra["memory"], compare_server.extra["small"]
    page.goto(compare_server.url + "/")
    button = page.locator("#compare-runs")
    expect(button).to_be_disabled(timeout=20_000)
    for run_id in (small, memory):
        page.locator(f'.ag-row[row-id="{run_id}"] input[type=checkbox]').first.check()
    expect(button).to_be_enabled()
    button.click()
    # The older run is A (the baseline).
    expect(page).to_have_url(re.compile(rf"/compare\?run={memory}&other={small}"), timeout=20_000)
    expect(page.locator("#compare-sides")).to_contain_text(f"A = {memory}")
    expect(page.locator("#compare-memory-section")).to_be_visible(timeout=20_000)
    assert console_errors == []


def test_memory_section_curves_and_peaks(page: Page, compare_server, console_errors) -> None:
    memory, small = compare_server.extra["memory"], compare_server.extra["small"]
    page.goto(f"{compare_server.url}/compare?run={memory}&other={small}")
    expect(page.locator("#compare-memory .js-plotly-plot")).to_be_visible(timeout=20_000)
    # Kernel charts are hidden: neither run has kernels.
    expect(page.locator("#compare-kernel-section")).to_be_hidden()
    expect(page.locator("#compare-kernel-controls")).to_be_hidden()
    expect(page.locator("#compare-memory-alignment")).to_contain_text("by op identity")
    expect(page.locator("#compare-memory-parted")).to_contain_text("The curves part at aligned op")
    traces = page.evaluate("""() => document.querySelector('#compare-memory .js-plotly-plot').data
        .map(t => ({name: t.name, points: t.x.length, yaxis: t.yaxis || 'y'}))""")
    dram = [t for t in traces if t["yaxis"] == "y"]
    lines = {t["name"].split(" ")[0]: t["points"] for t in dram if not t["name"].startswith("peak")}
    # A (the longer run) has more ops on the shared axis than B; both peaks are starred.
    assert lines["A"] > lines["B"] > 100
    assert sum(t["name"].startswith("peak") for t in dram) == 2
    peaks = page.locator("#compare-memory-peaks tbody tr")
    expect(peaks.first).to_contain_text("DRAM")
    cells = peaks.first.locator("td").all_inner_texts()
    assert cells[1].endswith("MiB") and cells[4].startswith("op ") and cells[5].startswith("op ")
    page.locator("#compare-memory-section summary").click()
    expect(page.locator("#compare-memory-stretches tbody tr").first).to_contain_text("both")
    assert console_errors == []


def test_history_point_opens_the_compare_with_the_run_before(page: Page, compare_server, console_errors) -> None:
    series = compare_server.extra["series"]
    page.goto(f"{compare_server.url}/history?name=series")
    plot = page.locator("#history-trend .js-plotly-plot")
    expect(plot).to_be_visible(timeout=20_000)
    expect(page.locator("#history-runs tbody tr")).to_have_count(3)
    # Click the step-time point of the last run: its compare against the second run opens.
    points = page.locator("#history-trend g.trace.scatter").first.locator("path.point")
    expect(points).to_have_count(3)
    click_centre(page, points.nth(2))
    expect(page).to_have_url(re.compile(rf"/compare\?run={series[1]}&other={series[2]}"), timeout=20_000)
    expect(page.locator("#compare-sides")).to_contain_text(f"A = {series[1]}")
    expect(page.locator("#compare-passes-section")).to_be_visible(timeout=20_000)
    expect(page.locator("#compare-kernel-controls")).to_be_visible()
    assert console_errors == []


def test_planner_dumps_picked_and_kept_in_the_url(page: Page, compare_server, console_errors) -> None:
    planner = compare_server.extra["planner"]
    page.goto(f"{compare_server.url}/compare?run={planner}&other={planner}")
    counts = page.locator("#compare-planner-counts")
    expect(counts).to_contain_text("19 same", timeout=20_000)  # a dump against itself: nothing changed
    expect(page.locator("#compare-liveness .js-plotly-plot")).to_be_visible()
    choose(page.locator("#compare-group-b"), "demo-planner#2")
    expect(counts).to_contain_text("removed")
    expect(page).to_have_url(re.compile(r"other_group=demo-planner%232"))
    page.reload()
    expect(counts).to_contain_text("removed", timeout=20_000)
    assert console_errors == []
