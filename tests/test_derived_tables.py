"""GPU-time tables computed once (at ingest, or by the first process to need them) and kept beside the run,
so every worker reads them instead of computing them again (store.derived, analysis.insights)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from benchmarks.gen_kineto_trace import write_trace
from dashboard.analysis import insights
from dashboard.analysis.time_tables import KEPT_FIELDS, KEPT_NAME, time_tables
from dashboard.ingest import analyses
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.store.derived import DERIVED_DIR, read_derived, write_derived


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("derived") / "trace.json"
    write_trace(path, kernels=3000)
    return path


def _fresh(store: RunStore, run_id: str):
    """The run as another process opens it: nothing of it in this process's caches."""
    return type(store.open(run_id))(store.open(run_id).info)


def test_ingest_keeps_the_time_tables_and_they_read_back_equal(trace: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore(tmp_path / "data")
    steps: list[str] = []
    run_id = ingest_paths(store, [trace], progress=lambda _fraction, message: steps.append(message))
    assert any("analysing GPU time" in step for step in steps)
    run = _fresh(store, run_id)
    kept = run.derived(KEPT_NAME)
    assert kept is not None and set(kept) == set(KEPT_FIELDS)
    assert kept["gaps"].height > 0 and kept["idle_parts"].height > 0  # the trace has idle gaps to explain
    computed = time_tables(run.id, *insights._kernel_side(run))

    def computing(*args):
        raise AssertionError("kept tables must be read, not computed again")

    monkeypatch.setattr(insights, "time_tables", computing)
    read = insights.run_time_tables(run)
    for field in (*KEPT_FIELDS, "kernels"):
        assert_frame_equal(getattr(read, field), getattr(computed, field))
    # What /insights concludes from them is the same either way.
    assert insights.time_findings(read) == insights.time_findings(computed)


def test_a_run_without_kept_tables_gets_them_from_its_first_reader(trace: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyses, "run_time_tables", lambda run: None)  # an ingest that kept nothing
    store = RunStore(tmp_path / "data")
    run_id = ingest_paths(store, [trace])
    assert _fresh(store, run_id).derived(KEPT_NAME) is None
    insights.run_time_tables(_fresh(store, run_id))
    assert _fresh(store, run_id).derived(KEPT_NAME) is not None


def test_an_analysis_that_fails_at_ingest_loses_nothing(trace: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(run):
        raise MemoryError("no room for the gaps")

    monkeypatch.setattr(analyses, "run_time_tables", broken)
    store = RunStore(tmp_path / "data")
    run_id = ingest_paths(store, [trace])
    run = _fresh(store, run_id)
    assert run.derived(KEPT_NAME) is None and run.has("kernels")
    assert insights.run_insights(run).time.by_rank.height > 0  # the page computes them itself


def test_damaged_kept_tables_are_computed_again(trace: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run_id = ingest_paths(store, [trace])
    run = _fresh(store, run_id)
    part = run.info.path / DERIVED_DIR / KEPT_NAME / "gaps.arrow"
    part.write_bytes(part.read_bytes()[:100])  # a disk that lost the file's end
    assert run.derived(KEPT_NAME) is None
    assert insights.run_time_tables(run).gaps.height > 0


def test_a_set_is_written_whole_once_and_a_folder_that_cannot_hold_it_is_no_error(tmp_path: Path) -> None:
    frames = {"a": pl.DataFrame({"x": [1, 2]}), "b": pl.DataFrame({"y": ["z"]})}
    assert write_derived(tmp_path, "set-1", frames)
    assert not write_derived(tmp_path, "set-1", {"a": pl.DataFrame({"x": [9]})})  # the first one stays
    assert read_derived(tmp_path, "set-1")["a"]["x"].to_list() == [1, 2]
    assert sorted(p.name for p in (tmp_path / DERIVED_DIR).iterdir()) == ["set-1"]  # no temporary left
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / DERIVED_DIR).write_text("a file where the folder would go")
    assert not write_derived(blocked, "set-1", frames)
    assert read_derived(blocked, "set-1") is None


def test_the_timeline_is_indexed_from_lane_tables_kept_at_ingest(trace: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.analysis import timeline_kept
    from dashboard.analysis.timeline import TIMELINE_TABLES, prepare_timeline

    store = RunStore(tmp_path / "data")
    run_id = ingest_paths(store, [trace])
    run = _fresh(store, run_id)
    assert run.derived(timeline_kept.KEPT_NAME) is not None
    computed = prepare_timeline(*(run.frame(table) for table in TIMELINE_TABLES))

    def computing(*args):
        raise AssertionError("kept lane tables must be read, not built again")

    monkeypatch.setattr(timeline_kept, "lane_tables", computing)
    read = timeline_kept.run_timeline(run)
    for part in ("events", "lanes", "names", "copies"):
        assert_frame_equal(getattr(read, part), getattr(computed, part))
    assert (read.start_ns, read.end_ns, sorted(read.indexes)) == (computed.start_ns, computed.end_ns,
                                                                    sorted(computed.indexes))
    assert all((read.indexes[lane].rows == computed.indexes[lane].rows).all() for lane in computed.indexes)


def test_a_run_deleted_while_its_tables_are_computed_does_not_come_back(tmp_path: Path) -> None:
    gone = tmp_path / "runs" / "deleted-run"
    assert not write_derived(gone, "set-1", {"a": pl.DataFrame({"x": [1]})})
    assert not gone.exists()
