"""/insights on the demo: first after Runs in the navbar, breakdown charts, findings that open to their view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dash
import polars as pl
import pytest

from dashboard.analysis.insights import run_insights
from dashboard.app import create_app
from dashboard.settings import Settings
from dashboard.store import RunStore
from dashboard.views import run_views
from tests.support.dash_requests import HOST, by_id, callback_payload, components, dash_layout
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> tuple[Any, RunStore]:
    data_dir = demo_copy(demo_template, tmp_path_factory.mktemp("insights") / "data")
    store = RunStore(data_dir)
    app = create_app(Settings(data_dir=data_dir, seed_demo=False))
    return app.server.test_client(), store


def _run_with(store: RunStore, evidence: str) -> str:
    return next(info.id for info in store.list_runs() if evidence in info.evidence)


def test_insights_comes_first_after_runs(demo: tuple[Any, RunStore]) -> None:
    names = [page["name"] for page in dash.page_registry.values() if not page.get("hidden")]
    assert names[:3] == ["Runs", "Insights", "Kernels"]


def test_kernel_run_shows_the_breakdown_per_rank_and_step(demo: tuple[Any, RunStore]) -> None:
    client, store = demo
    run_id = _run_with(store, "layers")  # the demo's training run: two ranks, profiler steps
    tree = dash_layout(client, f"{HOST}/insights?run={run_id}")
    figure = by_id(tree, "insights-breakdown")["props"]["figure"]
    assert [trace["name"] for trace in figure["data"]] == ["compute", "communication", "memory (copies, memsets)",
                                                          "idle"]
    by_rank = run_insights(store.open(run_id)).by_rank
    assert figure["data"][3]["y"] == [value / 1e6 for value in by_rank.get_column("idle_ns")]
    steps = by_id(tree, "insights-breakdown-steps")["props"]["figure"]
    assert all(label.startswith(("r0 · step", "r1 · step")) for label in steps["data"][0]["x"])


def test_memory_run_lists_its_findings_with_links(demo: tuple[Any, RunStore]) -> None:
    client, store = demo
    run_id = _run_with(store, "memory")
    tree = dash_layout(client, f"{HOST}/insights?run={run_id}")
    findings = by_id(tree, "insights-findings")
    links = [c["props"]["href"] for c in components(findings) if "finding-link" in c["props"].get("className", "")]
    expected = [finding.url for finding in run_insights(store.open(run_id)).findings]
    assert links == expected and expected and all(url.startswith(f"/memory?run={run_id}") for url in links)


def test_kernel_page_busy_share_is_the_breakdowns(demo: tuple[Any, RunStore]) -> None:
    _, store = demo
    run = store.open(_run_with(store, "layers"))
    busy = run_views.gpu_busy_view(run, None, None)
    breakdown = run_insights(run).by_rank
    assert busy.select("rank", "span_ns", "busy_ns", "idle_ns").rows() == breakdown.select(
        "rank", "span_ns", "busy_ns", "idle_ns").rows()


def test_kernel_page_shows_the_breakdown_headline(demo: tuple[Any, RunStore]) -> None:
    client, store = demo
    run_id = _run_with(store, "layers")
    tree = dash_layout(client, f"{HOST}/kernels?run={run_id}")
    text = by_id(tree, "kernels-breakdown")["props"]["children"][1]
    row = run_insights(store.open(run_id)).by_rank.row(0, named=True)
    assert text.startswith(f"rank 0: compute {row['compute_ns'] / row['span_ns']:.1%} · communication ")
    assert f"idle {row['idle_ns'] / row['span_ns']:.1%}; rank 1:" in text


def test_overlap_and_launch_tables_show_the_analysis_numbers(demo: tuple[Any, RunStore]) -> None:
    from dashboard.analysis.units import format_ns

    client, store = demo
    run_id = _run_with(store, "layers")
    tree = dash_layout(client, f"{HOST}/insights?run={run_id}")
    table = next(c for c in components(tree) if "comm-overlap" in c["props"].get("className", ""))
    cells = [c["props"]["children"] for c in components(table) if c["type"] == "Td"]
    first = run_insights(store.open(run_id)).by_step.filter(pl.col("communication_total_ns") > 0).row(0, named=True)
    assert cells[:6] == [first["rank"], first["step"], format_ns(first["communication_total_ns"]),
                         format_ns(first["overlap_ns"]),
                         f"{first['overlap_ns'] / first['communication_total_ns']:.1%}",
                         format_ns(first["communication_ns"])]
    assert any("launch-stats" in c["props"].get("className", "") for c in components(tree))


def test_hta_scope_switch_draws_htas_temporal_breakdown(demo: tuple[Any, RunStore]) -> None:
    client, store = demo
    run_id = _run_with(store, "layers")
    hta = run_insights(store.open(run_id)).time.hta
    tree = dash_layout(client, f"{HOST}/insights?run={run_id}&scope=hta")
    assert by_id(tree, "insights-hta-scope")["props"]["value"] is True
    figure = by_id(tree, "insights-breakdown")["props"]["figure"]
    assert [trace["name"] for trace in figure["data"]] == ["compute", "non-compute", "idle"]
    assert figure["data"][2]["y"] == [value / 1e6 for value in hta.get_column("idle_ns")]
    assert any("hta-breakdown" in c["props"].get("className", "") for c in components(tree))
    # The switch itself: the section redrawn in HTA's scope and `scope=hta` written to the address bar.
    dependencies = client.get("/_dash-dependencies").get_json()
    payload = callback_payload(dependencies, "insights-breakdown-section.children",
                               {"insights-hta-scope.value": True, "insights-run.data": run_id},
                               ["insights-hta-scope.value"])
    response = client.post("/_dash-update-component", json=payload).get_json()["response"]
    assert response['{"page":"insights","type":"url-state"}']["data"] == {"scope": "hta"}
    section = response["insights-breakdown-section"]["children"]
    assert any("hta-breakdown" in c["props"].get("className", "") for c in components(section))
