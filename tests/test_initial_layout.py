"""The layout request answers with the page the browser is on, so no router round trip is needed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dash
import pytest

from dashboard.app import create_app
from dashboard.settings import Settings
from tests.support.dash_requests import HOST, by_id, components, dash_layout
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> Any:
    data_dir = demo_copy(demo_template, tmp_path_factory.mktemp("layout") / "data")
    app = create_app(Settings(data_dir=data_dir, seed_demo=False))
    return app.server.test_client()


def test_layout_holds_the_referring_page_and_a_location_that_matches_the_browser(client: Any) -> None:
    tree = dash_layout(client, f"{HOST}/kernels?rank=0")
    content = by_id(tree, "_pages_content")["props"]["children"]
    assert any(c["props"].get("id") == "kernels-page" for c in components(content))
    location = by_id(tree, "_pages_location")["props"]
    # Equal to the browser's address, the location reports no change on mount: the router stays idle.
    assert location["pathname"] == "/kernels"
    assert location["search"] == "?rank=0"
    assert "href" not in location and "hash" not in location  # the fragment is not in a Referer
    assert by_id(tree, "_pages_store")["props"]["data"] == {"title": dash.page_registry["pages.kernels"]["title"]}
    # The run picker and the nav links are filled as the run-picker callback would fill them.
    picker = by_id(tree, "run-picker")["props"]
    assert picker["options"] and picker["value"] in {option["value"] for option in picker["options"]}
    memory_link = by_id(tree, {"type": "nav-link", "path": "/memory"})["props"]
    assert memory_link["href"] == "/memory?rank=0"


def test_view_state_in_the_query_reaches_the_page_layout(client: Any) -> None:
    tree = dash_layout(client, f"{HOST}/kernels?top=5")
    bar = by_id(tree, "kernels-bar")["props"]["figure"]
    assert len(bar["data"][0]["y"]) == 5


@pytest.mark.parametrize("referrer", [
    None,  # a browser or proxy that strips it
    "http://elsewhere.example/kernels",  # another origin never chooses what we render
    f"{HOST}/no-such-page",  # the router's 404 stays the one answer for unknown paths
])
def test_without_a_usable_referrer_the_router_fills_the_page(client: Any, referrer: str | None) -> None:
    tree = dash_layout(client, referrer)
    assert by_id(tree, "_pages_content")["props"].get("children") is None
    location = by_id(tree, "_pages_location")["props"]
    assert "pathname" not in location and "search" not in location
    assert by_id(tree, "run-picker")["props"]["options"] == []


def test_a_page_layout_that_fails_leaves_the_error_to_the_router(client: Any, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    page = dash.page_registry["pages.kernels"]

    def broken(**_query: Any) -> None:
        raise RuntimeError("broken page")

    monkeypatch.setitem(page, "layout", broken)
    with caplog.at_level(logging.ERROR):
        tree = dash_layout(client, f"{HOST}/kernels")
    assert by_id(tree, "_pages_content")["props"].get("children") is None
    assert "broken page" in caplog.text


def test_index_page_is_not_affected(client: Any) -> None:
    response = client.get("/kernels", headers={"Referer": f"{HOST}/kernels"})
    assert response.status_code == 200
    assert "_dash-config" in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/", "/insights", "/kernels", "/layers", "/timeline", "/ranks", "/memory", "/planner",
                                  "/compiler", "/compare", "/history"])
def test_pickers_are_native_selects_and_checklists(client: Any, path: str) -> None:
    # Dash 4's dcc.Dropdown costs 30-50 ms of a first render each (layouts/select.py): no page draws one.
    # A native select shows the choice it is given only as text.
    tree = dash_layout(client, f"{HOST}{path}")
    assert not [node["props"].get("id") for node in components(tree) if node.get("type") == "Dropdown"], path
    selects = [node["props"] for node in components(tree) if node.get("type") == "Select"]
    assert selects, path  # the run picker at least
    for props in selects:
        values = {option["value"] for option in props.get("options") or []}
        assert all(isinstance(value, str) for value in values), props.get("id")
        assert props.get("value") in values | {""}, (props.get("id"), props.get("value"))


def test_the_compiler_pages_code_panels_are_in_the_layout_and_their_stores_start_empty(client: Any) -> None:
    # Drawn with the page (layouts/html_panel.py), not by an initial callback a cycle after the charts;
    # the stores carry only later steps, so the (possibly megabytes of) code is sent once.
    tree = dash_layout(client, f"{HOST}/compiler")
    for name in ("python", "stages", "ir", "diff"):
        panel = by_id(tree, f"compiler-{name}")
        assert panel["type"] == "HtmlPanel" and panel["namespace"] == "dashboard_components"
        assert "data" not in by_id(tree, f"compiler-{name}-html")["props"]
    assert 'class="code-line' in by_id(tree, "compiler-ir")["props"]["html"]
