"""The demo's tinygrad run in a real browser: /compiler opens on its kernels' rewrites, a step click redraws the UOp
graph, stepping to a match frames the nodes it changed and shows its diff, and /timeline shows its kernels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest
from playwright.sync_api import Page, expect

CY = "document.querySelector('#tg-graph')._cyreg.cy"


@pytest.fixture(autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=30_000)
    yield
    expect.set_options(timeout=5_000)


@pytest.fixture(scope="module")
def run_id(server) -> str:
    [run] = sorted(Path(server.data_dir, "runs").glob("demo-tinygrad-*"))
    return run.name


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def graph_state(page: Page) -> dict:
    return page.evaluate(f"""() => {{ const cy = {CY};
        return {{nodes: cy.nodes().length, changed: cy.nodes('.changed').length,
                 ids: cy.nodes().map(n => n.id()).sort().join(',')}}; }}""")


def test_a_step_click_redraws_the_graph_and_a_match_frames_what_it_changed(page: Page, server, run_id: str,
                                                                          console_errors: list[str]) -> None:
    page.goto(f"{server.url}/compiler?run={run_id}")
    page.wait_for_function(f"() => {{ const el = document.querySelector('#tg-graph');"
                           f" return el && el._cyreg && {CY}.nodes().length > 0; }}", timeout=90_000)
    expect(page.locator("#tg-contexts .tg-item.active")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"ctx=\d+"))  # the first kernel is chosen and written into the address
    first = graph_state(page)
    assert first["changed"] == 0  # the input graph of the first step: nothing changed yet

    # A later step with matches: its input graph is drawn.
    step = page.locator("#tg-steps .tg-item:has(.badge)").nth(1)
    name = step.locator("span").first.inner_text()
    step.click()
    expect(page).to_have_url(re.compile(r"step=\d+"))
    expect(page.locator("#tg-step-title")).to_contain_text(name)
    expect(page.locator("#tg-steps .tg-item.active")).to_contain_text(name)
    page.wait_for_function(f"() => {CY}.nodes().map(n => n.id()).sort().join(',') !== {json.dumps(first['ids'])}")

    # Its first match: the graph after it, the changed nodes framed, the pattern and the diff.
    page.locator("#tg-next").click()
    expect(page).to_have_url(re.compile(r"match=1(&|$)"))
    page.wait_for_function(f"() => {CY}.nodes('.changed').length > 0")
    expect(page.locator("#tg-graph-note")).to_contain_text(re.compile(r"[1-9][\d,]* changed by this match"))
    expect(page.locator("#tg-pattern")).to_contain_text("Pattern")
    expect(page.locator("#tg-diff .d-add").first).to_be_visible()
    changed = graph_state(page)["changed"]
    note = page.locator("#tg-graph-note").inner_text()
    assert re.search(rf"\b{changed} changed by this match", note)

    # The kernel's program: its C source, and the address restores the whole view.
    expect(page.locator("#tg-program-body pre").first).to_contain_text("void ")
    page.goto(page.url)
    page.wait_for_function(f"() => {{ const el = document.querySelector('#tg-graph');"
                           f" return el && el._cyreg && {CY}.nodes('.changed').length === {changed}; }}")
    assert console_errors == []


def test_the_timeline_shows_the_runs_kernels(page: Page, server, run_id: str, console_errors: list[str]) -> None:
    kernels = pl.read_parquet(Path(server.data_dir, "runs", run_id, "kernels.parquet"))
    assert kernels.height > 0
    page.goto(f"{server.url}/timeline?run={run_id}")
    expect(page.locator("#timeline-graph .js-plotly-plot .main-svg").first).to_be_visible(timeout=60_000)
    page.wait_for_load_state("networkidle")
    names = page.evaluate("""() => document.querySelector('#timeline-graph .js-plotly-plot').data
        .filter(t => t.type === 'bar' && (t.hovertemplate || '').includes('FLOP/s')).map(t => t.name)""")
    assert set(names) >= set(kernels["name"].unique().to_list())
    assert console_errors == []
