"""Live capture end to end on the fake CUPTI backend (the real adapter code path)."""

from __future__ import annotations

import ctypes
import sys
import threading
import types
from types import SimpleNamespace

import polars as pl
import pytest

from dashboard.capture import records as rec
from dashboard.capture.cupti_backend import _ROUTER, CuptiBackend, probe
from dashboard.capture.cupti_fake import FakeCuptiBackend, VirtualClock
from dashboard.capture.markers import mark
from dashboard.capture.session import CaptureError, CaptureSession, CaptureUnavailable, active_session
from dashboard.store import RunStore

VEC_ADD = "_Z6vecAddPKfS0_Pfi"


def _session(gpu: FakeCuptiBackend, **kwargs) -> CaptureSession:
    return CaptureSession("test", backend=gpu, layers=False, **kwargs)


def test_kernels_copies_memsets_and_api_calls_land_in_canonical_tables() -> None:
    gpu = FakeCuptiBackend(clock=VirtualClock())
    with _session(gpu) as session:
        gpu.memcpy(4096, "HtoD", "Pinned", "Device")
        gpu.launch_kernel(
            VEC_ADD, 10_000, grid=(4, 2, 1), block=(256, 1, 1), registers=40, static_smem=1024, dynamic_smem=2048
        )
        gpu.memset(1 << 20, memory_kind="Device")
        gpu.memcpy(8, "DtoH", "Device", "Pageable", blocking=True)
    tables = session.tables()
    kernels, memcpy, api = tables["kernels"], tables["memcpy"], tables["api_calls"]

    assert kernels.height == 1
    kernel = kernels.row(0, named=True)
    assert kernel["name"] == "vecAdd(float const*, float const*, float*, int)"  # demangled
    assert (kernel["grid_x"], kernel["grid_y"], kernel["block_x"]) == (4, 2, 256)
    assert kernel["registers"] == 40 and kernel["shared_memory"] == 3072
    assert kernel["end_ns"] - kernel["start_ns"] == 10_000

    assert memcpy.get_column("kind").to_list() == ["HtoD", "Memset", "DtoH"]
    assert memcpy.get_column("bytes").to_list() == [4096, 1 << 20, 8]
    assert memcpy.row(0, named=True)["src_kind"] == "Pinned"
    assert memcpy.row(1, named=True)["dst_kind"] == "Device"
    assert memcpy.row(2, named=True)["dst_kind"] == "Pageable"

    assert api.get_column("name").to_list() == ["cudaMemcpyAsync", "cudaLaunchKernel", "cudaMemsetAsync", "cudaMemcpy"]
    assert set(api.get_column("category")) == {"cuda_runtime"}
    # Every GPU activity joins its launching API call by correlation id.
    gpu_side = pl.concat([kernels.select("correlation"), memcpy.select("correlation")])
    joined = gpu_side.join(api, on="correlation", how="inner")
    assert joined.height == 4
    # A kernel never starts before the call that launched it ends.
    launch = api.filter(pl.col("name") == "cudaLaunchKernel").row(0, named=True)
    assert kernel["start_ns"] >= launch["end_ns"]
    assert kernel["correlation"] == launch["correlation"]


def test_driver_api_calls_are_recorded_when_asked_for() -> None:
    gpu = FakeCuptiBackend()
    with _session(gpu, driver_api=True) as session:
        gpu.launch_kernel(VEC_ADD, 100, driver=True)
    api = session.tables()["api_calls"]
    assert api.select("name", "category").rows() == [("cuLaunchKernel", "cuda_driver")]
    assert rec.DRIVER in session.enabled_kinds
    with _session(FakeCuptiBackend()) as without:
        without.backend.launch_kernel(VEC_ADD, 100, driver=True)
    assert "api_calls" not in without.tables()  # DRIVER not enabled by default


def test_records_wait_in_the_buffer_until_the_flush_on_exit() -> None:
    gpu = FakeCuptiBackend(records_per_buffer=10_000)
    with _session(gpu) as session:
        for _ in range(5):
            gpu.launch_kernel(VEC_ADD, 1000)
        assert session.sink.records == 0  # nothing delivered yet: the buffer is not full
    assert gpu.flush_calls == 1
    assert session.sink.records == 10  # 5 runtime calls + 5 kernels
    assert session.tables()["kernels"].height == 5
    assert gpu.enabled == set()  # every kind disabled again


def test_full_buffers_are_delivered_through_the_requested_and_completed_callbacks() -> None:
    gpu = FakeCuptiBackend(records_per_buffer=8)
    with _session(gpu) as session:
        for _ in range(20):
            gpu.launch_kernel(VEC_ADD, 1000)
        assert session.sink.buffers_completed == 5  # 40 records / 8 while running
    assert gpu.buffer_sizes and set(gpu.buffer_sizes) == {rec.BUFFER_BYTES}
    assert session.tables()["kernels"].height == 20


def test_delivery_from_a_cupti_worker_thread() -> None:
    gpu = FakeCuptiBackend(records_per_buffer=4, worker_thread=True)
    try:
        with _session(gpu) as session:
            for _ in range(50):
                gpu.launch_kernel(VEC_ADD, 100)
    finally:
        gpu.close()
    assert session.tables()["kernels"].height == 50


def test_records_are_dispatched_by_integer_kind_not_class() -> None:
    sink = rec.RecordSink()

    class ActivityKernel99:  # a "kernel" class name holding a memcpy record
        def __init__(self) -> None:
            self.kind = rec.MEMCPY
            self.copy_kind, self.src_kind, self.dst_kind = 2, 3, 2
            self.bytes, self.start, self.end = 64, 100, 200
            self.device_id, self.stream_id, self.correlation_id = 0, 7, 9

    class Kind(int):  # cupti enums are int subclasses
        pass

    sink.buffer_completed(
        [
            ActivityKernel99(),
            SimpleNamespace(kind=Kind(rec.CONCURRENT_KERNEL), name="k", start=1, end=5, correlation_id=3),
            SimpleNamespace(kind=99, start=1, end=2),  # a kind the adapter does not read
            SimpleNamespace(kind=rec.RUNTIME, cbid=211, start=0, end=0, correlation_id=4, thread_id=1),
        ]
    )
    frames = sink.frames()
    assert frames[rec.MEMCPY].get_column("bytes").to_list() == [64]
    kernel = frames[rec.CONCURRENT_KERNEL].row(0, named=True)
    assert kernel["name"] == "k" and kernel["grid_x"] is None  # a field this class lacks is null
    assert sink.ignored_kinds == {99: 1}
    tables = _tables_from(frames)
    assert tables["memcpy"].row(0, named=True)["kind"] == "DtoH"
    assert tables["api_calls"].height == 0  # start == end == 0: no timing, dropped


def _tables_from(frames: dict[int, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    from dashboard.capture.ranges import RangeRecorder
    from dashboard.capture.tables import build_tables

    return build_tables(frames, RangeRecorder(lambda: 0).frame(), 0, lambda kind, cbid: f"cbid {cbid}")


def test_unknown_copy_kinds_stay_visible_and_names_as_bytes_are_decoded() -> None:
    sink = rec.RecordSink()
    sink.buffer_completed(
        [
            SimpleNamespace(
                kind=rec.MEMCPY,
                copy_kind=12,
                src_kind=9,
                dst_kind=3,
                bytes=1,
                start=1,
                end=2,
                device_id=0,
                stream_id=1,
                correlation_id=1,
            ),
            SimpleNamespace(kind=rec.CONCURRENT_KERNEL, name=b"_Z3fooi", start=1, end=2, correlation_id=2),
        ]
    )
    tables = _tables_from(sink.frames())
    copy = tables["memcpy"].row(0, named=True)
    assert (copy["kind"], copy["src_kind"]) == ("kind 12", "memory kind 9")
    assert tables["kernels"].row(0, named=True)["name"] == "foo(int)"


def test_kernels_are_attributed_to_the_mark_they_were_launched_in() -> None:
    gpu = FakeCuptiBackend()
    with _session(gpu) as session:
        gpu.launch_kernel("outside", 100)
        with mark("optimizer"):
            gpu.launch_kernel("inside", 100)
            with mark("inner"):
                gpu.memset(64)
        gpu.launch_kernel("after", 100)
    tables = session.tables()
    ops = dict(tables["kernels"].select("name", "op").iter_rows())
    assert ops == {"outside": None, "inside": "optimizer", "after": None}
    assert tables["memcpy"].row(0, named=True)["op"] == "inner"
    ranges = tables["ranges"].sort("depth")
    assert ranges.get_column("name").to_list() == ["optimizer", "inner"]
    assert ranges.get_column("category").to_list() == ["marker", "marker"]
    assert ranges.row(1, named=True)["parent"] == ranges.row(0, named=True)["id"]
    assert ranges.get_column("pass").to_list() == ["unattributed", "unattributed"]


def test_a_stale_external_id_does_not_attribute_work_after_its_range() -> None:
    gpu = FakeCuptiBackend()
    with _session(gpu) as session:
        assert session.ranges is not None
        range_id = session.ranges.open("layer", "module", "forward", layer="layer")
        gpu.launch_kernel("in_layer", 100)
        # Closed from another thread: this thread's CUPTI stack keeps the id for now.
        closer = threading.Thread(target=session.ranges.close, args=(range_id,))
        closer.start()
        closer.join()
        gpu.launch_kernel("after_layer", 100)
    layers = dict(session.tables()["kernels"].select("name", "layer").iter_rows())
    assert layers == {"in_layer": "layer", "after_layer": None}


def test_nvtx_marker_records_become_ranges_and_own_marks_are_not_doubled() -> None:
    gpu = FakeCuptiBackend()
    with _session(gpu) as session:
        gpu.nvtx_push("data loading")
        gpu.nvtx_push("decode", domain="io")
        gpu.nvtx_pop()
        gpu.nvtx_pop()
        gpu.nvtx_push("a dashboard.mark", domain="dashboard")
        gpu.nvtx_pop()
    ranges = session.tables()["ranges"].filter(pl.col("category") == "nvtx").sort("start_ns")
    assert ranges.get_column("name").to_list() == ["data loading", "io: decode"]
    assert (ranges.get_column("end_ns") > ranges.get_column("start_ns")).all()


def test_one_capture_owner_per_process() -> None:
    first = _session(FakeCuptiBackend())
    with first:
        assert active_session() is first
        with pytest.raises(CaptureError, match="another capture session"), _session(FakeCuptiBackend()):
            pass
    assert active_session() is None
    with _session(FakeCuptiBackend()) as again:  # free again once the first has stopped
        assert active_session() is again
    with pytest.raises(CaptureError, match="records once"):
        first.start()


def test_refuses_to_start_under_torch_profiler(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_torch = types.ModuleType("torch")
    fake_torch.autograd = SimpleNamespace(_profiler_enabled=lambda: True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    with pytest.raises(CaptureError, match=r"torch\.profiler"):
        _session(FakeCuptiBackend()).start()
    assert active_session() is None


def test_no_cupti_package_means_capture_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti -> ImportError
    with pytest.raises(CaptureUnavailable) as raised:
        CaptureSession("x", layers=False).start()
    assert str(raised.value).startswith("CUPTI unavailable: cupti-python is not installed")
    assert active_session() is None  # ownership released after the failed start
    assert probe() is not None


class _StubCupti:
    """Stands in for `cupti.cupti` to check the calls the real backend makes."""

    class RuntimeApiTraceCbid(int):
        @property
        def name(self) -> str:
            return {211: "cudaLaunchKernel_v7000"}[int(self)]

        def __new__(cls, value: int):
            if value != 211:
                raise ValueError(value)
            return int.__new__(cls, value)

    DriverApiTraceCbid = RuntimeApiTraceCbid

    def __init__(self, fail_enable: int | None = None, driver_error: str | None = None, dropped: int = 0) -> None:
        self.calls: list[tuple] = []
        self.fail_enable = fail_enable
        self.driver_error = driver_error
        self.dropped = dropped

    def get_timestamp(self) -> int:
        if self.driver_error:
            raise RuntimeError(self.driver_error)
        self.calls.append(("get_timestamp",))
        return 123

    def activity_register_callbacks(self, requested, completed) -> None:
        self.calls.append(("register", requested, completed))

    def activity_enable(self, kind: int) -> None:
        if kind == self.fail_enable:
            raise RuntimeError("CUPTI_ERROR_NOT_SUPPORTED")
        self.calls.append(("enable", kind))

    def activity_disable(self, kind: int) -> None:
        self.calls.append(("disable", kind))

    def activity_flush_all(self, flag: int) -> None:
        self.calls.append(("flush", flag))

    def activity_get_num_dropped_records(self, context: int, stream: int, address: int) -> None:
        self.calls.append(("dropped", context, stream))
        ctypes.c_size_t.from_address(address).value = self.dropped  # as CUPTI writes its size_t*

    def activity_enable_runtime_api(self, cbid: int, enable: int) -> None:
        self.calls.append(("runtime_api", cbid, enable))

    def set_thread_id_type(self, kind: int) -> None:
        self.calls.append(("thread_ids", kind))

    def activity_push_external_correlation_id(self, kind: int, ident: int) -> None:
        self.calls.append(("push", kind, ident))

    def activity_pop_external_correlation_id(self, kind: int) -> int:
        self.calls.append(("pop", kind))
        return 0


def _install_stub(monkeypatch: pytest.MonkeyPatch, stub: _StubCupti) -> None:
    package = types.ModuleType("cupti")
    package.cupti = stub  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)
    monkeypatch.setattr(_ROUTER, "registered", False)
    monkeypatch.setenv("NVTX_INJECTION64_PATH", "/already/set")


def test_real_backend_registers_one_callback_pair_for_all_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = _StubCupti()
    _install_stub(monkeypatch, stub)
    for _ in range(2):
        with CaptureSession("x", layers=False) as session, mark("m"):
            pass
        assert isinstance(session.backend, CuptiBackend)
    registrations = [c for c in stub.calls if c[0] == "register"]
    assert len(registrations) == 1  # the original code's double registration lost records
    enabled = [c[1] for c in stub.calls if c[0] == "enable"]
    assert {rec.CONCURRENT_KERNEL, rec.MEMCPY, rec.MEMSET, rec.RUNTIME} <= set(enabled)
    assert rec.EXTERNAL_CORRELATION not in enabled  # attribution is by thread and time (issue 32)
    assert ("flush", 1) in stub.calls  # FLUSH_FORCED
    assert not [c for c in stub.calls if c[0] in ("push", "pop")]  # no CUPTI call per range
    # The one registered pair forwards to whichever session is current.
    _name, requested, completed = registrations[0]
    with CaptureSession("third", layers=False) as third:
        assert requested() == (rec.BUFFER_BYTES, 0)
        completed([SimpleNamespace(kind=rec.CONCURRENT_KERNEL, name="late", start=5, end=9, correlation_id=1)])
    assert third.tables()["kernels"].get_column("name").to_list() == ["late"]
    assert len([c for c in stub.calls if c[0] == "register"]) == 1
    assert session.backend.api_name(rec.RUNTIME, 211) == "cudaLaunchKernel"
    assert session.backend.api_name(rec.RUNTIME, 5) == "cbid 5"


class _StubCupti130:
    """cupti-python 13.0.x, which torch's CUDA 13.0 libcupti pairs with: the cbid enums in lower case only."""

    runtime_api_trace_cbid = driver_api_trace_cbid = _StubCupti.RuntimeApiTraceCbid

    def __init__(self) -> None:
        self._stub = _StubCupti()

    def __getattr__(self, name: str):
        if name in ("RuntimeApiTraceCbid", "DriverApiTraceCbid"):
            raise AttributeError(name)
        return getattr(self._stub, name)


@pytest.mark.parametrize("stub", [_StubCupti, _StubCupti130])
def test_api_names_with_each_spelling_of_the_cbid_enums(monkeypatch: pytest.MonkeyPatch, stub: type) -> None:
    _install_stub(monkeypatch, stub())
    with CaptureSession("x", layers=False) as session:
        pass
    assert session.backend.api_name(rec.RUNTIME, 211) == "cudaLaunchKernel"
    assert session.backend.api_name(rec.DRIVER, 211) == "cudaLaunchKernel"
    assert session.backend.api_name(rec.RUNTIME, 5) == "cbid 5"


def test_api_names_without_a_cbid_enum_stay_numbers() -> None:
    backend = CuptiBackend.__new__(CuptiBackend)  # a release with no spelling known here: never an error
    backend._cupti = types.SimpleNamespace()
    assert backend.api_name(rec.RUNTIME, 211) == "cbid 211"


def test_real_backend_without_a_driver_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    _install_stub(monkeypatch, _StubCupti(driver_error="CUDA driver is not found (libcuda.so.1)"))
    with pytest.raises(CaptureUnavailable, match=r"^CUPTI unavailable: CUDA driver is not found"):
        CaptureSession("x", layers=False).start()
    assert active_session() is None


def test_a_required_kind_that_cannot_be_enabled_aborts_an_optional_one_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install_stub(monkeypatch, _StubCupti(fail_enable=rec.CONCURRENT_KERNEL))
    with pytest.raises(CaptureUnavailable, match="activity_enable"):
        CaptureSession("x", layers=False).start()
    assert active_session() is None

    _install_stub(monkeypatch, _StubCupti(fail_enable=rec.MARKER))
    with CaptureSession("x", layers=False) as session:
        pass
    assert any("MARKER not recorded" in w for w in session.warnings)


def test_dropped_records_are_reported() -> None:
    with _session(FakeCuptiBackend(dropped=17)) as session:
        pass
    assert any("dropped 17 records" in w for w in session.warnings)


def test_session_writes_a_run_through_the_store(tmp_path) -> None:
    gpu = FakeCuptiBackend()
    with CaptureSession("live", tmp_path / "data", backend=gpu, layers=False) as session:
        gpu.launch_kernel(VEC_ADD, 100)
        gpu.memcpy(16)
    assert session.run_id is not None
    run = RunStore(tmp_path / "data").open(session.run_id)
    assert run.info.collectors == ["cupti"]
    assert run.has_evidence("kernels")
    assert run.frame("kernels").height == 1 and run.frame("memcpy").height == 1
    assert run.info.metadata["capture"]["backend"] == "fake"


def test_decorator_captures_each_call_as_its_own_run(tmp_path) -> None:
    gpu = FakeCuptiBackend()
    capture = CaptureSession("decorated", tmp_path / "data", backend=gpu, layers=False)

    @capture
    def step(n: int) -> int:
        for _ in range(n):
            gpu.launch_kernel(VEC_ADD, 100)
        return n * 2

    assert step(2) == 4
    assert step(3) == 6
    assert len(capture.run_ids) == 2 and capture.run_ids[0] != capture.run_ids[1]
    store = RunStore(tmp_path / "data")
    assert [store.open(r).frame("kernels").height for r in capture.run_ids] == [2, 3]


def test_ranges_still_open_at_stop_end_there() -> None:
    gpu = FakeCuptiBackend()
    session = _session(gpu).start()
    marker = mark("never closed")
    marker.__enter__()
    session.stop()
    ranges = session.tables()["ranges"]
    assert ranges.height == 1 and ranges.row(0, named=True)["end_ns"] <= session.stopped_ns
    assert any("still open" in w for w in session.warnings)
    marker.__exit__(None, None, None)  # closing it late is harmless


def test_mark_outside_a_session_is_a_no_op() -> None:
    with mark("nothing"):
        pass

    @mark("decorated")
    def twice(x: int) -> int:
        return 2 * x

    assert twice(3) == 6


def test_ranges_nest_per_thread_and_a_range_opened_beneath_takes_the_open_ones_as_children() -> None:
    from dashboard.capture.ranges import RangeRecorder

    ranges = RangeRecorder(VirtualClock())
    a = ranges.open("a", "marker")
    b = ranges.open("b", "module", "backward", layer="b")
    parent = ranges.open("parent", "module", "backward", layer="p", under=1)  # goes beneath b
    opened = {r.id: r for r in ranges.open_stack()}
    assert [r.id for r in ranges.open_stack()] == [a, parent, b]
    assert (opened[parent].depth, opened[b].depth, opened[b].parent) == (1, 2, parent)
    assert opened[parent].start_ns <= opened[b].start_ns
    assert ranges.close(parent)  # not the innermost
    worker = threading.Thread(target=ranges.close, args=(a,))  # closed from another thread
    worker.start()
    worker.join()
    assert [r.id for r in ranges.open_stack()] == [b]
    c = ranges.open("c", "marker")
    assert ranges.close_all() == 2
    assert ranges.open_stack() == [] and not ranges.close(c)
    frame = ranges.frame()
    assert frame.height == 4 and frame.filter(pl.col("name") == "c").row(0, named=True)["pass"] == "backward"
    assert frame.get_column("thread").unique().to_list() == [threading.get_native_id()]  # the owner's, always


def test_a_call_belongs_to_the_innermost_range_of_its_own_thread() -> None:
    gpu = FakeCuptiBackend()
    with _session(gpu) as session:
        assert session.ranges is not None
        outer = session.ranges.open("outer", "marker")

        def elsewhere() -> None:  # another thread's work inside outer's time is not outer's
            gpu.launch_kernel("other_thread", 100)

        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
        inner = session.ranges.open("inner", "marker")
        gpu.launch_kernel("in_inner", 100)
        session.ranges.close(inner)
        gpu.launch_kernel("in_outer", 100)
        session.ranges.close(outer)
    ops = dict(session.tables()["kernels"].select("name", "op").iter_rows())
    assert ops == {"other_thread": None, "in_inner": "inner", "in_outer": "outer"}
