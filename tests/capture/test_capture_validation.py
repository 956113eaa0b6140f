"""A live capture goes through the same rules as an ingested file: impossible rows are dropped and counted."""

from __future__ import annotations

from pathlib import Path

from dashboard.capture import records as rec
from dashboard.capture.cupti_fake import FakeCuptiBackend
from dashboard.capture.session import CaptureSession
from dashboard.store import RunStore


class _KernelRecord:
    """A record class of its own: the sink reads each record class with its own field list."""

    def __init__(self, start: int, end: int) -> None:
        self.kind, self.name, self.start, self.end = rec.CONCURRENT_KERNEL, "broken", start, end
        self.correlation_id, self.device_id, self.stream_id = 77, 0, 7


def test_a_kernel_record_ending_before_it_starts_is_dropped_and_reported(tmp_path: Path) -> None:
    gpu = FakeCuptiBackend()
    with CaptureSession("live", tmp_path / "data", backend=gpu, layers=False) as session:
        gpu.launch_kernel("_Z6vecAddPKfS0_Pfi", 100)
        start = gpu.timestamp()
        gpu.emit_raw(_KernelRecord(start + 500, start))
    run = RunStore(tmp_path / "data").open(session.run_id)
    assert run.frame("kernels").height == 1 and "broken" not in run.frame("kernels")["name"].to_list()
    assert "capture live: 1 kernel ends before it starts; dropped" in run.info.warnings
