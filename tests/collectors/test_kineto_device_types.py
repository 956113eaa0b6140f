"""Kineto `[memory]` events of every device type PyTorch writes (issue 30, shape 3): named as PyTorch names
them, in views, findings and compare. A ROCm build writes `Device Type` 6 (c10's HIP) for its GPUs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis.compare_cuda_memory import cuda_memory_section
from dashboard.analysis.insights import run_insights
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views import memory_cuda
from tests.collectors.test_kineto_memory import mem
from tests.collectors.test_kineto_parsing import collect, launch, write, x

GB = 10**9


def _trace(tmp_path: Path, name: str, device_type: int, peak: int, capacity: int) -> Path:
    """One op allocating up to `peak` bytes on device 0 of `device_type`, 4 KiB of host memory beside it."""
    events = [
        x("cpu_op", "aten::empty", 100, 50, **{"External id": 1}),
        *launch(110, 7, 130, 5, ext=1),
        mem(105, peak - GB, device_type=device_type, addr=0x100, allocated=peak - GB, reserved=peak),
        mem(120, GB, device_type=device_type, addr=0x200, allocated=peak, reserved=peak),
        mem(121, 4096, device_type=0, device=-1, addr=0x300, allocated=4096, reserved=4096),
        mem(200, -GB, device_type=device_type, addr=0x200, allocated=peak - GB, reserved=peak),
    ]
    properties = [{"id": 0, "name": "GPU", "totalGlobalMem": capacity}]
    return write(tmp_path / name, events, deviceProperties=properties)


@pytest.mark.parametrize(("device_type", "device", "vendor"), [
    (1, "cuda:0", None), (6, "cuda:0", "AMD HIP"), (12, "xpu:0", "Intel XPU"), (19, "mtia:0", "Meta MTIA"),
])
def test_devices_are_named_as_pytorch_names_them(tmp_path: Path, device_type: int, device: str,
                                                  vendor: str | None) -> None:
    collected = collect(_trace(tmp_path, "t.json", device_type, 5 * GB, 8 * GB))
    table = collected.tables["device_memory"]
    assert sorted(table["device"].unique()) == ["cpu", device]
    assert table.filter(pl.col("device") == device)["allocated"].to_list() == [4 * GB, 5 * GB, 4 * GB]
    vendors = collected.metadata.get("device_vendors", {})
    assert (vendors[device].startswith(vendor) if vendor else device not in vendors)


def test_a_rocm_trace_gets_its_peak_finding_view_and_compare(tmp_path: Path) -> None:
    # The vLLM-on-MI300X shape: 191.6 GB allocated of a 206 GB device, events of Device Type 6.
    store = RunStore(tmp_path / "data")
    peak, capacity = 191_600_000_000, 206_000_000_000
    run = store.open(ingest_paths(store, [_trace(tmp_path, "mi300x.json", 6, peak, capacity)], name="rocm"))
    (finding,) = [f for f in run_insights(run).findings if f.key.startswith("cuda_memory:peak")]
    assert finding.key == "cuda_memory:peak:0:cuda:0"
    assert finding.at_stake_bytes == peak and finding.share == pytest.approx(peak / capacity)
    assert finding.title.startswith("cuda:0 (rank 0) peaks at 178 GiB allocated (93.0% of its memory)")
    assert finding.evidence["device"].startswith("cuda:0: AMD HIP (ROCm build")
    # /memory shows the GPU (the host's events aside), its peak on top.
    view = memory_cuda.cuda_view(run, memory_cuda.State().resolved(run))
    assert view.devices == ("cuda:0",) and view.top is not None and view.top.allocated == peak
    # Compare faces it with a CUDA run's cuda:0.
    other = store.open(ingest_paths(store, [_trace(tmp_path, "h100.json", 1, 70 * GB, 80 * GB)], name="cuda"))
    (row,) = cuda_memory_section(other, run, None, None)["devices"]
    assert (row["device"], row["peak_allocated_a"], row["peak_allocated_b"]) == ("cuda:0", 70 * GB, peak)


def test_an_xpu_peak_is_a_finding_too(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [_trace(tmp_path, "xpu.json", 12, 3 * GB, 16 * GB)]))
    keys = [f.key for f in run_insights(run).findings if f.key.startswith("cuda_memory:peak")]
    assert keys == ["cuda_memory:peak:0:xpu:0"]
