"""/compare in a real browser: default rank-to-rank, bar click selection, another run as B, URL state."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from dashboard.store import RunStore
from tests.support.kernel_tables import kernel_tables
from tests.support.layered_run import layered_tables
from tests.support.native_select import choose, option_labels
from tests.support.settled_click import click_centre, settled_box

DELTA_BARS = "#compare-delta g.trace.bars g.point"


@pytest.fixture(scope="module")
def runs(server) -> tuple[str, str]:
    store = RunStore(server.data_dir)
    first = store.write("compare-a", kernel_tables(seed=1))
    second = store.write("compare-b", kernel_tables(kernels_per_stream=80, seed=2))
    return first, second


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def test_ranks_of_one_run_by_default_then_a_bar_selects_a_kernel(page: Page, server, runs, console_errors) -> None:
    first, _ = runs
    page.goto(f"{server.url}/compare?run={first}")
    expect(page.locator(DELTA_BARS).first).to_be_visible(timeout=20_000)
    expect(page.locator("#compare-sides")).to_have_text(f"A = {first} · rank 0   ·   B = {first} · rank 1")
    expect(page.locator("#compare-summary")).to_contain_text("Kernel time A:")
    expect(page).to_have_url(re.compile(rf"other={first}&other_rank=1"))
    expect(page.locator("#compare-table .ag-center-cols-container .ag-row").first).to_be_visible()
    key = page.evaluate("() => document.querySelector('#compare-delta .js-plotly-plot').data[0].customdata[0]")
    click_centre(page, page.locator(DELTA_BARS).first)
    expect(page).to_have_url(re.compile(rf"sel={key}(&|$)"))
    page.wait_for_function("""() => {
        const points = document.querySelector('#compare-delta .js-plotly-plot').data[0].selectedpoints;
        return points != null && points.length === 1 && points[0] === 0; }""", timeout=10_000)
    # The selection is the one every page uses: the navbar carries it to the timeline.
    expect(page.locator("a.nav-link", has_text="Timeline")).to_have_attribute("href", re.compile(rf"sel={key}"))
    assert console_errors == []


def test_another_run_as_b_and_the_url_restores_it(page: Page, server, runs, console_errors) -> None:
    first, second = runs
    page.goto(f"{server.url}/compare?run={first}&rank=1")
    expect(page.locator(DELTA_BARS).first).to_be_visible(timeout=20_000)
    # Listed by name and date under its evidence kind (the title is the run id).
    choose(page.locator("#compare-other"), re.compile(r"^compare-b · \d{4}-\d\d-\d\d"))
    expect(page.locator("#compare-sides")).to_have_text(f"A = {first} · rank 1   ·   B = {second} · all ranks")
    expect(page).to_have_url(re.compile(rf"other={second}(&|$)"))
    assert "other_rank" not in query(page)
    # A link with that state opens the same comparison.
    page.goto(f"{server.url}/compare?run={first}&rank=1&other={second}&other_rank=0")
    expect(page.locator("#compare-sides")).to_have_text(f"A = {first} · rank 1   ·   B = {second} · rank 0",
                                                        timeout=20_000)
    assert console_errors == []


def test_a_layer_bar_carries_the_layer_to_the_layers_page(page: Page, server, console_errors) -> None:
    from tests.support.layered_run import DEVICE_METADATA, layered_tables

    run_id = RunStore(server.data_dir).write("compare-layers", layered_tables(), metadata=DEVICE_METADATA)
    page.goto(f"{server.url}/compare?run={run_id}")
    bars = page.locator("#compare-layers g.trace.bars g.point")
    expect(bars.first).to_be_visible(timeout=20_000)
    # The bar that moved most (a layer whose median did not move draws no bar to click).
    index, layer, pass_ = page.evaluate("""() => {
        const bars = document.querySelector('#compare-layers .js-plotly-plot').data[0];
        let best = 0;
        bars.x.forEach((x, i) => { if (Math.abs(x) > Math.abs(bars.x[best])) best = i; });
        return [best, ...bars.customdata[best]]; }""")
    assert settled_box(page, bars.nth(index))["width"] > 2  # below the fold: scrolled into view to click
    click_centre(page, bars.nth(index))
    expect(page).to_have_url(re.compile(rf"layer={re.escape(layer)}&pass={pass_}"))
    expect(page.locator("a.nav-link", has_text="Layers")).to_have_attribute("href", re.compile(r"layer="))
    assert console_errors == []


def one_rank(seed: int) -> dict:
    """A one-rank kernel run (rank 0 of kernel_tables)."""
    return {name: frame.filter(frame.get_column("rank") == 0) if "rank" in frame.columns else frame
            for name, frame in kernel_tables(seed=seed).items()}


@pytest.fixture(scope="module")
def unrelated(server) -> tuple[str, str]:
    """Two one-rank kernel runs of different jobs: nothing says one is the other's baseline."""
    store = RunStore(server.data_dir)
    return store.write("job-alpha", layered_tables(ranks=1)), store.write("job-beta", one_rank(3))


def test_without_b_the_page_asks_for_it_and_compares_nothing(page: Page, server, unrelated,
                                                            console_errors) -> None:
    alpha, beta = unrelated
    page.goto(f"{server.url}/compare?run={beta}")
    expect(page.locator("#compare-choose-b")).to_contain_text("Choose the run to compare with (B)", timeout=20_000)
    expect(page.locator("#compare-choose-b")).to_contain_text("No earlier run is named “job-beta”")
    # No comparison of an unrelated run: no chart, no "gone in B / new in B", no table.
    assert page.locator("#compare-delta, #compare-scatter, #compare-table, .js-plotly-plot").count() == 0
    assert "other" not in query(page)
    # The picker lists only runs sharing an evidence kind, under a heading per kind, newest first, by name
    # and date; the planner / compiler / memory-only demo runs are not offered for a kernel run.
    options = option_labels(page.locator("#compare-pick-other"))
    assert options[0].startswith("── kernel activity ──")
    names = [text.split(" · ")[0] for text in options[1:] if " · " in text]
    assert "job-alpha" in names and not {"demo-planner", "demo-compiler", "demo-memory"} & set(names)
    dates = [text.split(" · ")[1] for text in options[1:] if " · " in text]
    assert dates == sorted(dates, reverse=True)
    choose(page.locator("#compare-pick-other"), re.compile(r"^job-alpha · "))
    # Picked: the page compares A with it.
    expect(page.locator("#compare-sides")).to_have_text(f"A = {beta} · all ranks   ·   B = {alpha} · all ranks",
                                                       timeout=20_000)
    expect(page.locator(DELTA_BARS).first).to_be_visible(timeout=20_000)
    expect(page).to_have_url(re.compile(rf"other={alpha}(&|$)"))
    assert console_errors == []


def test_b_defaults_to_the_previous_run_of_the_same_name(page: Page, server, console_errors) -> None:
    store = RunStore(server.data_dir)
    before = store.write("nightly", one_rank(4))
    store.write("another-job", one_rank(5))  # newer, unrelated: never the default
    after = store.write("nightly", one_rank(6))
    page.goto(f"{server.url}/compare?run={after}")
    expect(page.locator("#compare-sides")).to_have_text(f"A = {after} · all ranks   ·   B = {before} · all ranks",
                                                       timeout=20_000)
    expect(page.locator(DELTA_BARS).first).to_be_visible(timeout=20_000)
    assert console_errors == []
