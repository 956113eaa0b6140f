"""AG Grid and Cytoscape load only where a page needs them (layouts/lazy_libraries.py, assets/lazy-libraries.js)."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from dashboard.store import RunStore

# The moment the page's first chart has its SVG, on the page's own clock (an init script, so it is
# watching before the renderer starts).
FIRST_CHART_CLOCK = """
new MutationObserver((records, observer) => {
    if (document.querySelector('.js-plotly-plot .main-svg')) {
        window.__firstChartAt = performance.now();
        observer.disconnect();
    }
}).observe(document, {subtree: true, childList: true});
"""
REAL_GRID = "() => window.dash_ag_grid && typeof window.dash_ag_grid.getApi === 'function'"


def _run(server, name: str) -> str:
    return next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == name)


def _fetched(page: Page, library: str) -> list[dict]:
    return page.evaluate("(name) => performance.getEntriesByType('resource').filter(entry => entry.name.includes("
                         "'/' + name + '/')).map(entry => ({start: entry.startTime, name: entry.name}))", library)


def test_a_page_without_grids_fetches_them_only_after_its_charts(page: Page, server, console_errors) -> None:
    page.add_init_script(FIRST_CHART_CLOCK)
    page.goto(f"{server.url}/insights?run={_run(server, 'demo-training')}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    # Then, the browser idle, both libraries are loaded for the pages that need them.
    page.wait_for_function(REAL_GRID, timeout=20_000)
    page.wait_for_function("() => window.dashboardLazyLibraries.loaded('dash_cytoscape')", timeout=20_000)
    first_chart = page.evaluate("() => window.__firstChartAt")
    for library in ("dash_ag_grid", "dash_cytoscape"):
        fetched = _fetched(page, library)
        assert len(fetched) == 1 and fetched[0]["start"] > first_chart, (library, fetched, first_chart)
    assert console_errors == []


def test_a_grid_drawn_before_its_library_is_there_is_drawn_by_it_once_loaded(page: Page, server,
                                                                              console_errors) -> None:
    # /kernels draws its grid after the charts; the grid's library is not one of the page's scripts.
    held: list[Route] = []
    page.route("**/dash_ag_grid/dash_ag_grid.*", lambda route: held.append(route))
    page.goto(f"{server.url}/kernels?run={_run(server, 'demo-training')}")
    stand_in = page.locator('#kernels-table[data-lazy-library="dash_ag_grid"]')
    expect(stand_in).to_be_attached(timeout=30_000)  # its place kept while the script is on its way
    assert len(held) == 1
    held[0].continue_()
    expect(page.locator("#kernels-table .ag-row").first).to_be_visible(timeout=30_000)
    expect(page.locator("[data-lazy-library]")).to_have_count(0)
    # The grid is the library's own, with its API, holding the page's rows.
    assert page.evaluate("() => dash_ag_grid.getApi('kernels-table').getDisplayedRowCount()") == \
        page.locator("#kernels-table .ag-center-cols-container .ag-row").count() > 0
    assert console_errors == []


def test_moving_in_place_to_a_page_with_a_grid_draws_it(page: Page, server, console_errors) -> None:
    run = _run(server, "demo-training")
    page.goto(f"{server.url}/timeline?run={run}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    page.locator('.navbar a[href^="/kernels"]').click()
    expect(page.locator("#kernels-table .ag-row").first).to_be_visible(timeout=30_000)
    assert page.evaluate("() => performance.getEntriesByType('navigation').length") == 1  # no reload
    assert console_errors == []


def test_a_library_that_cannot_load_is_said_in_its_place(page: Page, server) -> None:
    page.route("**/dash_ag_grid/dash_ag_grid.*", lambda route: route.abort())
    page.goto(f"{server.url}/kernels?run={_run(server, 'demo-training')}")
    expect(page.locator('#kernels-table[data-lazy-library="dash_ag_grid"]')).to_contain_text(
        "This view needs dash_ag_grid, which did not load", timeout=30_000)
    # The rest of the page is drawn.
    expect(page.locator("#kernels-bar .main-svg").first).to_be_attached()


def test_the_runs_page_has_the_grids_chunk_with_its_scripts_and_never_asks_for_it_again(
        page: Page, server, console_errors) -> None:
    page.goto(f"{server.url}/")
    expect(page.locator("#runs-grid .ag-row").first).to_be_visible(timeout=30_000)
    page.wait_for_function(REAL_GRID, timeout=20_000)
    chunks = [entry["name"] for entry in _fetched(page, "dash_ag_grid") if "/async-community" in entry["name"]]
    # One request, for the versioned script tag (cached for a year); the grid's loader found it there
    # instead of asking for the unversioned file when React drew the grid.
    assert len(chunks) == 1 and "/async-community.v" in chunks[0], chunks
    assert console_errors == []
