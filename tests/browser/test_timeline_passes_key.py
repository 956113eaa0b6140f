"""/timeline in a browser: the passes lane draws each pass's kernel union per step, and the passes / ranges
lanes have a key."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dashboard.collectors.kineto.collector import COLLECTOR
from dashboard.store import RunStore
from tests.support.kineto_passes_trace import Shape, write
from tests.support.timeline_key import lane_key

GRAPH = "#timeline-graph .js-plotly-plot"


@pytest.fixture(scope="module")
def run_id(server, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder: Path = tmp_path_factory.mktemp("passes")
    paths = [write(folder, Shape(ddp=True, steps=3), rank=rank) for rank in (0, 1)]
    tables = COLLECTOR.collect(paths, lambda fraction, message: None).tables
    return RunStore(server.data_dir).write("passes-key", tables)


def test_passes_and_ranges_lanes_have_a_key_that_overlaps_nothing(page: Page, server, run_id: str,
                                                                  console_errors) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{server.url}/timeline?run={run_id}")
    expect(page.locator(f"{GRAPH} .main-svg").first).to_be_visible(timeout=20_000)
    page.wait_for_load_state("networkidle")
    key = lane_key(page)
    expect(key).to_be_visible()
    # group titles, then entries (each after its coloured square)
    texts = [line.text_content().removeprefix("■ ") for line in key.locator("tspan.line").all()]
    texts = [text for text in texts if text]  # the blank line between groups
    assert texts[:4] == ["passes (per step)", "forward", "backward", "optimizer"]
    titles = [text for text in texts if text.endswith(("in view", "steps", "calls"))]
    assert titles == ["kernels (colour = name): most GPU time in view", "ranges (colour = name): most time in view",
                      "profiler steps", "CUDA API calls"]
    # five kernel and five range names with the most time, and the steps' one entry
    assert texts.index(titles[1]) - texts.index(titles[0]) == 6 and texts.index(titles[2]) - texts.index(titles[1]) == 6
    assert texts[texts.index("profiler steps") + 1] == "ProfilerStep (alternating)"
    # A pass's bars are the union of its kernels per step (analysis.timeline_lanes.pass_bands): the generated
    # kernels never touch, so one bar per kernel. Per rank and step: forward 2 (conv, relu), backward 7 (ddp),
    # optimizer 3 (zero_grad, two SGD kernels); x 3 steps x 2 ranks, plus the launch after the last step.
    bars = page.evaluate(f"""() => Object.fromEntries(document.querySelector('{GRAPH}').data
        .filter(t => t.type === 'bar' && (t.legendgroup || '').startsWith('pass '))
        .map(t => [t.name, t.text.length]))""")
    assert bars == {"forward": 2 * (2 * 3 + 1), "backward": 2 * 7 * 3, "optimizer": 2 * 3 * 3}
    # The key sits right of the lanes, clear of the plot, the title and the time axis repeated on top.
    box = key.bounding_box()
    title = page.locator(f"{GRAPH} .gtitle").bounding_box()
    ticks = [t.bounding_box() for t in page.locator(f"{GRAPH} g.x2tick text").all()]
    plot = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first.bounding_box()
    assert box is not None and title is not None and ticks and plot is not None
    assert box["x"] >= plot["x"] + plot["width"]
    for other in [title, *ticks]:
        assert other is not None
        apart = (box["x"] >= other["x"] + other["width"] or other["x"] >= box["x"] + box["width"]
                 or box["y"] >= other["y"] + other["height"] or other["y"] >= box["y"] + box["height"])
        assert apart, (box, other)
    assert console_errors == []
