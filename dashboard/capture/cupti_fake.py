"""A simulated GPU behind the CUPTI backend interface, for tests and demos.

`FakeCuptiBackend` emits record objects with the attribute names of
cupti-python's record classes (spec section 5) and integer kinds, and delivers
them through the buffer callbacks exactly as CUPTI does: it asks the
requested-callback for a buffer, then hands a list of records to the
completed-callback, either when a buffer fills or on `flush_all()`, and
optionally from a worker thread. Records are plain `SimpleNamespace` objects:
the real record classes must not be built outside CUPTI (12.8's yield garbage).

The simulation is small but honest about ordering: a launch is a RUNTIME API
call on the calling thread (named by its OS id, as CUPTI does once asked to),
and the kernel runs on its
stream no earlier than the launch ends and the stream's previous work ends.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from dashboard.capture import records
from dashboard.capture.cupti_backend import CompletedFn, RequestedFn

# Runtime / driver callback ids used by the simulation (cupti.RuntimeApiTraceCbid
# / DriverApiTraceCbid values, spec section 2).
CBID_GET_LAST_ERROR = 10
CBID_GET_DEVICE = 17
CBID_MALLOC = 20
CBID_MEMCPY = 31
CBID_MEMCPY_ASYNC = 41
CBID_MEMSET_ASYNC = 51
CBID_STREAM_SYNCHRONIZE = 131
CBID_DEVICE_SYNCHRONIZE = 165
CBID_LAUNCH_KERNEL = 211
DRIVER_CBID_LAUNCH_KERNEL = 307

_RUNTIME_NAMES = {
    CBID_GET_LAST_ERROR: "cudaGetLastError",
    CBID_GET_DEVICE: "cudaGetDevice",
    CBID_MALLOC: "cudaMalloc",
    CBID_MEMCPY: "cudaMemcpy",
    CBID_MEMCPY_ASYNC: "cudaMemcpyAsync",
    CBID_MEMSET_ASYNC: "cudaMemsetAsync",
    CBID_STREAM_SYNCHRONIZE: "cudaStreamSynchronize",
    CBID_DEVICE_SYNCHRONIZE: "cudaDeviceSynchronize",
    CBID_LAUNCH_KERNEL: "cudaLaunchKernel",
}
_DRIVER_NAMES = {DRIVER_CBID_LAUNCH_KERNEL: "cuLaunchKernel", 277: "cuMemcpyHtoDAsync"}

# ActivityMemcpyKind / ActivityMemoryKind values.
COPY_KINDS = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "HtoH": 9, "PtoP": 10}
MEMORY_KINDS = {"Pageable": 1, "Pinned": 2, "Device": 3, "Managed": 5}


class VirtualClock:
    """A deterministic clock: every reading moves time on by `tick_ns`."""

    def __init__(self, start_ns: int = 1_000_000_000, tick_ns: int = 250) -> None:
        self.now = start_ns
        self.tick_ns = tick_ns

    def __call__(self) -> int:
        self.now += self.tick_ns
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


def _ungraphed(channel_type: int) -> dict[str, int]:
    """Fields of work launched outside CUDA graphs, on a channel of the given type (1 compute, 2 copy)."""
    return {"graph_id": 0, "graph_node_id": 0, "channel_id": 0, "channel_type": channel_type}


class FakeCuptiBackend:
    """Simulated CUPTI: the backend calls a session makes, plus a tiny GPU to drive."""

    name = "fake"

    def __init__(
        self,
        clock: Callable[[], int] | None = None,
        records_per_buffer: int = 512,
        worker_thread: bool = False,
        launch_latency_ns: int = 2_000,
        api_overhead_ns: int = 3_000,
        device_id: int = 0,
        dropped: int | None = 0,
        filters_apis: bool = True,
    ) -> None:
        self._clock = clock or time.monotonic_ns
        self.records_per_buffer = records_per_buffer
        self.launch_latency_ns = launch_latency_ns
        self.api_overhead_ns = api_overhead_ns
        self.device_id = device_id
        self._dropped = dropped
        self.filters_apis = filters_apis  # False: a CUPTI without per-function control
        self.skipped_apis: set[tuple[int, int]] = set()
        self._requested: RequestedFn | None = None
        self._completed: CompletedFn | None = None
        self.enabled: set[int] = set()
        self.register_calls = 0
        self.flush_calls = 0
        self.synchronize_calls = 0
        self.buffer_sizes: list[int] = []
        self._pending: list[Any] = []
        self._lock = threading.RLock()
        self._correlation = itertools.count(1)
        self._floor = 0  # host time never goes back, and jumps forward on a blocking call
        self._stream_free: dict[int, int] = {}
        self._marker_ids = itertools.count(1)
        self._marker_stack = threading.local()
        self._queue: queue.Queue[list[Any] | None] | None = None
        self._worker: threading.Thread | None = None
        if worker_thread:
            self._queue = queue.Queue()
            self._worker = threading.Thread(target=self._deliver_loop, name="fake-cupti-worker", daemon=True)
            self._worker.start()

    # ---- the backend interface -------------------------------------------
    def register_callbacks(self, requested: RequestedFn, completed: CompletedFn) -> None:
        self.register_calls += 1
        self._requested, self._completed = requested, completed

    def unregister_callbacks(self) -> None:
        self._requested, self._completed = None, None

    def enable(self, kind: int) -> None:
        self.enabled.add(kind)

    def disable(self, kind: int) -> None:
        self.enabled.discard(kind)

    def flush_all(self) -> None:
        self.flush_calls += 1
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self._deliver(batch)
        if self._queue is not None:
            self._queue.join()

    def timestamp(self) -> int:
        with self._lock:
            now = max(self._clock(), self._floor + 1)
            self._floor = now
            return now

    def synchronize(self) -> None:
        self.synchronize_calls += 1
        self._wait_until(max(self._stream_free.values(), default=0))

    def dropped_records(self) -> int | None:
        return self._dropped

    def skip_api(self, kind: int, cbid: int) -> bool:
        if not self.filters_apis:
            return False
        self.skipped_apis.add((kind, cbid))
        return True

    def api_name(self, kind: int, cbid: int) -> str:
        names = _DRIVER_NAMES if kind == records.DRIVER else _RUNTIME_NAMES
        return names.get(cbid, f"cbid {cbid}")

    def close(self) -> None:
        """Stop the worker thread (when one was started)."""
        if self._queue is not None and self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=5)
            self._queue = None

    # ---- the simulated GPU -----------------------------------------------
    def launch_kernel(
        self,
        name: str,
        duration_ns: int,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        driver: bool = False,
    ) -> int:
        """Launch a kernel (through cuLaunchKernel when `driver`); returns its correlation id."""
        if driver:
            correlation, api_end = self._api_call(records.DRIVER, DRIVER_CBID_LAUNCH_KERNEL)
        else:
            correlation, api_end = self._api_call(records.RUNTIME, CBID_LAUNCH_KERNEL)
        start, end = self._schedule(stream, api_end, duration_ns)
        self._emit(
            records.CONCURRENT_KERNEL,
            name=name,
            **self._placed(start, end, stream, correlation),
            completed=end,
            queued=0,
            submitted=0,
            grid_id=correlation,
            grid_x=grid[0],
            grid_y=grid[1],
            grid_z=grid[2],
            block_x=block[0],
            block_y=block[1],
            block_z=block[2],
            registers_per_thread=registers,
            static_shared_memory=static_smem,
            dynamic_shared_memory=dynamic_smem,
            local_memory_per_thread=0,
            launch_type=0,
            is_device_launched=0,
            **_ungraphed(channel_type=1),
        )
        return correlation

    def memcpy(
        self,
        nbytes: int,
        copy_kind: str = "HtoD",
        src_kind: str = "Pageable",
        dst_kind: str = "Device",
        stream: int = 7,
        bandwidth_gbps: float = 12.0,
        blocking: bool = False,
    ) -> int:
        """A copy; `blocking` makes the host wait for it like cudaMemcpy."""
        cbid = CBID_MEMCPY if blocking else CBID_MEMCPY_ASYNC
        correlation, api_end = self._api_call(records.RUNTIME, cbid)
        start, end = self._schedule(stream, api_end, max(1, int(nbytes / bandwidth_gbps)))
        self._emit(
            records.MEMCPY,
            copy_kind=COPY_KINDS[copy_kind],
            src_kind=MEMORY_KINDS[src_kind],
            dst_kind=MEMORY_KINDS[dst_kind],
            bytes=nbytes,
            **self._placed(start, end, stream, correlation),
            runtime_correlation_id=correlation,
            flags_=0 if blocking else 1,
            **_ungraphed(channel_type=2),
            copy_count=1,
            is_device_launched=0,
        )
        if blocking:
            self._wait_until(end)
        return correlation

    def memset(self, nbytes: int, value: int = 0, stream: int = 7, memory_kind: str = "Device") -> int:
        correlation, api_end = self._api_call(records.RUNTIME, CBID_MEMSET_ASYNC)
        start, end = self._schedule(stream, api_end, max(1, nbytes // 200))
        self._emit(
            records.MEMSET,
            value=value,
            bytes=nbytes,
            **self._placed(start, end, stream, correlation),
            memory_kind=MEMORY_KINDS[memory_kind],
            flags_=1,
            **_ungraphed(channel_type=1),
        )
        return correlation

    def host_query(self, cbid: int = CBID_GET_DEVICE) -> None:
        """A runtime call that does no GPU work (cudaGetDevice), as PyTorch makes thousands a step."""
        self._api_call(records.RUNTIME, cbid)

    def device_synchronize(self) -> None:
        """cudaDeviceSynchronize: an API call that returns once every stream is idle."""
        start = self.timestamp()
        self._wait_until(max(self._stream_free.values(), default=start))
        self._emit_api(records.RUNTIME, CBID_DEVICE_SYNCHRONIZE, next(self._correlation), start, self.timestamp())

    def nvtx_push(self, name: str, domain: str | None = None) -> None:
        marker_id = next(self._marker_ids)
        self._markers().append((marker_id, domain))
        self._emit(records.MARKER, id=marker_id, name=name, timestamp=self.timestamp(), flags_=2, domain=domain)

    def nvtx_pop(self) -> None:
        marker_id, domain = self._markers().pop()
        # CUPTI's end record carries the id but an empty name (spec section 5).
        self._emit(records.MARKER, id=marker_id, name="", timestamp=self.timestamp(), flags_=4, domain=domain)

    def emit_raw(self, record: Any) -> None:
        """Queue an arbitrary record object (tests of the adapter's dispatch)."""
        with self._lock:
            self._pending.append(record)

    # ---- internals ---------------------------------------------------------
    def _markers(self) -> list[tuple[int, str | None]]:
        stack = getattr(self._marker_stack, "stack", None)
        if stack is None:
            stack = self._marker_stack.stack = []
        return stack

    def _wait_until(self, ns: int) -> None:
        with self._lock:
            self._floor = max(self._floor, ns)

    def _api_call(self, kind: int, cbid: int) -> tuple[int, int]:
        correlation = next(self._correlation)
        start = self.timestamp()
        self._wait_until(start + self.api_overhead_ns)
        end = self.timestamp()
        self._emit_api(kind, cbid, correlation, start, end)
        return correlation, end

    def _emit_api(self, kind: int, cbid: int, correlation: int, start: int, end: int) -> None:
        if (kind, cbid) in self.skipped_apis:
            return
        self._emit(
            kind,
            cbid=cbid,
            start=start,
            end=end,
            process_id=1,
            thread_id=threading.get_native_id(),
            correlation_id=correlation,
            return_value=0,
        )

    def _schedule(self, stream: int, ready_ns: int, duration_ns: int) -> tuple[int, int]:
        with self._lock:
            start = max(self._stream_free.get(stream, 0), ready_ns + self.launch_latency_ns)
            end = start + max(1, int(duration_ns))
            self._stream_free[stream] = end
        return start, end

    def _placed(self, start: int, end: int, stream: int, correlation: int) -> dict[str, int]:
        """The fields that place an activity record: when, on which device, stream and context, launched by whom."""
        return {"start": start, "end": end, "device_id": self.device_id, "context_id": 1, "stream_id": stream,
                "correlation_id": correlation}

    def _emit(self, kind: int, **fields: Any) -> None:
        if kind not in self.enabled:
            return
        record = SimpleNamespace(kind=kind, **fields)
        with self._lock:
            self._pending.append(record)
            if len(self._pending) < self.records_per_buffer:
                return
            batch, self._pending = self._pending, []
        self._deliver(batch)

    def _deliver(self, batch: list[Any]) -> None:
        if self._queue is not None:
            self._queue.put(batch)
        else:
            self._hand_over(batch)

    def _hand_over(self, batch: list[Any]) -> None:
        if self._requested is None or self._completed is None:
            return  # nobody registered: CUPTI would not have recorded anything
        size, _max_records = self._requested()
        self.buffer_sizes.append(size)
        self._completed(batch)

    def _deliver_loop(self) -> None:
        assert self._queue is not None
        while True:
            batch = self._queue.get()
            try:
                if batch is None:
                    return
                self._hand_over(batch)
            finally:
                self._queue.task_done()
