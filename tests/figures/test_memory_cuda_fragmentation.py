"""/memory's CUDA view draws fragmentation over time for a snapshot (beside slack), none for a trace."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from dashboard.demo import torch_snapshot as demo
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views import memory_cuda
from tests.analysis.test_cuda_fragmentation import _builder
from tests.analysis.test_cuda_memory import _events
from tests.support.typed_arrays import decoded


@pytest.fixture()
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "data")


def _figure(store: RunStore, run_id: str):
    run = store.open(run_id)
    return memory_cuda.figures(run, memory_cuda.State.from_query({}, run))["cuda-memory"]


def test_a_snapshot_gets_a_fragmentation_row_with_the_replayed_values(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(demo.snapshot_of([_builder()])))
    run_id = ingest_paths(store, [path])
    figure = _figure(store, run_id)
    (line,) = [trace for trace in figure.data if trace.name == "cuda:0 fragmentation"]
    # After each of the 13 entries (see _builder): S1 alone, a, a b, a b c, b requested: one free block (0);
    # b freed: 1 − 8/12; S2 reserved, empty: 1 − 12/24; d in S2: 1 − 8/12 (twice: a requested); a freed:
    # 1 − 8/16 (twice: d requested); d freed: 1 − 12/28; S2 released: 1 − 8/16.
    expected = [0, 0, 0, 0, 0, 100 / 3, 50, 100 / 3, 100 / 3, 50, 50, 100 * 16 / 28, 50]
    assert decoded(line.y) == pytest.approx(expected)
    assert line.yaxis == "y3" and figure.layout.yaxis3.title.text == "fragmentation (%)"
    assert line.hovertext[5] == "largest free block 8 MiB of 12 MiB free in the segments"
    since = decoded(line.customdata)
    assert since == [t - since[0] for t in since]  # ns since the first event


def test_a_trace_without_segments_has_slack_only(store: RunStore) -> None:
    run_id = store.write("trace", {"device_memory": _events()})
    figure = _figure(store, run_id)
    assert not [trace for trace in figure.data if "fragmentation" in trace.name]
    assert [trace.name for trace in figure.data if trace.name.endswith("slack")] == ["cuda:0 slack"]
    assert "yaxis3" not in figure.layout.to_plotly_json()
