"""What the real backend asks of cupti-python beyond recording (stubbed `cupti.cupti`), and what the
session does with the answers: dropped records, runtime functions left out, thread ids."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.capture import records as rec
from dashboard.capture.cupti_backend import CuptiBackend
from dashboard.capture.cupti_fake import CBID_GET_DEVICE, CBID_GET_LAST_ERROR, FakeCuptiBackend
from dashboard.capture.session import CaptureSession
from tests.capture.test_cupti import _install_stub, _StubCupti


def test_dropped_records_are_read_from_the_size_t_cupti_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = _StubCupti(dropped=1234)
    _install_stub(monkeypatch, stub)
    with CaptureSession("x", layers=False) as session:
        pass
    assert isinstance(session.backend, CuptiBackend)
    assert ("dropped", 0, 0) in stub.calls  # the global queue
    assert session.dropped == 1234
    assert any("CUPTI dropped 1234 records" in w for w in session.warnings)
    assert session.metadata()["capture"]["dropped_records"] == 1234


def test_a_dropped_count_cupti_cannot_give_is_unknown_not_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = _StubCupti()

    def broken(context: int, stream: int, address: int) -> None:
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    stub.activity_get_num_dropped_records = broken  # type: ignore[method-assign]
    _install_stub(monkeypatch, stub)
    with CaptureSession("x", layers=False) as session:
        pass
    assert session.dropped is None
    assert any("could not say whether it dropped records" in w for w in session.warnings)


def test_cupti_is_asked_to_skip_the_host_only_runtime_queries_and_to_name_threads_by_os_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub = _StubCupti()
    _install_stub(monkeypatch, stub)
    with CaptureSession("x", layers=False) as session:
        pass
    assert {c[1] for c in stub.calls if c[0] == "runtime_api" and c[2] == 0} == set(rec.SKIPPED_RUNTIME_APIS)
    assert ("thread_ids", 1) in stub.calls  # CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
    assert session.skipped_apis == {"cudaGetLastError": "cupti", "cudaSetDevice": "cupti", "cudaGetDevice": "cupti"}


def test_an_older_cupti_without_per_function_control_still_gives_no_such_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub = _StubCupti()
    monkeypatch.delattr(_StubCupti, "activity_enable_runtime_api")
    _install_stub(monkeypatch, stub)
    with CaptureSession("x", layers=False) as session:
        pass
    assert set(session.skipped_apis.values()) == {"tables"}


@pytest.mark.parametrize("filters", [True, False])
def test_host_only_queries_never_reach_the_api_calls_table(filters: bool) -> None:
    gpu = FakeCuptiBackend(filters_apis=filters)
    with CaptureSession("x", backend=gpu, layers=False) as session:
        for _ in range(5):
            gpu.host_query(CBID_GET_DEVICE)
        gpu.host_query(CBID_GET_LAST_ERROR)
        gpu.launch_kernel("_Z6kernelv", 1000)
    names = session.tables()["api_calls"].get_column("name").to_list()
    assert names == ["cudaLaunchKernel"]
    assert session.metadata()["capture"]["skipped_apis"]["cudaGetDevice"] == ("cupti" if filters else "tables")
    # Only a CUPTI that filters spares the records themselves (and their Python cost).
    assert session.sink.records == (2 if filters else 8)


def test_kernels_copies_and_ranges_get_the_step_their_launch_happened_in() -> None:
    from dashboard.capture.markers import mark

    gpu = FakeCuptiBackend()
    with CaptureSession("x", backend=gpu, layers=False) as session:
        gpu.launch_kernel("_Z6beforev", 100)
        for number in (7, 8):
            with mark(f"ProfilerStep#{number}", category="profiler_step"), mark("work"):
                gpu.launch_kernel("_Z4stepv", 100)
                gpu.memcpy(64, "HtoD", "Pinned", "Device")
    tables = session.tables()
    assert tables["kernels"].get_column("step").to_list() == [None, 7, 8]
    assert tables["memcpy"].get_column("step").to_list() == [7, 8]
    steps = dict(tables["ranges"].select("name", "step").filter(pl.col("name") != "work").iter_rows())
    assert steps == {"ProfilerStep#7": 7, "ProfilerStep#8": 8}
    assert tables["ranges"].filter(pl.col("name") == "work").get_column("step").to_list() == [7, 8]
