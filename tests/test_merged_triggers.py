"""Page callbacks honour every input of a merged call, not only the first one.

Dash's renderer merges input changes made while a call is queued into one call whose
`changedPropIds` lists them all (a rank picked while the chart's own relayout event is
on its way). A callback that branched on `ctx.triggered_id` alone dropped the rank (seen
in CI: the rank dropdown said "rank 0", the timeline and the URL still "all ranks").
These tests POST such merged calls to the real app, as the browser does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dash
import pytest
from dash.development.base_component import Component

from dashboard.app import create_app
from dashboard.demo import tt_memory_log, ws_dumps
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.support.dash_requests import callback_payload
from tests.support.layered_run import DEVICE_METADATA, layered_tables


@pytest.fixture(scope="module")
def app_and_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, str, str]:
    root = tmp_path_factory.mktemp("merged")
    store = RunStore(root / "data")
    kernel_run = store.write("merged", layered_tables(), metadata=DEVICE_METADATA)
    memory_run = store.ingest(tt_memory_log.write(root / "memory-sources"), name="merged-memory")
    planner_run = store.ingest(ws_dumps.write(root / "ws"), name="merged-planner")
    return create_app(Settings(data_dir=root / "data", seed_demo=False)), kernel_run, memory_run, planner_run


@pytest.fixture(scope="module")
def app_and_run(app_and_runs: tuple[Any, str, str, str]) -> tuple[Any, str]:
    return app_and_runs[0], app_and_runs[1]


def _find(component: Any, component_id: str) -> Component | None:
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if isinstance(child, Component) and (found := _find(child, component_id)) is not None:
            return found
    return None


def _layout(page: str, **query: str) -> Any:
    # The module Dash imported (as "pages.<name>"): importing dashboard.pages.<name> again would register it twice.
    return dash.page_registry[f"pages.{page}"]["layout"](**query)


def _prop(tree: Any, component_id: str, prop: str) -> Any:
    component = _find(tree, component_id)
    assert component is not None, component_id
    return getattr(component, prop)


def _post(app: Any, output: str, values: dict[str, Any], changed: list[str]) -> tuple[int, dict]:
    client = app.server.test_client()
    dependencies = client.get("/_dash-dependencies").get_json()
    response = client.post("/_dash-update-component", json=callback_payload(dependencies, output, values, changed))
    return response.status_code, (response.get_json() if response.status_code == 200 else {})


def _url_state(body: dict, page: str) -> dict:
    return body["response"][json.dumps({"page": page, "type": "url-state"}, separators=(",", ":"))]["data"]


def test_timeline_takes_a_rank_that_came_with_a_relayout_event(app_and_run: tuple[Any, str]) -> None:
    app, run_id = app_and_run
    tree = _layout("timeline", run=run_id)
    state = _prop(tree, "timeline-state", "data")
    all_lanes = _prop(tree, "timeline-graph", "figure")["layout"]["yaxis"]["ticktext"]
    assert any(label.startswith("r1 ") for label in all_lanes)
    for relayout in ({"autosize": True}, {"dragmode": "pan"}):  # neither asks for a new window
        status, body = _post(app, "timeline-graph.figure", {
            "timeline-graph.relayoutData": relayout, "timeline-rank.value": "0", "timeline-state.data": state,
        }, ["timeline-graph.relayoutData", "timeline-rank.value"])
        assert status == 200, relayout
        assert _url_state(body, "timeline")["rank"] == 0
        lanes = body["response"]["timeline-graph"]["figure"]["layout"]["yaxis"]["ticktext"]
        assert lanes and not any(label.startswith("r1 ") for label in lanes)
    assert body["response"]["timeline-state"]["data"]["dragmode"] == "pan"
    # Alone, an event that asks for nothing still changes nothing.
    status, _ = _post(app, "timeline-graph.figure", {
        "timeline-graph.relayoutData": {"autosize": True}, "timeline-rank.value": "all", "timeline-state.data": state,
    }, ["timeline-graph.relayoutData"])
    assert status == 204


def test_kernels_take_a_rank_that_came_with_the_grids_echo(app_and_run: tuple[Any, str]) -> None:
    app, run_id = app_and_run
    values = {"kernels-rank.value": "1", "kernels-table.selectedRows": [], "kernels-run.data": run_id,
              "kernels-sel.data": [], "kernels-group.value": "name"}
    status, body = _post(app, "kernels-bar.figure", values, ["kernels-table.selectedRows", "kernels-rank.value"])
    assert status == 200
    assert _url_state(body, "kernels")["rank"] == 1
    assert body["response"]["kernels-table"]["rowData"]  # re-rendered for rank 1, not a selection patch
    status, _ = _post(app, "kernels-bar.figure", values, ["kernels-table.selectedRows"])
    assert status == 204  # the echo alone is still ignored


def test_layers_take_a_rank_that_came_with_a_layer_click(app_and_run: tuple[Any, str]) -> None:
    app, run_id = app_and_run
    tree = _layout("layers", run=run_id)
    box = _prop(tree, "layers-runtime", "figure")["data"][0]
    click = {"points": [{"x": box["x"][0], "customdata": list(box["customdata"][0])}]}
    values = {"layers-rank.value": "1", "layers-runtime.clickData": click, "layers-run.data": run_id,
              "layers-dtype.value": "bf16"}
    status, body = _post(app, "layers-runtime.figure", values, ["layers-runtime.clickData", "layers-rank.value"])
    assert status == 200
    state = _url_state(body, "layers")
    assert state["rank"] == 1 and state["layer"] == box["x"][0]
    assert "data" in body["response"]["layers-runtime"]["figure"]  # a new figure for rank 1, not a patch
    status, body = _post(app, "layers-runtime.figure", values, ["layers-runtime.clickData"])
    assert status == 200
    assert "data" not in body["response"]["layers-runtime"]["figure"]  # a click alone moves the band only


def test_memory_takes_a_unit_that_came_with_a_relayout_event(app_and_runs: tuple[Any, str, str, str]) -> None:
    app, _, run_id, _ = app_and_runs
    tree = _layout("memory", run=run_id)
    values = {"memory-curves.relayoutData": {"autosize": True}, "memory-unit.value": "device",
              "memory-peaks.value": "all", "memory-run.data": _prop(tree, "memory-run", "data"),
              "memory-view.data": _prop(tree, "memory-view", "data"), "memory-table-version.data": 0}
    status, body = _post(app, "memory-curves.figure", values, ["memory-curves.relayoutData", "memory-unit.value"])
    assert status == 200
    assert _url_state(body, "memory")["unit"] == "device"
    assert "data" in body["response"]["memory-curves"]["figure"]  # redrawn in device totals
    status, _ = _post(app, "memory-curves.figure", values, ["memory-curves.relayoutData"])
    assert status == 204  # a relayout that asks for nothing changes nothing


def test_planner_takes_a_partition_that_came_with_a_grids_echo(app_and_runs: tuple[Any, str, str, str]) -> None:
    app, _, _, run_id = app_and_runs
    tree = _layout("planner", run=run_id)
    state = _prop(tree, {"type": "url-state", "page": "planner"}, "data")
    partitions = [option["value"] for option in _prop(tree, "planner-partition", "options") if option["value"] != "all"]
    assert state["group"] and partitions
    values = {"planner-smem-table.selectedRows": [], "planner-partition.value": partitions[0],
              '{"page":"planner","type":"url-state"}.data': state, "planner-run.data": run_id}
    status, body = _post(app, '{"page":"planner","type":"url-state"}.data', values,
                         ["planner-smem-table.selectedRows", "planner-partition.value"])
    assert status == 200
    assert str(_url_state(body, "planner")["partition"]) == str(partitions[0])
    status, _ = _post(app, '{"page":"planner","type":"url-state"}.data', values, ["planner-smem-table.selectedRows"])
    assert status == 204  # the grid's echo alone changes nothing


def test_callback_payload_lists_every_input_and_state(tmp_path: Path) -> None:
    dependencies = [{"output": '..a.children...{"page":"p","type":"t"}.data..',
                     "inputs": [{"id": "b", "property": "value"}], "state": [{"id": "c", "property": "data"}]}]
    body = callback_payload(dependencies, "a.children", {"b.value": 3}, ["b.value"])
    assert body["outputs"] == [{"id": "a", "property": "children"},
                               {"id": {"page": "p", "type": "t"}, "property": "data"}]
    assert body["inputs"] == [{"id": "b", "property": "value", "value": 3}]
    assert body["state"] == [{"id": "c", "property": "data", "value": None}]
