"""Kernels, copies and ranges per pass and per step on the real Kineto samples in ../shared (CI only).

The counts were checked against a brute-force reading of the raw JSON: each
kernel's runtime call found by correlation, the ops open at the call on its
thread listed, and the pass rules of `kineto_passes` applied by hand.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis.gpu_busy import merged_intervals
from dashboard.analysis.timeline_lanes import pass_bands
from dashboard.collectors import registry
from dashboard.collectors.base import Collected
from dashboard.collectors.kineto.collector import COLLECTOR

pytestmark = pytest.mark.shared

HTA_0 = "hta_trace_filter_sampled_rank-0.json.gz"
HTA_1 = "hta_trace_filter_sampled_rank-1.json.gz"
RESNET = "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"


@functools.cache
def _collected(shared_dir: Path, *names: str) -> Collected:
    paths = [shared_dir / "samples" / "kineto" / name for name in names]
    return COLLECTOR.collect(paths, lambda fraction, message: None)


def _per_pass(frame: pl.DataFrame) -> dict[str, int]:
    return dict(frame.group_by("pass").len().iter_rows())


@pytest.mark.parametrize(("name", "kernels", "copies"), [
    # The torchrec job marks `## forward ##` / `## backward ##` / `## optimizer ##`: they decide; the next batch's
    # sparse data distribution (`## sdd_* ##`, all2all_data) and the metrics update are `other`.
    (HTA_0, {"forward": 358, "backward": 523, "optimizer": 75, "other": 198},
     {"forward": 5, "backward": 8, "optimizer": 3, "other": 34}),
    (HTA_1, {"forward": 339, "backward": 495, "optimizer": 69, "other": 201},
     {"forward": 4, "backward": 10, "optimizer": 2, "other": 34}),
    # 2021 ResNet-50: backward includes the 966 AccumulateGrad launches and ReluBackward1 on the autograd thread,
    # and the engine's own aten::add / aten::sum there (102); optimizer is SGD's per-parameter kernels.
    (RESNET, {"forward": 1680, "backward": 3228, "optimizer": 3864}, {"forward": 12, "backward": 312}),
])
def test_kernels_and_copies_per_pass(shared_dir: Path, name: str, kernels: dict, copies: dict) -> None:
    result = _collected(shared_dir, name)
    assert _per_pass(result.tables["kernels"]) == kernels
    assert _per_pass(result.tables["memcpy"]) == copies
    # every GPU event of these samples has its launch: none is unattributed, none is outside a step
    assert result.tables["kernels"]["step"].null_count() == 0


def test_resnet_kernels_per_step_and_pass(shared_dir: Path) -> None:
    kernels = _collected(shared_dir, RESNET).tables["kernels"]
    per_step = {(s, p): n for s, p, n in kernels.group_by("step", "pass").len().iter_rows()}
    assert per_step == {(step, p): n for step in range(5, 11)
                        for p, n in (("forward", 280), ("backward", 538), ("optimizer", 644))}
    # cudnn weight-gradient kernels are all backward, forward convolutions never are
    wgrad = kernels.filter(pl.col("name").str.contains("wgrad"))
    assert wgrad.height > 0 and set(wgrad["pass"].to_list()) == {"backward"}


def test_sampled_pair_per_rank_step_and_pass(shared_dir: Path) -> None:
    kernels = _collected(shared_dir, HTA_0, HTA_1).tables["kernels"]
    per_step = {key[:3]: key[3] for key in kernels.group_by("rank", "step", "pass").len().iter_rows()}
    assert per_step == {
        (0, 551, "forward"): 181, (0, 551, "backward"): 259, (0, 551, "optimizer"): 37, (0, 551, "other"): 100,
        (0, 552, "forward"): 177, (0, 552, "backward"): 264, (0, 552, "optimizer"): 38, (0, 552, "other"): 98,
        (1, 551, "forward"): 173, (1, 551, "backward"): 245, (1, 551, "optimizer"): 35, (1, 551, "other"): 99,
        (1, 552, "forward"): 166, (1, 552, "backward"): 250, (1, 552, "optimizer"): 34, (1, 552, "other"): 102,
    }
    # NCCL kernels, by the collective that launched them: the gradient all-reduce runs from AccumulateGrad
    # hooks on the autograd thread, the embedding all-to-all in the forward (one on rank 1 under a
    # backward node: All2All_Pooled_ReqBackward), the next batch's sparse data distribution outside the
    # trainer's `## forward ##` (other), the all-gather in Shampoo's step.
    nccl = kernels.filter(pl.col("name").str.starts_with("nccl"))
    assert {(op, p): n for op, p, n in nccl.group_by("op", "pass").len().iter_rows()} == {
        ("nccl:all_reduce", "backward"): 8, ("nccl:all_to_all", "forward"): 3, ("nccl:all_to_all", "other"): 4,
        ("nccl:all_to_all", "backward"): 1,
        ("nccl:_all_gather_base", "optimizer"): 4,
    }


@pytest.mark.parametrize(("name", "ranges"), [
    (HTA_0, {"forward": 1042, "backward": 1255, "optimizer": 103, "unattributed": 2}),
    (HTA_1, {"forward": 989, "backward": 1282, "optimizer": 94, "unattributed": 2}),
    (RESNET, {"forward": 10134, "backward": 8652, "optimizer": 4854, "unattributed": 6}),
])
def test_ranges_per_pass(shared_dir: Path, name: str, ranges: dict) -> None:
    table = _collected(shared_dir, name).tables["ranges"]
    assert _per_pass(table) == ranges
    steps = table.filter(pl.col("category") == "profiler_step")
    assert set(steps["pass"].to_list()) == {"unattributed"} and steps.height == ranges["unattributed"]


def test_resnet_passes_lane_bars_are_each_passs_kernel_union(shared_dir: Path) -> None:
    """The lane once drew one 653 ms backward bar over all six steps, then one envelope per pass and step; now
    the bars are where each pass's kernels ran: their union per step, so no bar covers another pass's work."""
    result = _collected(shared_dir, RESNET)
    kernels = result.tables["kernels"]
    bands = pass_bands(result.tables["ranges"], kernels)
    assert set(bands["pass"].to_list()) == {"forward", "backward", "optimizer"}
    assert bands["kernels"].sum() == kernels.height
    for (step, name), mine in kernels.group_by("step", "pass"):
        union = merged_intervals(mine.select(pl.lit(0).alias("rank"), "start_ns", "end_ns"))
        bars = bands.filter(pl.col("step") == step, pl.col("pass") == name).sort("start_ns")
        assert bars.select("start_ns", "end_ns").rows() == union.select("start_ns", "end_ns").rows()
    longest_ms = (bands["end_ns"] - bands["start_ns"]).max() / 1e6  # type: ignore[operator]
    assert longest_ms < 80  # a step lasts ~180 ms; no bar spans two


def test_torchrec_job_other_pass_bars_name_their_annotation(shared_dir: Path) -> None:
    result = _collected(shared_dir, HTA_0)
    bands = pass_bands(result.tables["ranges"], result.tables["kernels"])
    other = bands.filter(pl.col("pass") == "other")
    assert set(other["pass_annotation"].to_list()) == {
        "sdd_preprocess_splits", "recmetrics_update", "all2all_data:recat_values", "all2all_data:kjt splits",
        "sdd_wait_tensors", "all2all_data:kjt lengths"}
    assert other["kernels"].sum() == 198


def test_nsys_sample_claims_no_pass(shared_dir: Path) -> None:
    """The saxpy MPI export has no autograd or optimizer evidence: no kernel gets a pass, the lane has no band."""
    run = registry.collect([shared_dir / "samples" / "nsys" / "pipit_saxpy-mpi-cuda_nsys_perlmutter0.sqlite"])
    kernels = run.tables["kernels"]
    assert kernels.height == 5 and kernels["pass"].null_count() == 5 and kernels["step"].null_count() == 5
    assert pass_bands(run.tables["ranges"], kernels).height == 0
