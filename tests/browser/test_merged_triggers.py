"""Page callbacks honour every input of a call, and controls whose last answer was dropped.

Two things the renderer does that callbacks must survive (seen in CI: the rank dropdown
said "rank 0", the timeline and the URL still "all ranks"):
- changes made while a call is queued are merged into one call whose `changedPropIds`
  lists them all, while `ctx.triggered_id` names only the first;
- the answer to a call that a newer call of the same callback overtakes is dropped, and
  the newer call may name only a chart event (the graph's first relayout).
These tests POST such calls to the real app over HTTP, as the browser does.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from dashboard.demo import tt_memory_log, ws_dumps
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.dash_requests import callback_payload
from tests.support.layered_run import DEVICE_METADATA, layered_tables

PLANNER_STATE = '{"page":"planner","type":"url-state"}.data'


@pytest.fixture(scope="module")
def runs(server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("merged")
    store = RunStore(server.data_dir)
    return {
        "kernels": store.write("merged", layered_tables(), metadata=DEVICE_METADATA),
        "memory": ingest_paths(store, tt_memory_log.write(root / "memory-sources"), name="merged-memory"),
        "planner": ingest_paths(store, ws_dumps.write(root / "ws"), name="merged-planner"),
    }


class App:
    """The running app, spoken to as the browser speaks to it."""

    def __init__(self, url: str) -> None:
        self.url = url
        with urllib.request.urlopen(f"{url}/_dash-dependencies", timeout=30) as response:
            self.dependencies = json.load(response)

    def post(self, output: str, values: dict[str, Any], changed: list[str]) -> tuple[int, dict]:
        body = json.dumps(callback_payload(self.dependencies, output, values, changed)).encode()
        request = urllib.request.Request(f"{self.url}/_dash-update-component", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return response.status, (json.loads(raw) if response.status == 200 else {})

    def layout(self, path: str, run_id: str) -> Any:
        """The page's component tree as the router callback sends it."""
        status, body = self.post("_pages_content.children", {
            "_pages_location.pathname": path, "_pages_location.search": f"?run={run_id}"},
            ["_pages_location.pathname", "_pages_location.search"])
        assert status == 200
        return body["response"]["_pages_content"]["children"]


@pytest.fixture(scope="module")
def app(server, runs: dict[str, str]) -> App:
    with urllib.request.urlopen(f"{server.url}/", timeout=30):  # the router is set up on the first request
        pass
    return App(server.url)


def _prop(tree: Any, component_id: Any, prop: str) -> Any:
    """A property of the component with this id in a serialised layout."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            props = node.get("props")
            if isinstance(props, dict) and props.get("id") == component_id:
                return props.get(prop)
            stack.extend(node.values())
    raise AssertionError(f"no component {component_id!r}")


def _url_state(body: dict, page: str) -> dict:
    return body["response"][json.dumps({"page": page, "type": "url-state"}, separators=(",", ":"))]["data"]


def _lanes(body: dict) -> list[str]:
    return body["response"]["timeline-graph"]["figure"]["layout"]["yaxis"]["ticktext"]


def test_timeline_takes_a_rank_merged_with_or_overtaken_by_a_relayout_event(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/timeline", runs["kernels"])
    state = _prop(tree, "timeline-state", "data")
    all_lanes = _prop(tree, "timeline-graph", "figure")["layout"]["yaxis"]["ticktext"]
    assert any(label.startswith("r1 ") for label in all_lanes)
    # The chart's relayouts reach the server through the `timeline-relayout` store (the browser keeps the
    # keys' own moves: assets/timeline-keys.js).
    for relayout, changed in (({"xaxis.autorange": True}, ["timeline-relayout.data", "timeline-rank.value"]),
                              ({"dragmode": "pan"}, ["timeline-relayout.data", "timeline-rank.value"]),
                              ({"xaxis.autorange": True}, ["timeline-relayout.data"])):  # the rank call was dropped
        status, body = app.post("timeline-graph.figure", {
            "timeline-relayout.data": relayout, "timeline-rank.value": "0", "timeline-state.data": state,
        }, changed)
        assert status == 200, (relayout, changed)
        assert _url_state(body, "timeline")["rank"] == "0"  # URL state is the URL's text
        assert _lanes(body) and not any(label.startswith("r1 ") for label in _lanes(body))
        if relayout.get("dragmode"):
            assert body["response"]["timeline-state"]["data"]["dragmode"] == "pan"
    # With the rank on screen, an event that asks for nothing changes nothing.
    status, _ = app.post("timeline-graph.figure", {
        "timeline-relayout.data": {"autosize": True}, "timeline-rank.value": "all", "timeline-state.data": state,
    }, ["timeline-relayout.data"])
    assert status == 204


def test_timeline_takes_in_a_button_press_whose_answer_was_dropped(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/timeline", runs["kernels"])
    state = _prop(tree, "timeline-state", "data")
    zoomed = {**state, "query": {**state["query"], "window": "1-2"}}
    # "whole run" was pressed (n_clicks 1) but its answer dropped: the next call, sent for a settled key move
    # that changes nothing, still takes the press in; a press taken in is not taken again.
    values = {"timeline-relayout.data": {"autosize": True}, "timeline-rank.value": "all",
              "timeline-reset.n_clicks": 1, "timeline-state.data": zoomed}
    status, body = app.post("timeline-graph.figure", values, ["timeline-relayout.data"])
    assert status == 200 and _url_state(body, "timeline")["window"] == ""
    taken = body["response"]["timeline-state"]["data"]
    assert taken["presses"]["timeline-reset"] == 1
    status, _ = app.post("timeline-graph.figure", {**values, "timeline-state.data": taken}, ["timeline-relayout.data"])
    assert status == 204


def test_kernels_take_a_rank_merged_with_or_overtaken_by_the_grids_echo(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/kernels", runs["kernels"])
    drawn = _prop(tree, {"type": "url-state", "page": "kernels"}, "data")
    values = {"kernels-table.selectedRows": [], "kernels-run.data": runs["kernels"], "kernels-sel.data": [],
              "kernels-group.value": "name", '{"page":"kernels","type":"url-state"}.data': drawn}
    for changed in (["kernels-table.selectedRows", "kernels-rank.value"], ["kernels-table.selectedRows"]):
        status, body = app.post("kernels-bar.figure", {**values, "kernels-rank.value": "1"}, changed)
        assert status == 200, changed
        assert _url_state(body, "kernels")["rank"] == "1"  # URL state is the URL's text
        assert body["response"]["kernels-table"]["rowData"]  # redrawn for rank 1, not a selection patch
    status, _ = app.post("kernels-bar.figure", {**values, "kernels-rank.value": "all"}, ["kernels-table.selectedRows"])
    assert status == 204  # the echo alone, with the rank on screen, is still ignored


def test_layers_take_a_rank_merged_with_or_overtaken_by_a_layer_click(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/layers", runs["kernels"])
    drawn = _prop(tree, {"type": "url-state", "page": "layers"}, "data")
    box = _prop(tree, "layers-runtime", "figure")["data"][0]
    click = {"points": [{"x": box["x"][0], "customdata": list(box["customdata"][0])}]}
    # The controls as drawn (the peak's dtype and TFLOP/s are part of the view state).
    values = {"layers-runtime.clickData": click, "layers-run.data": runs["kernels"],
              "layers-dtype.value": _prop(tree, "layers-dtype", "value"),
              "layers-peak.value": _prop(tree, "layers-peak", "value"),
              '{"page":"layers","type":"url-state"}.data': drawn}
    for changed in (["layers-runtime.clickData", "layers-rank.value"], ["layers-runtime.clickData"]):
        status, body = app.post("layers-runtime.figure", {**values, "layers-rank.value": "1"}, changed)
        assert status == 200, changed
        state = _url_state(body, "layers")
        assert state["rank"] == "1" and state["layer"] == box["x"][0]  # URL state is the URL's text
        assert "data" in body["response"]["layers-runtime"]["figure"]  # new boxes for rank 1, not a patch
    status, body = app.post("layers-runtime.figure", {**values, "layers-rank.value": "all"},
                            ["layers-runtime.clickData"])
    assert status == 200
    assert "data" not in body["response"]["layers-runtime"]["figure"]  # a click alone moves the band only


def test_memory_takes_a_unit_merged_with_or_overtaken_by_a_relayout_event(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/memory", runs["memory"])
    values = {"memory-curves.relayoutData": {"autosize": True}, "memory-peaks.value": "all",
              "memory-run.data": _prop(tree, "memory-run", "data"),
              "memory-view.data": _prop(tree, "memory-view", "data"), "memory-table-version.data": 0}
    for changed in (["memory-curves.relayoutData", "memory-unit.value"], ["memory-curves.relayoutData"]):
        status, body = app.post("memory-curves.figure", {**values, "memory-unit.value": "device"}, changed)
        assert status == 200, changed
        assert _url_state(body, "memory")["unit"] == "device"
        assert "data" in body["response"]["memory-curves"]["figure"]  # redrawn in device totals
    status, _ = app.post("memory-curves.figure", {**values, "memory-unit.value": "bank"},
                         ["memory-curves.relayoutData"])
    assert status == 204  # a relayout that asks for nothing changes nothing


def test_planner_takes_a_partition_merged_with_or_overtaken_by_a_grids_echo(app: App, runs: dict[str, str]) -> None:
    tree = app.layout("/planner", runs["planner"])
    state = _prop(tree, {"type": "url-state", "page": "planner"}, "data")
    partitions = [option["value"] for option in _prop(tree, "planner-partition", "options") if option["value"] != ""]
    assert state["group"] and partitions
    values = {"planner-smem-table.selectedRows": [], PLANNER_STATE: state, "planner-run.data": runs["planner"]}
    for changed in (["planner-smem-table.selectedRows", "planner-partition.value"],
                    ["planner-smem-table.selectedRows"]):
        status, body = app.post(PLANNER_STATE, {**values, "planner-partition.value": partitions[0]}, changed)
        assert status == 200, changed
        assert str(_url_state(body, "planner")["partition"]) == str(partitions[0])
    status, _ = app.post(PLANNER_STATE, {**values, "planner-partition.value": ""},
                         ["planner-smem-table.selectedRows"])
    assert status == 204  # the grid's echo alone changes nothing


def test_callback_payload_lists_every_input_and_state() -> None:
    dependencies = [{"output": '..a.children...{"page":"p","type":"t"}.data..',
                     "inputs": [{"id": "b", "property": "value"}],
                     "state": [{"id": {"type": "t", "page": "p"}, "property": "data"}]}]
    body = callback_payload(dependencies, "a.children", {"b.value": 3, '{"page":"p","type":"t"}.data': 4}, ["b.value"])
    assert body["outputs"] == [{"id": "a", "property": "children"},
                               {"id": {"page": "p", "type": "t"}, "property": "data"}]
    assert body["inputs"] == [{"id": "b", "property": "value", "value": 3}]
    assert body["state"] == [{"id": {"type": "t", "page": "p"}, "property": "data", "value": 4}]
