"""Probe 6 of issue 35: a damaged run (a truncated parquet file, a bad `run.json`).

Its pages showed "ComputeError: parquet: File out of specification…" or "JSONDecodeError…"; its trace,
CSV and zip downloads answered 500 (9 of 9); and `/compare` on a healthy run picked the damaged one as B
and showed its error.
"""

from __future__ import annotations

import json
import logging

import pytest

from dashboard.store import RunStore
from tests.support.dash_requests import components
from tests.support.kernel_tables import kernel_tables

PAGES = ["/kernels", "/timeline", "/insights", "/layers", "/ranks", "/memory", "/planner", "/compiler", "/compare",
         "/history"]
INTERNALS = ("ComputeError", "JSONDecodeError", "Traceback", "out of specification", "ArrowInvalid",
             "OSError", "Errno", "polars")


def router_payload(pathname: str, search: str = "") -> dict:
    return {"output": ".._pages_content.children..._pages_store.data..",
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [{"id": "_pages_location", "property": "pathname", "value": pathname},
                       {"id": "_pages_location", "property": "search", "value": search}],
            "state": [], "changedPropIds": ["_pages_location.pathname"]}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two healthy kernel runs and three damaged ones, newer than both (so "the newest other run" is one)."""
    from dashboard.app import create_app
    from dashboard.settings import Settings

    data = tmp_path_factory.mktemp("damaged") / "data"
    store = RunStore(data)
    healthy = [store.write(f"healthy-{i}", kernel_tables(20, seed=i)) for i in range(2)]
    cut, bad_json, bad_schema = (store.write(name, kernel_tables(20, seed=9))
                                 for name in ("truncated", "bad-json", "bad-schema"))
    kernels = data / "runs" / cut / "kernels.parquet"
    kernels.write_bytes(kernels.read_bytes()[: kernels.stat().st_size // 2])
    (data / "runs" / bad_json / "run.json").write_text('{"name": "bad-json", "created": "2099-01-01T00:00:00", ')
    document = json.loads((data / "runs" / bad_schema / "run.json").read_text())
    document["row_counts"] = ["kernels", 5]
    (data / "runs" / bad_schema / "run.json").write_text(json.dumps(document))
    app = create_app(Settings(data_dir=data, seed_demo=False))
    client = app.server.test_client()
    client.get("/")
    return {"client": client, "healthy": healthy, "damaged": {cut: "kernels.parquet is cut short",
                                                              bad_json: "run.json is not valid JSON",
                                                              bad_schema: "'row_counts'"}}


def test_a_damaged_run_is_listed_as_damaged_with_its_reason(damaged: dict) -> None:
    # The Runs page as the router draws it (its module is Dash's to load: importing it again would
    # register the page twice in this process).
    response = damaged["client"].post("/_dash-update-component", json=router_payload("/"))
    assert response.status_code == 200
    grid = next(component for component in components(response.get_json()["response"]["_pages_content"]["children"])
                if component["props"].get("id") == "runs-grid")
    rows = {row["id"]: row for row in grid["props"]["rowData"]}
    for run_id, reason in damaged["damaged"].items():
        assert run_id in rows and "damaged" in rows[run_id]["open"] and reason in rows[run_id]["open"], rows.get(run_id)
    for run_id in damaged["healthy"]:
        assert "damaged" not in rows[run_id]["open"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_of_a_damaged_run_says_so_in_one_line(damaged: dict, page: str, caplog) -> None:
    for run_id, reason in damaged["damaged"].items():
        with caplog.at_level(logging.ERROR):
            response = damaged["client"].post("/_dash-update-component", json=router_payload(page, f"?run={run_id}"))
        assert response.status_code == 200, (page, run_id, response.data[:300])
        text = response.get_data(as_text=True)
        for word in INTERNALS:
            assert word not in text, (page, run_id, word)
        assert "error-banner" not in text, (page, run_id, text[:500])  # no failure: an answer
        if page not in ("/history",):  # the history page lists runs; it never opens the one in the URL
            assert "is damaged: " in text and reason.split("'")[0] in text, (page, run_id, text[:800])


@pytest.mark.parametrize("path", ["trace.json", "tables/kernels.csv", "export/kernels.zip", "export/kernels.png",
                                  "source/x.json", "graph.svg?group=g"])
def test_every_download_of_a_damaged_run_is_its_one_line_and_409(damaged: dict, path: str) -> None:
    for run_id, reason in damaged["damaged"].items():
        response = damaged["client"].get(f"/runs/{run_id}/{path}")
        assert response.status_code == 409, (path, run_id, response.status_code, response.data[:300])
        text = response.get_data(as_text=True)
        assert reason.split("'")[0] in text and not any(word in text for word in INTERNALS), text[:400]


def test_compare_history_and_findings_skip_a_damaged_run(damaged: dict) -> None:
    from dashboard.layouts.server_state import current_store

    newest, older = damaged["healthy"][1], damaged["healthy"][0]
    response = damaged["client"].post("/_dash-update-component", json=router_payload("/compare", f"?run={newest}"))
    text = response.get_data(as_text=True)
    assert response.status_code == 200 and "error-banner" not in text
    for run_id in damaged["damaged"]:
        assert run_id not in text, f"/compare offered the damaged run {run_id}"
    assert older in text  # B is the other healthy run
    listed = {info.id for info in current_store().list_runs()}
    assert listed == set(damaged["healthy"])  # what history, compare and findings draw from
    history = damaged["client"].post("/_dash-update-component", json=router_payload("/history", f"?run={newest}"))
    assert history.status_code == 200 and not any(run_id in history.get_data(as_text=True)
                                                  for run_id in damaged["damaged"])
