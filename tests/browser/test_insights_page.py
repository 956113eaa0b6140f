"""/insights in a real browser: a finding opens to its evidence, and its link lands on the view it names."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import polars as pl
from playwright.sync_api import Page, expect

from dashboard.analysis.insights import run_insights
from dashboard.store import RunStore
from tests.analysis.test_idle_causes import cause_trace


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def test_demo_finding_expands_and_opens_the_memory_op_it_names(page: Page, server, console_errors) -> None:
    store = RunStore(server.data_dir)
    run_id = next(info.id for info in store.list_runs() if "memory" in info.evidence)
    finding = run_insights(store.open(run_id)).findings[0]
    op = int(parse_qs(urlparse(finding.url).query)["op"][0])
    mlir_op = store.open(run_id).frame("op_memory").filter(pl.col("op_index") == op)["mlir_op"][0]
    page.goto(f"{server.url}/insights?run={run_id}")
    first = page.locator("#finding-0")
    expect(first.locator("summary")).to_contain_text(finding.title, timeout=20_000)
    link = first.locator("a.finding-link")
    expect(link).not_to_be_visible()  # closed until asked
    first.locator("summary").click()
    expect(first.locator("table.finding-evidence")).to_be_visible()
    expect(link).to_be_visible()
    page.evaluate("window.__before_the_link = true")
    link.click()
    expect(page).to_have_url(re.compile(rf"/memory\?run={re.escape(run_id)}&rank=0&op={op}\b"), timeout=20_000)
    expect(page.locator("#memory-detail-op")).to_have_text(mlir_op, timeout=20_000)
    # The findings are static markup (layouts/static_html.py): its link still changes the page in place, as
    # dcc.Link does, without reloading the app.
    assert page.evaluate("window.__before_the_link === true")
    assert console_errors == []


def test_idle_cause_finding_opens_the_timeline_on_its_gap(page: Page, server, console_errors) -> None:
    store = RunStore(server.data_dir)
    run_id = store.write("insights-gaps", cause_trace().tables())
    finding = next(f for f in run_insights(store.open(run_id)).findings if f.key == "idle:launch-bound")
    page.goto(f"{server.url}/insights?run={run_id}")
    item = page.locator(".finding", has=page.locator(f"text={finding.title}"))
    item.locator("summary").click()
    item.locator("a.finding-link").click()
    expect(page).to_have_url(re.compile(r"/timeline\?"), timeout=20_000)
    expect(page.locator("#timeline-window-chip")).to_be_visible(timeout=20_000)
    state = query(page)
    assert (state["run"], state["rank"], state["window"]) == (run_id, "0", "280000-460000")  # gap C, padded
    assert console_errors == []


def test_the_hta_scope_switch_draws_htas_breakdown_and_keeps_it_in_the_url(page: Page, server,
                                                                            console_errors) -> None:
    store = RunStore(server.data_dir)
    # The demo's training run (another test of this module adds a run whose kernels HTA's scope leaves out).
    run_id = next(info.id for info in store.list_runs() if info.name == "demo-training")
    hta = run_insights(store.open(run_id)).time.hta
    page.goto(f"{server.url}/insights?run={run_id}")
    expect(page.locator("#insights-breakdown .legendtext").first).to_have_text("compute", timeout=20_000)
    page.locator("label[for=insights-hta-scope]").click()
    expect(page).to_have_url(re.compile(r"scope=hta"), timeout=20_000)
    expect(page.locator("#insights-breakdown .legendtext")).to_have_text(["compute", "non-compute", "idle"],
                                                                        timeout=20_000)
    expect(page.locator("table.hta-breakdown tbody tr")).to_have_count(hta.height)
    page.reload()  # the URL restores the scope
    expect(page.locator("#insights-hta-scope")).to_be_checked(timeout=20_000)
    assert console_errors == []
