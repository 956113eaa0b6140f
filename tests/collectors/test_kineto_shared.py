"""Real Kineto traces from ../shared/samples, checked against sums taken straight from the raw JSON."""

from __future__ import annotations

import functools
import gzip
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.base import Collected
from dashboard.collectors.kineto.collector import COLLECTOR

pytestmark = pytest.mark.shared

SAMPLES = (
    "hta_trace_filter_sampled_rank-0.json.gz",
    "hta_trace_filter_sampled_rank-1.json.gz",
    "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz",
)
GPU_COPY = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}


def _sample(shared_dir: Path, name: str) -> Path:
    return shared_dir / "samples" / "kineto" / name


@functools.cache
def _collected(*paths: Path) -> Collected:
    return COLLECTOR.collect(list(paths), lambda fraction, message: None)


@functools.cache
def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path) as handle:
        return [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.parametrize("name", SAMPLES)
def test_kernel_and_copy_totals_equal_the_raw_json(shared_dir: Path, name: str) -> None:
    path = _sample(shared_dir, name)
    raw = _raw_events(path)
    raw_kernels = [e for e in raw if e.get("cat") in ("kernel", "Kernel")]
    raw_copies = [e for e in raw if e.get("cat") in GPU_COPY]
    result = _collected(path)
    kernels, copies = result.tables["kernels"], result.tables["memcpy"]
    assert kernels.height == len(raw_kernels)
    assert (kernels["end_ns"] - kernels["start_ns"]).sum() == sum(round(e["dur"] * 1000) for e in raw_kernels)
    assert kernels["start_ns"].min() == min(round(e["ts"] * 1000) for e in raw_kernels)
    assert copies.height == len(raw_copies)
    assert copies["bytes"].sum() == sum(e["args"]["bytes"] for e in raw_copies)
    assert Counter(copies["kind"].to_list())["Memset"] == sum(e["cat"] in ("gpu_memset", "Memset") for e in raw_copies)
    raw_runtime = [e for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")]
    assert result.tables["api_calls"].height == len(raw_runtime)
    # Every GPU event in these samples has a launching op (spec §6).
    assert kernels["op"].null_count() == 0 and copies["op"].null_count() == 0
    # Only the census of ignored instants (exact texts: test_ingest_warnings_shared.py).
    assert [w for w in result.warnings if not w.endswith("(not intervals)")] == []


@pytest.mark.parametrize("name", SAMPLES)
def test_ranges_and_steps_equal_the_raw_json(shared_dir: Path, name: str) -> None:
    path = _sample(shared_dir, name)
    raw = _raw_events(path)
    raw_ops = [e for e in raw if e.get("cat") in ("cpu_op", "Operator", "user_annotation")]
    raw_steps = sorted(e["name"] for e in raw_ops if e["name"].startswith("ProfilerStep#"))
    ranges = _collected(path).tables["ranges"]
    assert ranges.height == len(raw_ops)
    assert sorted(ranges.filter(pl.col("category") == "profiler_step")["name"].to_list()) == raw_steps
    assert set(ranges["pass"].unique().to_list()) == {"forward", "backward", "optimizer", "unattributed"}
    steps = ranges.filter(pl.col("category") == "profiler_step")
    assert steps["depth"].to_list() == [0] * len(raw_steps)


def test_sampled_pair_is_two_ranks_on_one_clock(shared_dir: Path) -> None:
    paths = [_sample(shared_dir, name) for name in SAMPLES[:2]]
    result = _collected(*paths)
    kernels = result.tables["kernels"]
    per_rank = dict(kernels.group_by("rank").len().iter_rows())
    assert per_rank == {0: len([e for e in _raw_events(paths[0]) if e.get("cat") == "kernel"]),
                        1: len([e for e in _raw_events(paths[1]) if e.get("cat") == "kernel"])}
    assert dict(kernels.group_by("rank").agg(pl.col("device").first()).iter_rows()) == {0: 0, 1: 1}
    assert result.metadata["distributedInfo"]["1"]["world_size"] == 128
    steps = result.tables["ranges"].filter(pl.col("category") == "profiler_step")
    assert sorted(steps.select("rank", "name").rows()) == [
        (0, "ProfilerStep#551"), (0, "ProfilerStep#552"), (1, "ProfilerStep#551"), (1, "ProfilerStep#552")
    ]


def test_legacy_sample_device_properties_and_backward_kernels(shared_dir: Path) -> None:
    path = _sample(shared_dir, SAMPLES[2])
    result = _collected(path)
    assert result.metadata["deviceProperties"]["0"][0]["name"] == "Tesla V100-DGXS-32GB"
    kernels = result.tables["kernels"]
    # cudnn backward kernels are launched under autograd nodes: never forward.
    wgrad = kernels.filter(pl.col("name").str.contains("wgrad"))
    assert wgrad.height > 0 and wgrad["pass"].unique().to_list() == ["backward"]
