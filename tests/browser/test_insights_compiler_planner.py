"""/insights findings from compiler and planner evidence open /compiler and /planner on what they name."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, expect

from dashboard.analysis.insights import run_insights
from dashboard.store import RunStore
from tests.support.triton_demo import requires_triton_demo


def _follow(page: Page, server, run_id: str, key_prefix: str):
    store = RunStore(server.data_dir)
    finding = next(f for f in run_insights(store.open(run_id)).findings if f.key.startswith(key_prefix))
    page.goto(f"{server.url}/insights?run={run_id}")
    item = page.locator(".finding", has=page.locator(f"text={finding.title}"))
    item.locator("summary").click()
    expect(item.locator("table.finding-evidence")).to_be_visible(timeout=20_000)
    item.locator("a.finding-link").click()
    return finding


@requires_triton_demo
def test_ir_growth_finding_opens_the_compiler_on_its_step(page: Page, server, console_errors) -> None:
    run_id = next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == "demo-compiler")
    finding = _follow(page, server, run_id, "compiler:growth:")
    wanted = parse_qs(urlparse(finding.url).query)
    expect(page).to_have_url(re.compile(r"/compiler\?"), timeout=20_000)
    # Before dumps: the step after the pass is labelled by the pass about to run next; the diff against
    # `cmp` (the snapshot before the pass) shows what the pass added.
    expect(page.locator("#compiler-step")).to_contain_text(f"{wanted['step'][0]} · ", timeout=20_000)
    expect(page.locator("#compiler-compare")).to_contain_text(wanted["cmp"][0], timeout=20_000)
    state = {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}
    assert (state["compile"], state["step"]) == (wanted["compile"][0], wanted["step"][0])
    assert console_errors == []


def test_sharing_finding_opens_the_planner_on_its_buffer(page: Page, server, console_errors) -> None:
    run_id = next(info.id for info in RunStore(server.data_dir).list_runs() if info.name == "demo-planner")
    finding = _follow(page, server, run_id, "planner:sharing:")
    buffer = parse_qs(urlparse(finding.url).query)["buffer"][0]
    expect(page).to_have_url(re.compile(rf"/planner\?.*buffer={buffer}\b"), timeout=20_000)
    expect(page.locator("#planner-page")).to_be_visible(timeout=20_000)
    assert console_errors == []
