"""Which ingest warnings a page repeats, and how the shared component shows them."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash import html

from dashboard.ingest.pipeline import ingest_paths
from dashboard.layouts import server_state
from dashboard.layouts.page import page_header
from dashboard.layouts.run_warnings import relevant_warnings, run_warnings, runs_warnings_overview
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.collectors.test_kineto_parsing import launch, write, x

WARNINGS = [
    "/data/a.sqlite: 144 kernels end before they start; dropped",
    "/data/a.sqlite: 2 ranges start or end more than 10 years away from the rest of the trace; dropped",
    "/data/notes.txt: not recognised, kept as a source but not parsed",
    "/logs/run/m_memory.json: no runtime log in this run, so deallocate / get_device snapshots are missing",
    "/dumps/x.dot: 1 planner buffers with a garbled label skipped",
]


def test_each_page_gets_its_warnings_and_the_general_ones() -> None:
    assert relevant_warnings(WARNINGS, ("kernels",)) == [WARNINGS[0], WARNINGS[2]]
    assert relevant_warnings(WARNINGS, ("layers",)) == [WARNINGS[1], WARNINGS[2]]
    assert relevant_warnings(WARNINGS, ("kernels", "layers")) == WARNINGS[:3]
    assert relevant_warnings(WARNINGS, ("memory",)) == [WARNINGS[2], WARNINGS[3]]
    assert relevant_warnings(WARNINGS, ("planner",)) == [WARNINGS[2], WARNINGS[4]]
    assert relevant_warnings(WARNINGS, None) == WARNINGS


def _texts(component: object) -> str:
    if isinstance(component, str | int):
        return str(component)
    children = getattr(component, "children", None)
    if children is None:
        return ""
    if not isinstance(children, list | tuple):
        children = [children]
    return "".join(_texts(child) for child in children)


def _ids_of(component: object, class_name: str) -> list[object]:
    found = [component] if class_name in (getattr(component, "className", "") or "").split() else []
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children] if children is not None else []:
        found += _ids_of(child, class_name)
    return found


@pytest.fixture
def configured(data_dir: Path):
    """The app's context pointed at the test's data folder (page_header reads the store)."""
    saved = dict(server_state._state)
    server_state.configure(Settings(data_dir=data_dir))
    yield data_dir
    server_state._state.clear()
    server_state._state.update(saved)


def test_the_page_header_of_a_run_with_dropped_kernels_says_so(tmp_path: Path, configured: Path) -> None:
    events = [x("cpu_op", "aten::mm", 10, 50, **{"External id": 1}), *launch(11, 1, 20, 3, ext=1),
              *launch(12, 2, 7e14, 3, ext=1)]  # a kernel 20 years after the rest
    path = write(tmp_path / "t.json", events)
    store = RunStore(configured)
    run = store.open(ingest_paths(store, [path]))
    line = f"{path}: 1 kernel starts or ends more than 10 years away from the rest of the trace; dropped"
    assert run.info.warnings == [line]
    header = page_header("Kernels", run)
    [details] = _ids_of(header, "run-warnings")
    text = _texts(details)
    assert "⚠ 1 ingest warning" in text
    assert "t.json: 1 kernel starts or ends more than 10 years away from the rest of the trace; dropped" in text
    assert run_warnings(run, "Memory") is None  # nothing about device memory
    assert _ids_of(page_header("Runs", None), "run-warnings") == []
    overview = runs_warnings_overview([run.info])
    assert isinstance(overview, html.Div) and run.id in _texts(overview)
    assert runs_warnings_overview([]) is None
