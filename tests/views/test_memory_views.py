"""/memory's view modules on the demo's Tenstorrent and CUDA runs: the state the URL names, checked against
the run, and the charts that state draws (which the page and the PNG export both take from here)."""

from __future__ import annotations

from pathlib import Path

import plotly.io as pio
import pytest

from dashboard.exports.page_figures import page_figures, pages_for
from dashboard.store import Run, RunStore
from dashboard.views import memory, memory_cuda
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> RunStore:
    store = RunStore(demo_copy(demo_template, tmp_path_factory.mktemp("memory-views") / "data"))
    return store


def _run(store: RunStore, evidence: str) -> Run:
    return store.open(next(info.id for info in store.list_runs() if evidence in info.evidence))


def _json(figure: object) -> str:
    return pio.to_json(figure, validate=False)


def _highlighted(figure: object) -> int:
    return sum(len(trace.x) for trace in figure.data if trace.name == "highlighted ops")  # type: ignore[attr-defined]


def test_a_rank_the_run_lacks_is_its_first_rank(store: RunStore) -> None:
    run = _run(store, "memory")
    state = memory.State.from_query({"rank": "987"}, run)
    assert state.rank is None and memory.data_for(run, state).rank == memory.run_ranks(run)[0]
    assert state.to_query() == {}
    assert _json(memory.figures(run, state)["memory-curves"]) == _json(memory.figures(run, memory.State())[
        "memory-curves"])


def test_the_charts_follow_op_type_program_and_peaks(store: RunStore) -> None:
    run = _run(store, "memory")
    data = memory.memory_data(run, None)
    plain = page_figures("memory", run, {})
    assert _highlighted(plain["memory-curves"]) == 0
    optype, count = data.op_types[0]
    typed = page_figures("memory", run, {"optype": optype})
    assert 0 < _highlighted(typed["memory-curves"]) <= count * len(data.buffer_types)
    program = data.programs[-1][0]
    assert program in page_figures("memory", run, {"program": program})["top-growth"].layout.title.text
    profiler = page_figures("memory", run, {"peaks": "profiler"})["memory-curves"]
    assert _json(profiler) != _json(plain["memory-curves"])  # the peaks marked are the profiler's
    assert memory.State.from_query({"optype": f"{optype},NoSuchOp", "program": "x"}, run) == memory.State(
        optypes=(optype,))


def test_the_stored_state_keeps_the_zoom_out_of_the_url(store: RunStore) -> None:
    run = _run(store, "memory")
    data = memory.memory_data(run, None)
    state = memory.State(ops=(data.first_op + 2, data.first_op + 9), op=data.first_op + 3,
                         zoom=(data.first_op + 2, data.first_op + 9))
    stored = state.store()
    assert "zoom" not in state.url_state() and stored["zoom"] == f"{data.first_op + 2}-{data.first_op + 9}"
    assert memory.State.from_store(stored, run) == state
    assert memory.State.from_store({**stored, "zoom": "900000-900010"}, run).zoom is None  # outside the run
    text = memory.table_text(run, state)
    assert text.startswith(f"{memory.table_for(run, state).height} ops · ops {data.first_op + 2}")
    csv, name = memory.table_csv(run, state)
    assert name == f"{run.id}-memory-ops-{data.first_op + 2}-{data.first_op + 9}.csv" and csv.count("\n") > 1


def test_the_cuda_view_is_picked_by_the_runs_evidence(store: RunStore) -> None:
    cuda, tt = _run(store, "cuda_memory"), _run(store, "memory")
    assert memory_cuda.shows(cuda) and not memory_cuda.shows(tt)
    assert "memory" in pages_for(cuda)
    assert list(page_figures("memory", cuda, {})) == ["cuda-memory"]
    data = memory_cuda.cuda_data(cuda, None)
    state = memory_cuda.State.from_query({"device": "nope", "rank": "987", "at": "12"}, cuda)
    assert state == memory_cuda.State(at=12)
    one = memory_cuda.State.from_query({"device": data.devices[0]}, cuda)
    assert one.device == data.devices[0]
    names = {trace.name for trace in memory_cuda.figures(cuda, one)["cuda-memory"].data}
    assert f"{data.devices[0]} allocated" in names
    assert {trace.type for trace in memory_cuda.figures(cuda, one)["cuda-memory"].data} <= {"scatter"}
