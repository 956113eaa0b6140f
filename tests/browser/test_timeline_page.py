"""/timeline in a real browser: zoom writes the window into the URL, a URL restores zoom and highlight."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest
from playwright.sync_api import Page, expect

from dashboard import schema
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.figures.timeline_marks import GREY
from dashboard.store import RunStore
from dashboard.views.params import format_window, parse_window
from tests.support.kernel_tables import CPU_THREAD, EPOCH_NS, KERNEL_NAMES, kernel_tables

GRAPH = "#timeline-graph .js-plotly-plot"


def _stack(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    end = int(tables["kernels"].get_column("end_ns").max())  # type: ignore[arg-type]
    middle = (EPOCH_NS + end) // 2
    return schema.conform("stack", pl.DataFrame({
        "rank": [0, 0, 0], "thread": [CPU_THREAD] * 3,
        "function": ["train.py(12): main", "model.py(40): forward", "torch/nn/functional.py(2210): linear"],
        "depth": [0, 1, 2], "start_ns": [EPOCH_NS - 60_000, EPOCH_NS, middle], "end_ns": [end, middle, end]}))


@pytest.fixture(scope="module")
def run_id(server) -> str:
    tables = kernel_tables(kernels_per_stream=1_000)  # dense enough to be bucketed when zoomed out
    tables["stack"] = _stack(tables)
    return RunStore(server.data_dir).write("timeline-views", tables)


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def open_timeline(page: Page, server, run_id: str, **params: str) -> None:
    extra = "".join(f"&{key}={value}" for key, value in params.items())
    page.goto(f"{server.url}/timeline?run={run_id}{extra}")
    expect(page.locator(f"{GRAPH} .main-svg").first).to_be_visible(timeout=20_000)
    page.wait_for_load_state("networkidle")


def plot_state(page: Page) -> dict:
    return page.evaluate(f"""() => {{
        const plot = document.querySelector('{GRAPH}');
        return {{range: plot._fullLayout.xaxis.range, unit: plot.layout.meta.unit, title: plot.layout.title.text,
                 origin: plot.layout.meta.origin_ns, divisor: plot.layout.meta.divisor,
                 colours: plot.data.filter(t => t.type === 'bar').map(t => t.marker.color),
                 heatmaps: plot.data.filter(t => t.type === 'heatmap').length}}; }}""")


def test_zoom_writes_the_window_and_redraws_at_finer_detail(page: Page, server, run_id: str,
                                                           console_errors) -> None:
    open_timeline(page, server, run_id)
    before = plot_state(page)
    assert "whole run" in before["title"] and before["heatmaps"] >= 1  # dense lanes are bucketed when zoomed out
    drag = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first
    box = drag.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] * 0.3
    page.mouse.move(box["x"] + box["width"] * 0.40, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.42, y, steps=5)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"window=\d+-\d+"), timeout=15_000)
    window = parse_window(query(page)["window"])
    assert window is not None
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').layout.title.text.includes(' of ')")
    after = plot_state(page)
    assert after["title"] != before["title"]
    # The new figure spans the brushed window, in a unit fitted to it, relative to the run start.
    start = after["origin"] + after["range"][0] * after["divisor"]
    end = after["origin"] + after["range"][1] * after["divisor"]
    assert abs(start - window[0]) < 1_000 and abs(end - window[1]) < 1_000
    assert after["unit"] != before["unit"] or after["divisor"] == before["divisor"]
    expect(page.locator("#timeline-window-chip")).to_be_visible()
    expect(page.locator("#timeline-window-text")).to_contain_text("window:")
    # The window travels with the navbar links to the pages that summarise it.
    expect(page.locator('.navbar a[href^="/kernels"]')).to_have_attribute("href", re.compile(r"window=\d+-\d+"))
    page.locator("#timeline-reset").click()
    expect(page).not_to_have_url(re.compile(r"window="), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').layout.title.text.includes('whole run')")
    assert console_errors == []


def test_url_with_window_and_selection_restores_the_view(page: Page, server, run_id: str, console_errors) -> None:
    start, end = EPOCH_NS + 200_000, EPOCH_NS + 400_000
    selected = kernel_key(KERNEL_NAMES[1])
    open_timeline(page, server, run_id, window=format_window(start, end), sel=selected)
    state = plot_state(page)
    assert abs(state["origin"] + state["range"][0] * state["divisor"] - start) < 1_000
    assert abs(state["origin"] + state["range"][1] * state["divisor"] - end) < 1_000
    assert state["unit"] == "µs"
    # Zoomed in this far every event is its own bar; the selected kernel keeps its colour, the rest are grey.
    assert state["heatmaps"] == 0
    assert GREY in state["colours"]
    expect(page.locator("#timeline-window-chip")).to_be_visible()
    expect(page.locator("#timeline-status")).to_contain_text("1 selected kernel highlighted")
    assert query(page)["window"] == format_window(start, end)
    assert query(page)["sel"] == selected
    assert console_errors == []


def test_clicking_a_kernel_bar_selects_it(page: Page, server, run_id: str, console_errors) -> None:
    open_timeline(page, server, run_id, window=format_window(EPOCH_NS + 200_000, EPOCH_NS + 260_000))
    area = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first.bounding_box()
    assert area is not None
    # Kernel traces come first; click the middle of the visible part of one of their bars (a bar that
    # started before the window runs in from the left, beyond the plot area).
    box = page.locator(f"{GRAPH} .subplot.xy g.trace.bars").first.locator("g.point path").first.bounding_box()
    assert box is not None
    left, right = max(box["x"], area["x"]), min(box["x"] + box["width"], area["x"] + area["width"])
    assert right > left
    # plotly reports a click on the point it hovers: hover first, then click. A click that lands while
    # the graph is still settling its first size (right after it is drawn) is lost, as for a user, who
    # then clicks again.
    for attempt in range(3):
        page.mouse.move((left + right) / 2, box["y"] + box["height"] / 2)
        expect(page.locator(f"{GRAPH} .hoverlayer .hovertext").first).to_be_visible()
        page.mouse.click((left + right) / 2, box["y"] + box["height"] / 2)
        try:
            expect(page).to_have_url(re.compile(r"sel=[0-9a-f]{8}"), timeout=5_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
            page.mouse.move(area["x"] + 2, area["y"] + 2)
    assert query(page)["sel"] in {kernel_key(name) for name in KERNEL_NAMES}
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').data.some("
                           f"t => t.type === 'bar' && t.marker.color === '{GREY}')")
    assert console_errors == []


def drag_across(page: Page, start: float, end: float) -> None:
    """Drag horizontally over the lanes panel between two fractions of its width."""
    box = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] * 0.3
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * end, y, steps=5)
    page.mouse.up()


def test_box_select_sets_the_window_and_double_click_shows_the_whole_run(page: Page, server, run_id: str,
                                                                          console_errors) -> None:
    open_timeline(page, server, run_id)
    page.locator(f"{GRAPH} .modebar-btn[data-val='select']").click()
    drag_across(page, 0.5, 0.55)
    expect(page).to_have_url(re.compile(r"window=\d+-\d+"), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').layout.title.text.includes(' of ')")
    # The drag mode the user picked survives the new figure.
    assert page.evaluate(f"() => document.querySelector('{GRAPH}')._fullLayout.dragmode") == "select"
    # In zoom mode (in select mode it only clears the selection), a double-click asks for the whole run.
    page.locator(f"{GRAPH} .modebar-btn[data-val='zoom']").click()
    box = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first.bounding_box()
    assert box is not None
    page.mouse.dblclick(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page).not_to_have_url(re.compile(r"window="), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').layout.title.text.includes('whole run')")
    assert console_errors == []


def test_rank_filter_keeps_that_ranks_lanes(page: Page, server, run_id: str, console_errors) -> None:
    open_timeline(page, server, run_id)
    labels = page.evaluate(f"() => document.querySelector('{GRAPH}').layout.yaxis.ticktext")
    assert any(label.startswith("r1 ") for label in labels)
    page.locator("#timeline-rank").click()
    page.get_by_role("option", name="rank 0").click()
    expect(page).to_have_url(re.compile(r"rank=0"), timeout=15_000)
    page.wait_for_function(f"""() => document.querySelector('{GRAPH}').layout.yaxis.ticktext
        .every(label => !label.startsWith('r1 '))""")
    assert console_errors == []
