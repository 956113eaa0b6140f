"""CUDA memory findings: each device's peak with its culprit, fragmentation at the peak, on hand-computed runs."""

from __future__ import annotations

import pickle
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import cuda_findings
from dashboard.analysis.insights import run_insights
from dashboard.cli.insights_report import report_text
from dashboard.demo import torch_snapshot as demo
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.analysis.test_cuda_memory import _events

MIB = demo.MIB
ORIGIN_NS = demo.SnapshotBuilder().time_us * 1000
A, B, D = ([{"filename": f"/home/me/{name}.py", "line": 3, "name": "forward"}] for name in "abd")


def fragmented_snapshot() -> dict:
    """S1 (20 MiB) holds a, b, c (4 MiB each); b is freed; d (12 MiB, own 12 MiB segment S2) is allocated: the peak,
    20 MiB live (a 4 + c 4 from a.py, d 12 from d.py), 32 MiB reserved, free = b's hole 4 + S1's tail 8."""
    builder = demo.SnapshotBuilder()
    a = builder.alloc(4 * MIB, A)
    b = builder.alloc(4 * MIB, B)
    builder.alloc(4 * MIB, A)
    builder.free(b)
    d = builder.alloc(12 * MIB, D)  # entry 7, 24 µs after the origin
    builder.free(a)
    builder.free(d)
    builder.empty_cache()
    return demo.snapshot_of([builder])


def test_a_snapshot_peak_names_its_frame_and_its_fragmentation(tmp_path: Path) -> None:
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(fragmented_snapshot()))
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [path], name="frag"))
    found = {f.key: f for f in run_insights(run).findings if f.key.startswith("cuda_memory:")}
    assert set(found) == {"cuda_memory:peak:0:cuda:0", "cuda_memory:fragmentation:0:cuda:0"}
    peak = found["cuda_memory:peak:0:cuda:0"]
    assert peak.title == "cuda:0 (rank 0) peaks at 20 MiB allocated; me/d.py:3 forward holds 12 MiB of it"
    assert (peak.at_stake_bytes, peak.share) == (20 * MIB, 20 / 32)  # no device memory known: of reserved
    assert peak.share_of == "cuda:0 (rank 0) reserved at the peak (32 MiB)"
    assert peak.evidence["culprit's live bytes at the peak"] == "12 MiB (60.0% of the peak)"
    assert peak.evidence["at"] == "21 µs after the device's first memory event"  # entries 3 µs apart, from entry 0
    at = ORIGIN_NS + 24_000
    assert peak.url == f"/memory?run={run.id}&rank=0&device=cuda%3A0&at={at}"
    fragmented = found["cuda_memory:fragmentation:0:cuda:0"]
    assert fragmented.title == ("cuda:0 (rank 0) is 33% fragmented at its peak: 4 MiB free outside the largest "
                                "free block")
    assert (fragmented.at_stake_bytes, fragmented.share) == (4 * MIB, 4 / 32)
    assert fragmented.evidence["largest free block"] == "8 MiB" and fragmented.url == peak.url
    text = report_text(run, "http://host:8050")
    assert f"view: http://host:8050/memory?run={run.id}&rank=0&device=cuda%3A0&at={at}" in text


def test_a_trace_peak_with_the_device_memory_from_its_properties() -> None:
    events = _events()  # allocated 100, 400 (aten::mm +300 at 20 ns), 300, 350, 50; reserved 1000
    metadata = {"kineto": {"deviceProperties": {"0": [{"id": 0, "name": "GPU", "totalGlobalMem": 1600}]}}}
    (peak,) = cuda_findings.cuda_memory_findings("k1", events, pl.DataFrame(), metadata)
    assert peak.title == "cuda:0 (rank 0) peaks at 400 B allocated (25.0% of its memory); aten::mm holds 300 B of it"
    assert (peak.share, peak.share_of) == (0.25, "cuda:0 (rank 0) memory (1.56 KiB)")
    assert peak.evidence["allocated ÷ reserved at the peak"] == "40.0%"
    assert peak.url == "/memory?run=k1&rank=0&device=cuda%3A0&at=20"


def test_a_trace_without_totals_has_a_peak_but_no_share() -> None:
    events = _events().with_columns(pl.lit(True).alias("relative"), pl.lit(None, pl.Int64).alias("reserved"))
    (peak,) = cuda_findings.cuda_memory_findings("k1", events, pl.DataFrame(), {})
    assert peak.share == 0.0 and "unknown" in peak.share_of
    assert peak.evidence["peak allocated"].startswith("400 B (counted from 0 at the trace start")


def test_one_free_block_at_the_peak_is_no_fragmentation_finding(tmp_path: Path) -> None:
    builder = demo.SnapshotBuilder()
    builder.alloc(4 * MIB, A)
    builder.alloc(4 * MIB, B)
    path = tmp_path / "tidy.pickle"
    path.write_bytes(pickle.dumps(demo.snapshot_of([builder])))
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [path]))
    (peak,) = cuda_findings.device_peaks(run.frame("device_memory"), run.frame("memory_segments"))
    assert (peak.allocated, peak.free, peak.largest_free, peak.fragmentation) == (8 * MIB, 12 * MIB, 12 * MIB, 0.0)
    assert [f.key for f in run_insights(run).findings] == ["cuda_memory:peak:0:cuda:0"]


@pytest.mark.parametrize("metadata, expected", [
    ({"kineto": {"deviceProperties": {"1": [{"id": 0, "totalGlobalMem": 8}, {"id": 1, "totalGlobalMem": 9}]}}},
     {(1, "cuda:0"): 8, (1, "cuda:1"): 9}),
    ({"torch_snapshot": {"files": []}}, {}),
    ({"kineto": {"deviceProperties": {"0": [{"name": "no id"}]}}}, {}),
])
def test_device_capacities_from_kineto_device_properties(metadata: dict, expected: dict) -> None:
    assert cuda_findings.device_capacities(metadata) == expected
