"""The demo trace pair through the Kineto collector, against the generator's own counts
and against counts taken straight from the raw JSON."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import Collected
from dashboard.collectors.kineto.collector import COLLECTOR
from dashboard.demo import kineto_trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Collected]:
    paths = kineto_trace.write(tmp_path_factory.mktemp("kineto_demo"))
    return paths, COLLECTOR.collect(paths, lambda fraction, message: None)


def _raw(path: Path) -> dict:
    with gzip.open(path) as handle:
        return json.load(handle)


def test_demo_is_deterministic_and_two_ranks(tmp_path: Path) -> None:
    first = kineto_trace.write(tmp_path / "a")
    second = kineto_trace.write(tmp_path / "b")
    assert [p.name for p in first] == ["tinygpt_rank0.pt.trace.json.gz", "tinygpt_rank1.pt.trace.json.gz"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert [_raw(p)["distributedInfo"]["rank"] for p in first] == [0, 1]


@pytest.mark.parametrize("rank", [0, 1])
def test_counts_and_totals_match_the_generator(demo, rank: int) -> None:
    _, result = demo
    truth = kineto_trace.build_trace(rank)[1]
    kernels = result.tables["kernels"].filter(pl.col("rank") == rank)
    assert kernels.height == truth.kernels and 300 <= truth.kernels <= 3000
    assert (kernels["end_ns"] - kernels["start_ns"]).sum() == truth.kernel_ns
    assert kernels["stream"].unique().sort().to_list() == [kineto_trace.COMPUTE_STREAM, kineto_trace.NCCL_STREAM]
    assert kernels["device"].unique().to_list() == [rank]  # local device index = GPU pid
    copies = result.tables["memcpy"].filter(pl.col("rank") == rank)
    assert Counter(copies["kind"].to_list()) == truth.memcpy
    assert copies["bytes"].sum() == truth.memcpy_bytes
    assert result.tables["api_calls"].filter(pl.col("rank") == rank).height == truth.api_calls
    ranges = result.tables["ranges"].filter(pl.col("rank") == rank)
    assert Counter(ranges["category"].to_list()) == truth.ranges


@pytest.mark.parametrize("rank", [0, 1])
def test_pass_layer_and_flops_match_the_generator(demo, rank: int) -> None:
    _, result = demo
    truth = kineto_trace.build_trace(rank)[1]
    kernels = result.tables["kernels"].filter(pl.col("rank") == rank)
    assert Counter(kernels["pass"].to_list()) == truth.kernels_by_pass
    assert Counter(zip(kernels["layer"].to_list(), kernels["pass"].to_list(), strict=True)) == truth.kernels_by_layer
    for pass_, flops in truth.flops_by_pass.items():
        got = kernels.filter(pl.col("pass") == pass_)["flops"].sum()
        assert got == pytest.approx(flops, rel=1e-9), pass_
    assert kernels["op"].null_count() == 0


def test_hand_checked_flops_of_one_linear_layer(demo) -> None:
    _, result = demo
    ranges = result.tables["ranges"].filter(pl.col("rank") == 0)
    qkv = ranges.filter(
        (pl.col("name") == "aten::addmm") & (pl.col("layer") == "Linear_0") & (pl.col("pass") == "forward")
    )
    tokens, dim = kineto_trace.BATCH * kineto_trace.SEQ, kineto_trace.DIM
    assert qkv["flops"].to_list() == [2.0 * tokens * dim * 3 * dim] * kineto_trace.STEPS  # 51.5 GFLOP each
    attention = ranges.filter(pl.col("name") == "aten::scaled_dot_product_attention")["flops"].unique().to_list()
    b, h, s, d = kineto_trace.BATCH, kineto_trace.HEADS, kineto_trace.SEQ, dim // kineto_trace.HEADS
    assert attention == [2.0 * b * h * s * s * d * 2]  # q·kᵀ and scores·v


@pytest.mark.parametrize("rank", [0, 1])
def test_against_counts_from_the_raw_json(demo, rank: int) -> None:
    paths, result = demo
    events = _raw(paths[rank])["traceEvents"]
    raw_kernels = [e for e in events if e.get("cat") == "kernel"]
    kernels = result.tables["kernels"].filter(pl.col("rank") == rank)
    assert kernels.height == len(raw_kernels)
    assert (kernels["end_ns"] - kernels["start_ns"]).sum() == sum(round(e["dur"] * 1000) for e in raw_kernels)
    # Independent pass rule: kernels launched from the autograd thread are the backward pass.
    runtime_tid = {e["args"]["correlation"]: e["tid"] for e in events if e.get("cat") == "cuda_runtime"}
    autograd = {e["tid"] for e in events if e.get("name", "").startswith("autograd::engine::evaluate_function")}
    backward = sum(runtime_tid[e["args"]["correlation"]] in autograd for e in raw_kernels)
    assert kernels.filter(pl.col("pass") == "backward").height == backward
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    ranges = result.tables["ranges"].filter((pl.col("rank") == rank) & (pl.col("category") == "profiler_step"))
    assert sorted(ranges["name"].to_list()) == sorted(e["name"] for e in steps)
    base = _raw(paths[rank])["baseTimeNanoseconds"]
    assert sorted(ranges["start_ns"].to_list()) == sorted(base + round(e["ts"] * 1000) for e in steps)


def test_ranges_form_trees_per_rank(demo) -> None:
    _, result = demo
    ranges = result.tables["ranges"]
    assert ranges.select(pl.struct("rank", "id").is_unique().all()).item()
    parents = ranges.join(
        ranges.select("rank", pl.col("id").alias("parent"), pl.col("depth").alias("parent_depth"),
                      pl.col("start_ns").alias("p_start"), pl.col("end_ns").alias("p_end")),
        on=["rank", "parent"],
        how="inner",
    )
    assert parents.height == ranges["parent"].drop_nulls().len()
    assert (parents["depth"] == parents["parent_depth"] + 1).all()
    assert ((parents["p_start"] <= parents["start_ns"]) & (parents["end_ns"] <= parents["p_end"])).all()
    assert ranges.filter(pl.col("category") == "gpu_user_annotation")["device"].sort().to_list() == [0, 0, 0, 1, 1, 1]


def test_demo_folder_goes_through_the_registry(demo) -> None:
    paths, _ = demo
    run = registry.collect([paths[0].parent])
    assert run.collectors == ["kineto"]
    assert set(run.tables) == {"kernels", "memcpy", "ranges", "api_calls", "device_memory"}
    assert run.tables["kernels"]["rank"].unique().sort().to_list() == [0, 1]
    # `[memory]` instants are read (device_memory): nothing is ignored.
    assert run.warnings == []
