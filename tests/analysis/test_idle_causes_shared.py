"""CI-only: idle time by cause on the shared Kineto samples, exactly as the independent raw-JSON sweep gives it.

The numbers below are what benchmarks/idle_sweep.py printed (plain Python over the trace's JSON events, no
collector, no polars); the test checks the dashboard against them, and the sweep against them too.
TensorBoard's profiler plugin gives DataLoader 69 ms of a 188 ms step on this ResNet-50 (num_workers=0)
sample's twin: its verdict, data loading, is the largest cause here.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from benchmarks.idle_sweep import attribute
from dashboard.analysis.insights import run_insights
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore

RESNET = "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"
# file -> cause -> idle ns (benchmarks/idle_sweep.py)
SWEEP = {
    RESNET: {"data loading": 283_707_000, "synchronisation": 2_608_000, "launch-bound": 93_902_000,
             "CPU-bound": 2_865_000, "communication wait": 0, "outside steps": 0, "unknown": 9_837_000},
    "hta_trace_filter_sampled_rank-0.json.gz": {
        "data loading": 3_807_000, "synchronisation": 1_172_000, "launch-bound": 71_265_000,
        "CPU-bound": 206_628_000, "communication wait": 427_000, "outside steps": 49_000, "unknown": 391_843_000},
    "hta_trace_filter_sampled_rank-1.json.gz": {
        "data loading": 11_269_000, "synchronisation": 1_238_000, "launch-bound": 90_334_000,
        "CPU-bound": 218_316_000, "communication wait": 521_000, "outside steps": 50_000, "unknown": 329_408_000},
}
IDLE = {RESNET: 392_919_000, "hta_trace_filter_sampled_rank-0.json.gz": 675_191_000,
        "hta_trace_filter_sampled_rank-1.json.gz": 651_136_000}


def _ours(store: RunStore, paths: list[Path]) -> pl.DataFrame:
    return run_insights(store.open(ingest_paths(store, paths))).idle_causes


@pytest.mark.shared
def test_resnet_idle_is_mostly_data_loading_to_the_ns(shared_dir: Path, tmp_path: Path) -> None:
    path = shared_dir / "samples" / "kineto" / RESNET
    causes = dict(_ours(RunStore(tmp_path / "data"), [path]).select("cause", "idle_ns").rows())
    assert causes == SWEEP[RESNET]
    assert max(causes, key=causes.__getitem__) == "data loading"
    assert sum(causes.values()) == IDLE[RESNET]


@pytest.mark.shared
def test_hta_ranks_idle_causes_to_the_ns(shared_dir: Path, tmp_path: Path) -> None:
    folder = shared_dir / "samples" / "kineto"
    names = ["hta_trace_filter_sampled_rank-0.json.gz", "hta_trace_filter_sampled_rank-1.json.gz"]
    causes = _ours(RunStore(tmp_path / "data"), [folder / name for name in names])
    for rank, name in enumerate(names):
        mine = dict(causes.filter(pl.col("rank") == rank).select("cause", "idle_ns").rows())
        assert mine == SWEEP[name] and sum(mine.values()) == IDLE[name]


@pytest.mark.shared
def test_the_independent_sweep_still_gives_these_numbers(shared_dir: Path) -> None:
    for name, expected in SWEEP.items():
        found = attribute(shared_dir / "samples" / "kineto" / name)
        assert {cause: found[cause] for cause in expected} == expected and found["idle"] == IDLE[name]
