"""/memory on a CUDA run (the demo training trace's `[memory]` events): peak, live allocations, URL restore."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import polars as pl
from playwright.sync_api import Page, expect

from dashboard.analysis.units import format_bytes
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.native_select import option_labels, shown_label

GRAPH = "#memory-cuda-curves .js-plotly-plot"


def _cuda_run(server) -> str:
    runs = RunStore(server.data_dir).list_runs()
    return next(info.id for info in runs if "cuda_memory" in info.evidence and info.name == "demo-training")


def _settled(page: Page) -> None:
    """The graph drawn and resized (its relayout event sent), the page's callbacks wired and idle."""
    expect(page.locator(f"{GRAPH} .main-svg").first).to_be_visible(timeout=20_000)
    page.wait_for_load_state("networkidle")
    page.wait_for_function(f"() => {{ const p = document.querySelector('{GRAPH}'); "
                           "return p && p._fullLayout && "
                           "Math.abs(p._fullLayout.width - p.getBoundingClientRect().width) < 2; }")
    page.wait_for_timeout(400)
    page.wait_for_load_state("networkidle")


def _query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def test_peak_click_lists_the_live_allocations_and_the_url_restores_it(page: Page, server, console_errors) -> None:
    run_id = _cuda_run(server)
    memory = RunStore(server.data_dir).open(run_id).frame("device_memory").filter(pl.col("rank") == 0)
    peak = memory.row(int(memory["allocated"].arg_max()), named=True)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{server.url}/memory?run={run_id}")
    _settled(page)
    device = page.locator("#memory-cuda-device")  # names its choice ("all GPUs" included), never blank
    assert shown_label(device) in option_labels(device) and "all GPUs" in option_labels(device)
    expect(page.locator(".memory-cuda-peak-value").first).to_have_text(format_bytes(peak["allocated"]))

    page.locator("#memory-cuda-peak").click()
    title = page.locator("#memory-cuda-live-title")
    # Every allocation of the demo is in the trace, so what is alive at the peak is exactly the peak.
    expect(title).to_contain_text(f", {format_bytes(peak['allocated'])}", timeout=15_000)
    rows = page.locator("#memory-cuda-live tbody tr")
    assert rows.count() > 1
    expect(page).to_have_url(__import__("re").compile(rf"at={peak['time_ns']}"))
    assert _query(page)["at"] == str(peak["time_ns"])
    text = title.inner_text()

    page.goto(page.url)  # the address alone restores the chosen time
    expect(page.locator("#memory-cuda-live-title")).to_have_text(text, timeout=20_000)
    expect(page.locator("#memory-cuda-live tbody tr").first).to_be_visible()
    assert console_errors == []


def test_a_window_from_the_timeline_narrows_the_view_and_links_back(page: Page, server) -> None:
    run_id = _cuda_run(server)
    memory = RunStore(server.data_dir).open(run_id).frame("device_memory").filter(pl.col("rank") == 0)
    start, end = int(memory["time_ns"].min()), int(memory["time_ns"].quantile(0.3))  # type: ignore[arg-type]
    page.goto(f"{server.url}/memory?run={run_id}&window={start}-{end}")
    inside = memory.filter(pl.col("time_ns").is_between(start, end))
    expect(page.locator(".memory-cuda-peak-value").first).to_have_text(format_bytes(int(inside["allocated"].max())),
                                                                     timeout=20_000)
    link = page.locator("#memory-cuda-links a", has_text="timeline")
    expect(link).to_have_attribute("href", f"/timeline?run={run_id}&window={start}-{end}")


def test_a_snapshot_run_shows_frames_and_fragmentation(page: Page, server, tmp_path) -> None:
    from dashboard.demo import torch_snapshot

    path = torch_snapshot.write(tmp_path / "snapshot.pickle", steps=4)
    run_id = ingest_paths(RunStore(server.data_dir), [path], name="cuda-snapshot")
    page.goto(f"{server.url}/memory?run={run_id}")
    expect(page.locator("#memory-cuda-cards")).to_contain_text("Fragmentation at the snapshot's end", timeout=20_000)
    _settled(page)
    names = page.evaluate(f"() => document.querySelector('{GRAPH}').data.map(t => t.name)")
    assert "cuda:0 fragmentation" in names and "cuda:0 slack" in names  # over time, beside reserved − allocated
    page.locator("#memory-cuda-peak").click()
    expect(page.locator("#memory-cuda-live tbody tr").first).to_contain_text(".py:", timeout=15_000)
    expect(page.locator("#memory-cuda-ops")).to_contain_text("model/")


def test_the_insights_peak_finding_opens_this_view_at_the_peak(page: Page, server, console_errors) -> None:
    from dashboard.analysis.insights import run_insights

    run_id = _cuda_run(server)
    run = RunStore(server.data_dir).open(run_id)
    finding = next(f for f in run_insights(run).findings if f.key == "cuda_memory:peak:0:cuda:0")
    memory = run.frame("device_memory").filter((pl.col("rank") == 0) & (pl.col("device") == "cuda:0"))
    peak = memory.row(int(memory["allocated"].arg_max()), named=True)
    page.goto(f"{server.url}/insights?run={run_id}")
    item = page.locator(f".finding[data-key='{finding.key}']")
    expect(item.locator("summary")).to_contain_text(f"peaks at {format_bytes(peak['allocated'])} allocated",
                                                    timeout=20_000)
    item.locator("summary").click()
    item.locator("a.finding-link").click()
    expect(page).to_have_url(__import__("re").compile(rf"/memory\?.*at={peak['time_ns']}"), timeout=20_000)
    # Every allocation of the demo is in the trace: what is alive at the peak is exactly the peak.
    expect(page.locator("#memory-cuda-live-title")).to_contain_text(f", {format_bytes(peak['allocated'])}",
                                                                    timeout=20_000)
    assert _query(page)["device"] == "cuda:0"
    assert console_errors == []
