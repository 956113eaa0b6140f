"""/kernels in a real browser: bar click, box select, table selection, URL state and its restore."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from dashboard.analysis import kernels as ka
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.store import RunStore
from dashboard.views.params import format_window
from tests.support.layered_run import DEVICE_METADATA, GEMM, layered_tables
from tests.support.settled_click import click_centre

DISTINCT_KERNELS = 6
CENTER_ROWS = "#kernels-table .ag-center-cols-container .ag-row"


@pytest.fixture(scope="module")
def run_id(server) -> str:
    return RunStore(server.data_dir).write("kernel-views", layered_tables(), metadata=DEVICE_METADATA)


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def open_kernels(page: Page, server, run_id: str, **params: str) -> None:
    extra = "".join(f"&{key}={value}" for key, value in params.items())
    page.goto(f"{server.url}/kernels?run={run_id}{extra}")
    expect(page.locator("#kernels-bar g.trace.bars g.point").first).to_be_visible(timeout=20_000)
    expect(page.locator(CENTER_ROWS).first).to_be_visible(timeout=20_000)


def click_plot_point(page: Page, locator) -> None:
    """Click the middle of a plotted mark: plotly's drag layer sits on top, so click by position."""
    click_centre(page, locator)


def wait_selected(page: Page, graph: str, count: int) -> None:
    page.wait_for_function(f"""() => {{
        const plot = document.querySelector('#{graph} .js-plotly-plot');
        const points = plot && plot.data && plot.data[0].selectedpoints;
        return points != null && points.length === {count}; }}""", timeout=10_000)


def test_bar_click_selects_highlights_and_carries(page: Page, server, run_id: str, console_errors) -> None:
    open_kernels(page, server, run_id)
    top_key = page.evaluate("() => document.querySelector('#kernels-bar .js-plotly-plot').data[0].customdata[0]")
    assert top_key == kernel_key(GEMM.replace("tn_n_tilesize128x256", "nt_n_tilesize128x128"))  # backward GEMM
    click_plot_point(page, page.locator("#kernels-bar g.trace.bars g.point").first)
    expect(page).to_have_url(re.compile(rf"sel={top_key}(&|$)"))
    wait_selected(page, "kernels-scatter", 1)
    wait_selected(page, "kernels-bar", 1)
    expect(page.locator(f"{CENTER_ROWS}.ag-row-selected")).to_have_count(1)
    expect(page.locator(f'{CENTER_ROWS}[row-id="{top_key}"]')).to_have_class(re.compile("ag-row-selected"))
    # The selection travels with the navbar link to the timeline.
    expect(page.locator('.navbar a[href^="/timeline"]')).to_have_attribute("href", re.compile(f"sel={top_key}"))
    # Clicking the same bar again removes it.
    click_plot_point(page, page.locator("#kernels-bar g.trace.bars g.point").first)
    expect(page).not_to_have_url(re.compile("sel="))
    expect(page.locator(f"{CENTER_ROWS}.ag-row-selected")).to_have_count(0)
    assert console_errors == []


def test_box_select_on_scatter_selects_every_point_inside(page: Page, server, run_id: str, console_errors) -> None:
    open_kernels(page, server, run_id)
    area = page.locator("#kernels-scatter .nsewdrag").first.bounding_box()
    assert area is not None
    page.mouse.move(area["x"] + 3, area["y"] + 3)
    page.mouse.down()
    page.mouse.move(area["x"] + area["width"] - 3, area["y"] + area["height"] - 3, steps=10)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"sel=([0-9a-f]{8}\.){5}[0-9a-f]{8}(&|$)"))
    assert len(query(page)["sel"].split(".")) == DISTINCT_KERNELS
    expect(page.locator(f"{CENTER_ROWS}.ag-row-selected")).to_have_count(DISTINCT_KERNELS)
    wait_selected(page, "kernels-bar", DISTINCT_KERNELS)
    assert console_errors == []


def test_table_row_selection_highlights_charts(page: Page, server, run_id: str, console_errors) -> None:
    open_kernels(page, server, run_id)
    second = page.locator(f'{CENTER_ROWS}[row-index="1"]')
    key = second.get_attribute("row-id")
    page.locator('#kernels-table .ag-pinned-left-cols-container .ag-row[row-index="1"] input[type="checkbox"]').click()
    expect(page).to_have_url(re.compile(rf"sel={key}(&|$)"))
    wait_selected(page, "kernels-bar", 1)
    assert page.evaluate("() => document.querySelector('#kernels-bar .js-plotly-plot').data[0].selectedpoints[0]") == 1
    wait_selected(page, "kernels-scatter", 1)
    # "only the selection" filters the table down to the selected kernel.
    page.locator("#kernels-only-selected").check()
    expect(page.locator(CENTER_ROWS)).to_have_count(1)
    expect(page).to_have_url(re.compile("only=1"))
    assert console_errors == []


def test_url_restores_selection_and_window_then_clear(page: Page, server, run_id: str, console_errors) -> None:
    tables = layered_tables()
    kernels = ka.prepare_kernels(tables["kernels"])
    start = int(kernels.get_column("start_ns").min())
    end = int(kernels.get_column("end_ns").max())
    window = (start, start + (end - start) // 3)
    in_window = ka.filter_kernels(kernels, window=window).height
    key = kernel_key(GEMM)
    open_kernels(page, server, run_id, sel=key, window=format_window(*window))
    expect(page.locator("#kernels-window-chip")).to_be_visible()
    expect(page.locator("#kernels-window-text")).to_contain_text("window: ")
    expect(page.locator("#kernels-totals")).to_contain_text(f"{in_window:,} launches")
    expect(page.locator(f'{CENTER_ROWS}[row-id="{key}"]')).to_have_class(re.compile("ag-row-selected"))
    wait_selected(page, "kernels-scatter", 1)
    # The same window reads the same on /timeline: both measure from the run's first instant.
    chip = page.locator("#kernels-window-text").inner_text()
    other = page.context.new_page()
    other.goto(f"{server.url}/timeline?run={run_id}&window={format_window(*window)}")
    expect(other.locator("#timeline-window-text")).to_have_text(chip, timeout=20_000)
    other.close()
    page.locator("#kernels-window-clear").click()
    expect(page.locator("#kernels-window-chip")).to_be_hidden()
    expect(page).not_to_have_url(re.compile("window="))
    expect(page.locator("#kernels-totals")).to_contain_text(f"{kernels.height:,} launches")
    assert query(page)["sel"] == key  # the selection survives clearing the window
    assert console_errors == []


def test_group_by_layer_and_single_rank(page: Page, server, run_id: str, console_errors) -> None:
    open_kernels(page, server, run_id, rank="1")
    expect(page.locator("#kernels-totals")).to_contain_text(f"{layered_tables()['kernels'].height // 2:,} launches")
    page.get_by_text("layer", exact=True).click()
    expect(page).to_have_url(re.compile("group=layer"))
    expect(page.locator('#kernels-table .ag-header-cell[col-id="label"] .ag-header-cell-text')).to_have_text("Layer")
    expect(page.locator(CENTER_ROWS)).to_have_count(4)
    page.locator("#kernels-csv").click()  # the grid's own CSV export: must not raise in the page
    assert console_errors == []


def test_table_numbers_read_as_d3_formatted_them(page: Page, server, run_id: str, console_errors) -> None:
    # The formatters in assets/grid-formats.js stand in for d3.format(",.4~r") and d3.format(","):
    # the expected texts are d3-format's for these values.
    open_kernels(page, server, run_id)
    cases = {
        "formatSig4": [(98352, "98,350"), (135.3938, "135.4"), (1.5299, "1.53"), (0, "0"), (-1.5, "\u22121.5"),
                       (1234567, "1,235,000"), (0.000012346, "0.00001235"), (None, "\u2013")],
        "formatCount": [(98352, "98,352"), (7, "7"), (-1200, "\u22121,200"), (None, "\u2013")],
    }
    for function, pairs in cases.items():
        shown = page.evaluate(f"values => values.map(v => window.dashAgGridFunctions.{function}(v))",
                              [value for value, _ in pairs])
        assert shown == [text for _, text in pairs], function
    launches = page.locator(f"{CENTER_ROWS} [col-id='count']").first.inner_text()
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", launches), launches
    assert console_errors == []


ORDER_PROBE = """
window.__drawn = {};
new MutationObserver(() => {
    const graphs = document.querySelectorAll('.dash-graph');
    if (!window.__drawn.charts && graphs.length >= 2
        && Array.from(graphs).every(graph => graph.querySelector('.main-svg'))) {
        window.__drawn.charts = performance.now();
    }
    if (!window.__drawn.grid && document.querySelector('#kernels-table .ag-root-wrapper')) {
        window.__drawn.grid = performance.now();
    }
}).observe(document, {subtree: true, childList: true});
"""


def test_the_table_starts_after_the_charts_are_drawn(page: Page, server, run_id: str, console_errors) -> None:
    # The grid takes ~400 ms to start: it waits for the charts (AfterCharts) instead of holding them back.
    page.add_init_script(ORDER_PROBE)
    open_kernels(page, server, run_id)
    expect(page.locator('[data-after-charts="drawn"]')).to_have_count(1)
    drawn = page.evaluate("() => window.__drawn")
    assert drawn["charts"] <= drawn["grid"], drawn
    assert console_errors == []
