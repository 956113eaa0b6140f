"""Layer occurrences, box statistics and peaks on small hand-checked frames."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis import layers as la
from dashboard.analysis.gpu_peak_flops import device_name, peak_flops
from dashboard.schema import conform, empty


def module_ranges(rows: list[tuple]) -> pl.DataFrame:
    """rows: (rank, layer, pass, start_ns, end_ns, flops)."""
    frame = pl.DataFrame(rows, schema=["rank", "layer", "pass", "start_ns", "end_ns", "flops"], orient="row")
    return conform("ranges", frame.with_columns(pl.col("layer").alias("name"), pl.lit("module").alias("category")))


def kernels(rows: list[tuple]) -> pl.DataFrame:
    """rows: (rank, name, start_ns, end_ns, layer, pass, flops)."""
    frame = pl.DataFrame(rows, schema=["rank", "name", "start_ns", "end_ns", "layer", "pass", "flops"], orient="row")
    return conform("kernels", frame)


@pytest.fixture
def ranges() -> pl.DataFrame:
    # "b" first runs at 0 but "a" is listed first: model order must follow time.
    return module_ranges([
        (0, "a", "forward", 100, 110, 1e3),  # 10 ns
        (0, "a", "forward", 200, 220, 1e3),  # 20 ns
        (0, "a", "forward", 300, 330, None),  # 30 ns, FLOPs unknown
        (0, "a", "backward", 400, 440, 4e3),  # 40 ns
        (0, "b", "forward", 0, 50, None),
        (1, "a", "forward", 100, 200, 1e3),  # 100 ns on rank 1
    ]).vstack(conform("ranges", pl.DataFrame({"rank": [0], "name": ["aten::mm"], "category": ["cpu_op"],
                                              "start_ns": [0], "end_ns": [999]})))


def test_occurrences_come_from_module_ranges(ranges: pl.DataFrame) -> None:
    samples = la.layer_occurrences(ranges, empty("kernels"))
    assert samples.source == la.SOURCE_RANGES
    assert samples.occurrences.height == 6  # the cpu_op is not a layer
    assert samples.occurrences.filter(pl.col("layer") == "a").get_column("duration_ns").sort().to_list() == [
        10, 20, 30, 40, 100]


def test_stats_quartiles_mean_whiskers_and_model_order(ranges: pl.DataFrame) -> None:
    occurrences = la.select_occurrences(la.layer_occurrences(ranges, empty("kernels")).occurrences, rank=0)
    stats = la.layer_stats(occurrences)
    assert stats.select("layer", "pass").rows() == [("b", "forward"), ("a", "forward"), ("a", "backward")]
    forward = stats.filter(pl.col("layer") == "a", pl.col("pass") == "forward").row(0, named=True)
    assert forward["count"] == 3 and forward["total_ns"] == 60
    assert (forward["time_q1"], forward["time_median"], forward["time_q3"]) == (15.0, 20.0, 25.0)
    assert forward["time_mean"] == pytest.approx(20.0)
    assert (forward["time_low"], forward["time_high"]) == (10.0, 30.0)
    # Throughput over occurrences with FLOPs: 1e3 / 10 ns = 1e11 FLOP/s, 1e3 / 20 ns = 5e10.
    assert forward["rate_n"] == 2
    assert forward["rate_median"] == pytest.approx(7.5e10)
    b = stats.filter(pl.col("layer") == "b").row(0, named=True)
    assert b["rate_n"] == 0 and b["rate_median"] is None  # unknown, not 0


def test_whiskers_exclude_outliers_and_outliers_are_listed() -> None:
    durations = [10, 11, 12, 13, 14, 100]
    ranges = module_ranges([(0, "a", "forward", 1000 * i, 1000 * i + d, None) for i, d in enumerate(durations)])
    occurrences = la.layer_occurrences(ranges, empty("kernels")).occurrences
    stats = la.layer_stats(occurrences)
    row = stats.row(0, named=True)
    # q1 = 11.25, q3 = 13.75, IQR 2.5 -> fences 7.5 .. 17.5: the 100 ns sample is an outlier.
    assert (row["time_low"], row["time_high"]) == (10.0, 14.0)
    assert row["time_max"] == 100.0
    outliers = la.layer_outliers(occurrences, stats, "time")
    assert outliers.get_column("value").to_list() == [100.0]


def test_window_keeps_overlapping_occurrences_whole(ranges: pl.DataFrame) -> None:
    occurrences = la.layer_occurrences(ranges, empty("kernels")).occurrences
    chosen = la.select_occurrences(occurrences, rank=0, window=(215, 305))
    assert sorted(chosen.get_column("duration_ns").to_list()) == [20, 30]  # 200-220 and 300-330, unclipped
    assert la.select_occurrences(occurrences, rank=0, window=(220, 300)).height == 0  # touching is not overlapping


def test_kernel_fallback_sums_kernel_time_per_consecutive_run() -> None:
    frame = kernels([
        (0, "k1", 0, 10, "a", "forward", 5.0),
        (0, "k2", 15, 20, "a", "forward", None),  # same occurrence: 10 + 5 = 15 ns, gap excluded
        (0, "k3", 30, 40, "b", "forward", None),
        (0, "k1", 50, 60, "a", "forward", None),  # a new occurrence of "a"
        (0, "k4", 70, 80, "a", "backward", 2.0),
        (0, "k5", 90, 95, None, None, None),
    ])
    samples = la.layer_occurrences(empty("ranges"), frame)
    assert samples.source == la.SOURCE_KERNELS
    got = samples.occurrences.select("layer", "pass", "duration_ns", "flops").rows()
    assert got == [("a", "forward", 15, 5.0), ("b", "forward", 10, None), ("a", "forward", 10, None),
                   ("a", "backward", 10, 2.0)]
    assert la.layer_occurrences(empty("ranges"), empty("kernels")).source == ""


def test_kernel_occurrences_per_pass_optimizer_included_in_box_order() -> None:
    frame = kernels([
        (0, "k1", 0, 10, "a", "forward", None),
        (0, "k2", 20, 30, "a", "backward", None),
        (0, "k3", 40, 45, "a", "optimizer", None),  # a fused optimizer kernel attributed to the layer's params
        (0, "k4", 50, 55, "a", None, None),  # no pass known: unattributed, never dropped
    ])
    occurrences = la.layer_occurrences(empty("ranges"), frame).occurrences
    assert occurrences.select("pass", "duration_ns").rows() == [
        ("forward", 10), ("backward", 10), ("optimizer", 5), ("unattributed", 5)]
    stats = la.layer_stats(occurrences)
    assert stats.get_column("pass").to_list() == ["forward", "backward", "optimizer", "unattributed"]


def test_layer_kernels_by_attribution_or_by_time() -> None:
    frame = kernels([(0, "k1", 0, 10, "a", "forward", None), (0, "k2", 20, 30, "b", "forward", None)])
    chosen, how = la.layer_kernels(frame, pl.DataFrame(), "a", "forward")
    assert chosen.get_column("name").to_list() == ["k1"] and "attributed" in how
    unattributed = frame.with_columns(pl.lit(None, pl.String).alias("layer"))
    occurrences = la.occurrences_from_ranges(module_ranges([(0, "b", "forward", 15, 35, None)]))
    chosen, how = la.layer_kernels(unattributed, occurrences, "b", "forward")
    assert chosen.get_column("name").to_list() == ["k2"] and "start inside" in how


def test_peaks_by_device_and_dtype() -> None:
    assert peak_flops("NVIDIA H100 80GB HBM3", "bf16") == 989e12
    assert peak_flops("NVIDIA H100 PCIe", "bf16") == 756e12
    assert peak_flops("NVIDIA A100-SXM4-80GB", "tf32") == 156e12
    assert peak_flops("NVIDIA A100-SXM4-80GB", "fp8") is None  # no FP8 tensor cores: unknown, not 0
    assert peak_flops("Tesla V100-SXM2-16GB", "fp16") == 125e12
    assert peak_flops("NVIDIA GeForce RTX 4090", "bf16") == 165.2e12  # FP32 accumulate (Ada whitepaper)
    assert peak_flops("NVIDIA GeForce GTX 1080", "bf16") is None
    assert peak_flops(None, "bf16") is None


def test_device_name_from_kineto_or_nsys_metadata() -> None:
    kineto = {"kineto": {"files": [{"rank": 0, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}]}]}}
    assert device_name(kineto) == "NVIDIA H200"
    nsys = {"nsys": {"exports": [{"gpus": [{"id": 0, "name": "idle", "active": False},
                                           {"id": 1, "name": "NVIDIA B200", "active": True}]}]}}
    assert device_name(nsys) == "NVIDIA B200"
    assert device_name({"capture": {"rank": 0}}) is None


def test_run_views_cache_per_state_and_attribute_layer_kernels(tmp_path) -> None:
    from dashboard.store import RunStore
    from dashboard.views import run_views
    from tests.support.layered_run import DEVICE_METADATA, layered_tables

    store = RunStore(tmp_path / "data")
    run = store.open(store.write("views", layered_tables(steps=2), metadata=DEVICE_METADATA))
    assert run_views.kernel_ranks(run) == (0, 1)
    first = run_views.kernel_view(run, None, None, "name")
    assert run_views.kernel_view(run, None, None, "name") is first  # cached: a selection change recomputes nothing
    assert first.spread is not None and run_views.kernel_view(run, 0, None, "name").spread is None
    assert first.launches == layered_tables(steps=2)["kernels"].height
    layers = run_views.layer_view(run, None, None)
    assert layers.source == la.SOURCE_RANGES and layers.occurrences == 2 * 2 * 8
    summary, how = run_views.layer_kernel_view(run, None, None, "blocks.0.attn", "forward")
    assert summary.height == 3 and "attributed" in how
    assert run_views.layer_kernel_view(run, None, None, "no-such-layer", "forward")[0].height == 0
    run_views.clear_caches()
