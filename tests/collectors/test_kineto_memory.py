"""Kineto `[memory]` instants become `device_memory`: curves, devices, enclosing ops, legacy and modern."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.collectors.test_kineto_parsing import MAIN, PID, collect, launch, write, x

LEGACY = "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"


def mem(ts: float, nbytes: int, device_type: int = 1, device: int = 0, addr: int | None = None, tid: Any = MAIN,
        cat: str | None = "cpu_instant_event", **totals: int) -> dict:
    args: dict[str, Any] = {"Device Type": device_type, "Device Id": device, "Bytes": nbytes}
    if addr is not None:
        args["Addr"] = addr
    args.update({"Total Allocated": totals["allocated"], "Total Reserved": totals["reserved"]} if totals else {})
    event = {"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": tid, "ts": ts, "args": args}
    if cat is not None:
        event["cat"] = cat
    return event


def test_legacy_bytes_give_a_relative_running_sum_per_device_with_the_enclosing_op(tmp_path: Path) -> None:
    events = [
        x("cpu_op", "aten::conv2d", 100, 50, **{"External id": 1}),
        x("cpu_op", "aten::empty", 105, 10, **{"External id": 2}),
        *launch(120, 7, 130, 5, ext=1),
        mem(107, 1000, addr=0x10, cat=None),  # inside aten::empty inside aten::conv2d
        mem(125, 500, addr=0x20, cat=None),  # inside aten::conv2d only
        mem(126, 64, device_type=0, device=-1, cat=None),  # CPU memory
        mem(200, -1000, addr=0x10, cat=None),  # outside any op
        mem(210, 300, device=1, addr=0x30, cat=None),  # a second GPU counts from 0
        mem(211, 7, tid=MAIN + 5, cat=None),  # another thread: aten::conv2d does not enclose it
    ]
    table = collect(write(tmp_path / "legacy.json", events)).tables["device_memory"]
    cuda0 = table.filter(pl.col("device") == "cuda:0")
    assert cuda0["bytes_delta"].to_list() == [1000, 500, -1000, 7]
    assert cuda0["allocated"].to_list() == [1000, 1500, 500, 507]
    assert cuda0["op"].to_list() == ["aten::empty", "aten::conv2d", None, None]
    assert cuda0["action"].to_list() == ["alloc", "alloc", "free", "alloc"]
    assert cuda0["relative"].all() and cuda0["reserved"].null_count() == cuda0.height
    assert cuda0["time_ns"].to_list() == [107_000, 125_000, 200_000, 211_000]
    assert table.filter(pl.col("device") == "cuda:1")["allocated"].to_list() == [300]
    assert table.filter(pl.col("device") == "cpu")["allocated"].to_list() == [64]


def test_modern_totals_are_taken_as_given_not_summed(tmp_path: Path) -> None:
    # The allocator held 4,096 bytes before the profiler started: the totals say so, a running sum could not.
    events = [
        x("cpu_op", "aten::mm", 100, 50, **{"External id": 1}),
        *launch(110, 7, 130, 5, ext=1),
        mem(105, 512, addr=0x100, allocated=4608, reserved=2_097_152),
        mem(140, 1024, addr=0x200, allocated=5632, reserved=2_097_152),
        mem(160, -512, addr=0x100, allocated=5120, reserved=2_097_152),
    ]
    table = collect(write(tmp_path / "modern.json", events)).tables["device_memory"]
    assert table["allocated"].to_list() == [4608, 5632, 5120]
    assert table["reserved"].to_list() == [2_097_152] * 3
    assert not table["relative"].any()
    assert table["addr"].to_list() == [0x100, 0x200, 0x100]
    assert table["op"].to_list() == ["aten::mm", "aten::mm", None]


def test_events_without_bytes_are_refused_and_counted(tmp_path: Path) -> None:
    broken = {"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": MAIN, "ts": 3, "args": {"Device Type": 1}}
    path = write(tmp_path / "t.json", [*launch(1, 1, 5, 2), mem(2, 64), broken])
    result = collect(path)
    assert result.tables["device_memory"].height == 1
    assert f"{path}: skipped 1 [memory] events without `Bytes`" in result.warnings


@pytest.mark.shared
def test_legacy_sample_relative_peak_is_the_max_running_sum_of_bytes(shared_dir: Path) -> None:
    path = shared_dir / "samples" / "kineto" / LEGACY
    with gzip.open(path, "rt") as handle:
        raw = json.load(handle)["traceEvents"]
    # Independently: the running sum of `Bytes` per CUDA device, in file order within equal timestamps.
    running: dict[int, int] = defaultdict(int)
    peaks: dict[int, int] = defaultdict(int)
    memory = [e for e in raw if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    for event in sorted(memory, key=lambda e: e["ts"]):
        device = event["args"]["Device Id"]
        running[device] += event["args"]["Bytes"]
        peaks[device] = max(peaks[device], running[device])
    table = collect(path).tables["device_memory"]
    cuda = table.filter(pl.col("device").str.starts_with("cuda:"))
    assert cuda.height == len(memory) == 8220
    assert cuda["relative"].all()
    found = dict(cuda.group_by("device").agg(pl.col("allocated").max()).iter_rows())
    assert found == {f"cuda:{device}": peak for device, peak in peaks.items()}
