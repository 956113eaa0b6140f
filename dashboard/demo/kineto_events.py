"""The event writer behind the demo Kineto trace: ops, modules, runtime calls, kernels, copies, flows.

`TraceWriter` appends events in Kineto's shapes and keeps per-thread and per-stream
clocks; `TraceTruth` counts what was written while it is written, so tests
compare the collector against the generator, not against itself. What the
model runs lives in `kineto_trace`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

COMPUTE_STREAM, NCCL_STREAM = 7, 20


@dataclass
class TraceTruth:
    """What one file holds, counted as it is written."""

    rank: int
    kernels: int = 0
    kernel_ns: int = 0
    memcpy: Counter[str] = field(default_factory=Counter)  # kind -> count (memsets as "Memset")
    memcpy_bytes: int = 0
    api_calls: int = 0
    ranges: Counter[str] = field(default_factory=Counter)  # category -> count
    kernels_by_pass: Counter[str] = field(default_factory=Counter)
    kernels_by_layer: Counter[tuple[str | None, str]] = field(default_factory=Counter)  # (layer, pass)
    flops_by_pass: Counter[str] = field(default_factory=Counter)  # FLOPs of ops that launch kernels
    memory_events: int = 0  # `[memory]` instants (profile_memory=True), the one in the metadata included
    memory_peak: int = 0  # highest `Total Allocated` written


@dataclass
class BackwardNode:
    """A forward op whose backward node the autograd thread runs later."""

    name: str
    sequence: int
    forward_ts: float
    layer: str | None
    inner: list[tuple[str, list[list[int]], list[tuple[str, float]], float]]


class TraceWriter:
    """Appends one rank's events with per-thread and per-stream clocks, counting them in `truth`."""

    def __init__(self, rank: int, slowdown: dict[str, float] | None = None) -> None:
        self.rank = rank
        # Per kernel name, a factor on its duration: an earlier version of the same job (the history demo).
        self.slowdown = slowdown or {}
        self.rng = random.Random(1000 + rank)
        self.pid = 4100 + rank
        self.main, self.autograd = self.pid, self.pid + 9
        self.device = rank
        self.events: list[dict[str, Any]] = []
        self.truth = TraceTruth(rank)
        self.clock = {self.main: 1000.0, self.autograd: 1000.0}
        self.gpu = {COMPUTE_STREAM: 1000.0, NCCL_STREAM: 1000.0}
        self.ids = Counter[str]()
        self.ops: dict[int, list[int]] = {self.main: [], self.autograd: []}
        self.layers: list[str] = []
        self.phase = "forward"
        self.nodes: list[BackwardNode] = []
        self.node_layer: str | None = None  # while a backward node runs: its forward op's layer
        # CUDA caching-allocator state for `[memory]` instants: live (addr, bytes) of this step.
        self.allocated, self.reserved, self.next_addr = 65536, 2 * 1024 * 1024, 0x7F00_0000_0000
        self.live: list[tuple[int, int]] = []

    def next(self, kind: str) -> int:
        self.ids[kind] += 1
        return self.ids[kind] + {"ext": 0, "corr": 100_000, "seq": 5_000, "py": 0, "flow": 0}[kind]

    def advance(self, tid: int, low: float, high: float) -> float:
        self.clock[tid] += self.rng.uniform(low, high)
        return round(self.clock[tid], 3)

    def _x(self, cat: str, name: str, pid: Any, tid: Any, ts: float, dur: float, args: dict[str, Any]) -> dict:
        event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": round(dur, 3)}
        event["args"] = args
        self.events.append(event)
        return event

    def _flow(self, cat: str, flow_id: int, start: tuple[Any, Any, float], end: tuple[Any, Any, float]) -> None:
        for ph, (pid, tid, ts) in (("s", start), ("f", end)):
            event = {"ph": ph, "id": flow_id, "pid": pid, "tid": tid, "ts": ts, "cat": cat, "name": cat}
            self.events.append({**event, "bp": "e"} if ph == "f" else event)

    @contextmanager
    def op(self, tid: int, name: str, cat: str = "cpu_op", dims: list[list[int]] | None = None,
           sequence: int | None = None, backward: bool = False) -> Iterator[dict[str, Any]]:
        ext = self.next("ext")
        args: dict[str, Any] = {"External id": ext, "Ev Idx": ext - 1}
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = ["c10::BFloat16" if d else "" for d in dims]
        if sequence is not None:
            args["Fwd thread id"] = 1 if backward else 0
            args["Sequence number"] = sequence
        event = self._x(cat, name, self.pid, tid, self.advance(tid, 0.8, 2.5), 0.0, args)
        self.ops[tid].append(ext)
        yield event
        self.ops[tid].pop()
        event["dur"] = round(self.advance(tid, 0.4, 1.2) - event["ts"], 3)
        self.truth.ranges["profiler_step" if name.startswith("ProfilerStep#") else cat] += 1

    @contextmanager
    def module(self, name: str) -> Iterator[None]:
        """An `nn.Module: X` Python frame (with_stack) on the main thread."""
        event = self._x("python_function", f"nn.Module: {name}", self.pid, self.main,
                        self.advance(self.main, 0.5, 1.5), 0.0, {"Python id": self.next("py"), "Python parent id": 0})
        self.layers.append(name)
        yield
        self.layers.pop()
        event["dur"] = round(self.advance(self.main, 0.3, 1.0) - event["ts"], 3)
        self.truth.ranges["python_function"] += 1

    def _runtime(self, tid: int, name: str, cbid: int) -> tuple[float, int]:
        correlation = self.next("corr")
        ts = self.advance(tid, 1.0, 3.0)
        dur = self.rng.uniform(3.0, 7.0)
        args = {"External id": self.ops[tid][-1], "cbid": cbid, "correlation": correlation}
        self._x("cuda_runtime", name, self.pid, tid, ts, dur, args)
        self.clock[tid] = ts + dur
        self.truth.api_calls += 1
        return ts, correlation

    def _gpu(self, tid: int, stream: int, cat: str, name: str, micros: float, api: str, cbid: int,
             args: dict[str, Any]) -> float:
        ts, correlation = self._runtime(tid, api, cbid)
        start = round(max(ts + self.rng.uniform(4.0, 9.0), self.gpu[stream] + self.rng.uniform(0.5, 2.0)), 3)
        dur = round(micros * self.rng.uniform(0.92, 1.12), 3)
        self._x(cat, name, self.device, stream, start, dur,
                {"External id": self.ops[tid][-1], "device": self.device, "context": 1, "stream": stream,
                 "correlation": correlation, **args})
        self._flow("ac2g", correlation, (self.pid, tid, ts), (self.device, stream, start))
        self.gpu[stream] = start + dur
        return round(dur * 1000)

    def launch(self, tid: int, name: str, micros: float, stream: int = COMPUTE_STREAM, flops: float = 0.0) -> None:
        micros *= self.slowdown.get(name, 1.0)
        ns = self._gpu(tid, stream, "kernel", name, micros, "cudaLaunchKernel", 211, {
            "registers per thread": 128, "shared memory": 49152, "blocks per SM": 1.2, "warps per SM": 4.8,
            "grid": [self.rng.choice((64, 128, 256)), 4, 1], "block": [256, 1, 1], "est. achieved occupancy %": 25})
        self.truth.kernels += 1
        self.truth.kernel_ns += ns
        self.truth.kernels_by_pass[self.phase] += 1
        self.truth.flops_by_pass[self.phase] += flops
        layer = self.node_layer if self.phase == "backward" else (self.layers[-1] if self.layers else None)
        self.truth.kernels_by_layer[(layer, self.phase)] += 1
        if self.phase == "forward" and stream == COMPUTE_STREAM:  # each forward kernel's output stays alive
            self.memory(tid, self.rng.choice((1, 2, 4)) * 1024 * 1024)

    def memory(self, tid: int, nbytes: int, addr: int | None = None) -> None:
        """One `[memory]` instant on `tid`: an allocation (a new address) or, with `addr`, its free."""
        if addr is None:
            addr, self.next_addr = self.next_addr, self.next_addr + nbytes
            self.live.append((addr, nbytes))
        self.allocated += nbytes
        block = 20 * 1024 * 1024  # the allocator reserves in whole segments and keeps them
        self.reserved = max(self.reserved, -(-self.allocated // block) * block)
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": self.pid,
                            "tid": tid, "ts": self.advance(tid, 0.05, 0.2), "args": {
                                "Device Type": 1, "Device Id": self.device, "Addr": addr, "Bytes": nbytes,
                                "Total Allocated": self.allocated, "Total Reserved": self.reserved}})
        self.truth.memory_events += 1
        self.truth.memory_peak = max(self.truth.memory_peak, self.allocated)

    def free_all(self, tid: int) -> None:
        """Free this step's activations, last allocated first."""
        while self.live:
            addr, nbytes = self.live.pop()
            self.memory(tid, -nbytes, addr)

    def launch_all(self, tid: int, kernels: list[tuple[str, float]], flops: float) -> None:
        for kernel, micros in kernels:
            self.launch(tid, kernel, micros, flops=flops / len(kernels))

    def copy(self, tid: int, kind: str, src: str, dst: str, nbytes: int, gbps: float) -> None:
        name = f"Memcpy {kind} ({src} -> {dst})"
        self._gpu(tid, COMPUTE_STREAM, "gpu_memcpy", name, nbytes / gbps / 1e3, "cudaMemcpyAsync", 41,
                  {"bytes": nbytes, "memory bandwidth (GB/s)": gbps})
        self.truth.memcpy[kind] += 1
        self.truth.memcpy_bytes += nbytes

    def memset(self, tid: int, nbytes: int) -> None:
        self._gpu(tid, COMPUTE_STREAM, "gpu_memset", "Memset (Device)", 1.0 + nbytes / 1.2e6, "cudaMemsetAsync", 51,
                  {"bytes": nbytes, "memory bandwidth (GB/s)": 1200.0})
        self.truth.memcpy["Memset"] += 1
        self.truth.memcpy_bytes += nbytes

    def sync(self, tid: int) -> None:
        self._runtime(tid, "cudaStreamSynchronize", 131)
        self.clock[tid] = max(self.clock[tid], self.gpu[COMPUTE_STREAM], self.gpu[NCCL_STREAM]) + 2.0
