"""A tinygrad profile on the pages every run has: /kernels' table with GFLOP/s and GB/s, the timeline's kernel
hover with both rates, /memory's peak and the buffers live at it (a generated pair: no tinygrad needed)."""

from __future__ import annotations

import json

import plotly.io as pio
import polars as pl
import pytest

from dashboard.analysis import cuda_memory
from dashboard.demo.tinygrad_generated import demo_pair
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import Run, RunStore
from dashboard.views import kernels as kernels_view
from dashboard.views import memory_cuda
from dashboard.views import timeline as timeline_view


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, object]:
    root = tmp_path_factory.mktemp("tinygrad-pages")
    builder = demo_pair()
    folder = root / "sources"
    folder.mkdir()
    rewrites, profile = builder.files()
    (folder / "rewrites.pkl").write_bytes(rewrites)
    (folder / "profile.pkl").write_bytes(profile)
    store = RunStore(root / "data")
    return store.open(ingest_paths(store, [folder], name="tinygrad")), builder.counts


def test_the_kernel_table_has_each_kernels_achieved_gflops_and_gbs(built: tuple[Run, object]) -> None:
    run, _ = built
    rows, columns = kernels_view.table(run, kernels_view.State.from_query({}, run))
    assert {"GFLOP/s", "GB/s"} <= {column.get("headerName") for column in columns}
    kernels = run.frame("kernels").filter(pl.col("flops").is_not_null())
    for row in rows:
        launches = kernels.filter(pl.col("name") == row["group"])
        if launches.height:
            duration = (launches["end_ns"] - launches["start_ns"]).sum()
            assert row["gflop_s"] == pytest.approx(launches["flops"].sum() / duration, rel=1e-3)
            assert row["gbyte_s"] == pytest.approx(launches["bytes"].sum() / duration, rel=1e-3)


def test_the_timeline_hover_of_a_kernel_gives_flops_and_bytes_per_second(built: tuple[Run, object]) -> None:
    run, _ = built
    state = timeline_view.State.from_query({}, run)
    figure = timeline_view.figures(run, state)["timeline"]
    data = json.loads(pio.to_json(figure))["data"]
    hovers = [trace.get("hovertemplate", "") for trace in data]
    assert any("FLOP/s" in hover and "B/s (estimated bytes moved)" in hover for hover in hovers)


def test_memory_has_each_devices_peak_and_the_buffers_live_at_it(built: tuple[Run, object]) -> None:
    run, counts = built
    assert memory_cuda.shows(run)
    shown = memory_cuda.cuda_view(run, memory_cuda.State.from_query({}, run))
    peaks = {peak.device: peak.allocated for peak in shown.peaks}
    assert peaks == dict(counts.peak)  # type: ignore[attr-defined]
    for peak in shown.peaks:
        live = cuda_memory.live_at(shown.lives.filter(pl.col("device") == peak.device), peak.time_ns)
        assert live["size"].sum() == peak.allocated and live.height >= 1
