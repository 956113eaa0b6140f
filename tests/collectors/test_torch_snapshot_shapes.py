"""Every allocator-snapshot shape PyTorch has written (issue 30, shapes 1 and 2), each generated with the
layout of `torch.cuda.memory._snapshot()` (dashboard.demo.torch_snapshot) and checked against PyTorch's own
reader, `torch.cuda._memory_viz`, where it runs (it needs no GPU)."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard.analysis.insights import run_insights
from dashboard.cli.insights_report import report_text
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress
from dashboard.collectors.torch_snapshot import COLLECTOR
from dashboard.demo import torch_snapshot as demo
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore

MIB = demo.MIB
NOTE = "no allocation history recorded (enable `_record_memory_history`)"
A, B = ([{"filename": f"/home/me/{name}.py", "line": 7, "name": "forward"}] for name in "ab")


def two_devices() -> dict[str, Any]:
    """cuda:0: a 4 MiB (a.py) block and a freed 6 MiB one in a 20 MiB segment, a 12 MiB block (b.py) in its own
    12 MiB segment; cuda:1: one 3 MiB block (a.py) in a 20 MiB segment."""
    first, second = demo.SnapshotBuilder(0), demo.SnapshotBuilder(1)
    first.alloc(4 * MIB, A)
    gone = first.alloc(6 * MIB, B)
    first.alloc(12 * MIB, B)
    first.free(gone)
    second.alloc(3 * MIB, A)
    return demo.snapshot_of([first, second])


def expected_end(snapshot: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """device -> (allocated, reserved) at the snapshot, counted from the segments directly."""
    found: dict[str, tuple[int, int]] = {}
    for segment in snapshot["segments"] if isinstance(snapshot, dict) else snapshot:
        device = f"cuda:{segment['device']}"
        allocated, reserved = found.get(device, (0, 0))
        found[device] = (allocated + sum(b["size"] for b in segment["blocks"] if b["state"] != "inactive"),
                         reserved + segment["total_size"])
    return found


def _write(tmp_path: Path, name: str, obj: Any) -> Path:
    path = tmp_path / name
    path.write_bytes(pickle.dumps(obj, protocol=4))
    return path


def _without_history(snapshot: dict[str, Any], shape: str) -> Any:
    bare = copy.deepcopy(snapshot)
    if shape == "no device_traces":
        del bare["device_traces"]
    elif shape == "empty device_traces":
        bare["device_traces"] = [[], []]
    elif shape == "no allocator_settings":
        del bare["device_traces"], bare["allocator_settings"]
    elif shape == "list (torch.cuda.memory_snapshot())":
        return bare["segments"]
    return bare


@pytest.mark.parametrize("shape", ["no device_traces", "empty device_traces", "no allocator_settings",
                                   "list (torch.cuda.memory_snapshot())"])
def test_a_snapshot_without_history_gives_each_devices_state(tmp_path: Path, shape: str) -> None:
    snapshot = two_devices()
    path = _write(tmp_path, "snap.pickle", _without_history(snapshot, shape))
    collected = registry.collect([path])
    assert collected.collectors == ["torch_snapshot"]
    memory = collected.tables["device_memory"].sort("device")
    assert memory.select("device", "allocated", "reserved").rows() == [
        ("cuda:0", 16 * MIB, 32 * MIB), ("cuda:1", 3 * MIB, 20 * MIB)]
    assert [(d, a, r) for d, (a, r) in sorted(expected_end(snapshot).items())] == memory.select(
        "device", "allocated", "reserved").rows()
    assert set(memory["action"]) == {"snapshot"} and not memory["relative"].any()
    assert memory.null_count().select(["device", "allocated", "reserved", "time_ns"]).sum_horizontal().item() == 0
    # a and the freed 6 MiB merged with the segment's tail; b alone; cuda:1's block and its tail
    assert collected.tables["memory_segments"].height == 5
    assert f"{path}: {NOTE}" in collected.warnings


def test_pytorchs_own_reader_agrees_on_segments_and_bytes(tmp_path: Path) -> None:
    viz = pytest.importorskip("torch.cuda._memory_viz")
    snapshot = two_devices()
    summary = viz.segsum(snapshot)  # PyTorch's check of its own accounting runs inside
    collected = registry.collect([_write(tmp_path, "snap.pickle", snapshot["segments"])])
    segments = collected.tables["memory_segments"]
    reserved = int(segments.unique("segment_addr")["segment_size"].sum())
    requested = int(segments.filter(pl.col("state") == "allocated")["requested_size"].sum())
    assert f"segments: {segments['segment_addr'].n_unique()}\n" in summary
    assert f"total_reserved: {viz.Bytes(reserved)}\n" in summary
    assert f"total_allocated: {viz.Bytes(requested)}\n" in summary  # segsum counts requested bytes


def test_history_shapes_multi_device_with_and_without_time(tmp_path: Path) -> None:
    snapshot = two_devices()
    timed = registry.collect([_write(tmp_path, "timed.pickle", snapshot)])
    memory = timed.tables["device_memory"]
    assert sorted(memory["device"].unique()) == ["cuda:0", "cuda:1"]
    ends = memory.sort("time_ns").group_by("device", maintain_order=True).last().sort("device")
    assert [(d, a, r) for d, (a, r) in sorted(expected_end(snapshot).items())] == ends.select(
        "device", "allocated", "reserved").rows()
    assert not any(NOTE in w for w in timed.warnings)
    untimed = copy.deepcopy(snapshot)
    for trace in untimed["device_traces"]:
        for entry in trace:
            del entry["time_us"]
    del untimed["allocator_settings"]
    collected = registry.collect([_write(tmp_path, "untimed.pickle", untimed)])
    again = collected.tables["device_memory"]
    assert again.height == memory.height
    assert again.filter(pl.col("device") == "cuda:0")["time_ns"].to_list()[:3] == [0, 1000, 2000]
    assert any("without `time_us`" in w for w in collected.warnings)


def test_a_device_without_trace_entries_beside_one_with_them(tmp_path: Path) -> None:
    snapshot = two_devices()
    snapshot["device_traces"][1] = []
    collected = registry.collect([_write(tmp_path, "half.pickle", snapshot)])
    memory = collected.tables["device_memory"]
    (row,) = memory.filter(pl.col("device") == "cuda:1").to_dicts()
    assert (row["action"], row["allocated"], row["reserved"]) == ("snapshot", 3 * MIB, 20 * MIB)
    assert row["time_ns"] == memory.filter(pl.col("device") == "cuda:0")["time_ns"].max()
    assert any(w.endswith(f"{NOTE} for cuda:1") for w in collected.warnings)


def test_no_history_on_the_memory_page_and_in_report(tmp_path: Path) -> None:
    path = _write(tmp_path, "list.pickle", two_devices()["segments"])
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [path], name="nohist"))
    assert any(NOTE in w for w in run.info.warnings)
    findings = {f.key: f for f in run_insights(run).findings if f.key.startswith("cuda_memory:peak")}
    peak = findings["cuda_memory:peak:0:cuda:0"]
    assert peak.title == ("cuda:0 (rank 0) holds 16 MiB allocated at the snapshot (no allocation history); "
                          "me/b.py:7 forward holds 12 MiB of it")
    assert peak.at_stake_bytes == 16 * MIB and peak.share == 16 / 32
    assert peak.evidence["history"] == NOTE and peak.evidence["reserved at the peak"] == "32 MiB"
    assert findings["cuda_memory:peak:0:cuda:1"].at_stake_bytes == 3 * MIB
    text = report_text(run, "http://host:8050")
    assert "cuda:0 (rank 0) holds 16 MiB allocated at the snapshot" in text


@pytest.mark.parametrize(("obj", "problem"), [
    ([], "an empty list of allocator segments"),
    ([1, 2, 3], "not an allocator snapshot: a pickled list"),
    ({"other": 1}, "not an allocator snapshot: a pickled dict"),
])
def test_other_pickles_are_one_clear_line(tmp_path: Path, obj: Any, problem: str) -> None:
    path = _write(tmp_path, "x.pickle", obj)
    with pytest.raises(IngestError, match=problem):
        COLLECTOR.collect([path], no_progress)
