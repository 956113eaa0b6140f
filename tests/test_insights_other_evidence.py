"""/insights for runs with only compiler or only planner evidence: they open, with their findings and links."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from dashboard.analysis.insights import run_insights
from dashboard.app import create_app
from dashboard.demo import SOURCE_DEMOS
from dashboard.ingest.pipeline import ingest_paths
from dashboard.layouts.shell import URL_STATE
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.support.dash_requests import HOST, by_id, components, dash_layout
from tests.support.demo_copy import demo_sources
from tests.support.triton_demo import requires_triton_demo


@pytest.fixture(scope="module")
def no_kernel_runs(tmp_path_factory: pytest.TempPathFactory,
                   demo_template: Path) -> tuple[Any, dict[str, str], RunStore]:
    """A store holding only the demo's planner run, then its compiler run (newest): no kernel evidence."""
    data_dir = tmp_path_factory.mktemp("data")
    # The demo's sources of these two: the planner's written as write_demo_sources writes it, the compiler's
    # (a real Triton compile, ~6 s) as the session's seeding wrote it. Not the other demos' (a real tinygrad
    # run among them: ~5 s).
    planner = importlib.import_module(dict(SOURCE_DEMOS)["demo-planner"])
    sources = {"demo-planner": planner.write(tmp_path_factory.mktemp("sources") / "demo-planner"),
               "demo-compiler": demo_sources(demo_template, "demo-compiler")}
    store = RunStore(data_dir)
    ids = {name: ingest_paths(store, sources[name]) for name in ("demo-planner", "demo-compiler")}
    app = create_app(Settings(data_dir=data_dir, seed_demo=False))
    return app.server.test_client(), ids, store


def _links(tree: Any) -> list[str]:
    findings = by_id(tree, "insights-findings")
    return [c["props"]["href"] for c in components(findings) if "finding-link" in c["props"].get("className", "")]


@requires_triton_demo
def test_without_a_kernel_run_insights_opens_the_newest_run_with_findings(
        no_kernel_runs: tuple[Any, dict[str, str], RunStore]) -> None:
    client, ids, store = no_kernel_runs
    tree = dash_layout(client, f"{HOST}/insights")
    links = _links(tree)
    assert len(links) == len(run_insights(store.open(ids["demo-compiler"])).findings) > 0
    assert all(link.startswith(f"/compiler?run={ids['demo-compiler']}&compile=") for link in links)


def test_planner_run_lists_sharing_findings_linking_to_the_buffer(
        no_kernel_runs: tuple[Any, dict[str, str], RunStore]) -> None:
    client, ids, _store = no_kernel_runs
    tree = dash_layout(client, f"{HOST}/insights?run={ids['demo-planner']}")
    links = _links(tree)
    assert any(link.startswith(f"/planner?run={ids['demo-planner']}&group=") and "&buffer=" in link
               for link in links)
    texts = " ".join(str(c["props"].get("children")) for c in components(tree))
    assert "planner sharing" in texts and "IR growth" in texts  # thresholds explained on the page
    assert "GPU time: the run has no kernels or copies" in texts


@requires_triton_demo
def test_links_open_the_views_with_the_state_they_name(no_kernel_runs: tuple[Any, dict[str, str], RunStore]) -> None:
    client, ids, store = no_kernel_runs
    growth = next(f for f in run_insights(store.open(ids["demo-compiler"])).findings
                  if f.key.startswith("compiler:growth:"))
    compiler = dash_layout(client, f"{HOST}{growth.url}")
    compile_index, step = growth.key.rsplit(":", 1)[1], growth.url.split("&step=")[1].split("&")[0]
    assert str(by_id(compiler, "compiler-compile")["props"]["value"]) == compile_index
    assert str(by_id(compiler, "compiler-step")["props"]["value"]) == step
    sharing = next(f for f in run_insights(store.open(ids["demo-planner"])).findings
                   if f.key.startswith("planner:sharing:"))
    planner = dash_layout(client, f"{HOST}{sharing.url}")
    group = sharing.key.split(":")[2]
    assert by_id(planner, "planner-group")["props"]["value"] == group
    buffer = sharing.url.rsplit("buffer=", 1)[1]
    state = by_id(planner, {"type": URL_STATE, "page": "planner"})["props"]["data"]
    assert state["group"] == group and state["buffer"] == buffer  # the page kept the buffer the link names
