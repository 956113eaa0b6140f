"""Canonical kernel-side tables written event by event, for tests with hand-checked numbers.

Each kernel or copy gets its own correlation id; with `launch_end` it also
gets the API call that launched it (ending then), as a Kineto trace links
them. Times are plain integers (ns) so expected values can be worked out by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from dashboard import schema

LAUNCH_NS = 500  # how long each generated launch call lasts


@dataclass
class TraceBuilder:
    kernels: list[dict[str, Any]] = field(default_factory=list)
    copies: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    ranges: list[dict[str, Any]] = field(default_factory=list)
    correlation: int = 1000

    def _launch(self, rank: int, name: str, launch_end: int | None, launch_start: int | None = None) -> int:
        self.correlation += 1
        if launch_end is not None:
            start = launch_end - LAUNCH_NS if launch_start is None else launch_start
            self.call(rank, name, start, launch_end, correlation=self.correlation)
        return self.correlation

    def kernel(self, rank: int, start: int, end: int, name: str = "gemm", step: int | None = None,
               launch_end: int | None = None, layer: str | None = None, stream: int = 7,
               launch_start: int | None = None, op: str | None = None) -> TraceBuilder:
        correlation = self._launch(rank, "cudaLaunchKernel", launch_end, launch_start)
        self.kernels.append({"rank": rank, "device": 0, "stream": stream, "correlation": correlation, "name": name,
                             "start_ns": start, "end_ns": end, "step": step, "layer": layer, "op": op})
        return self

    def copy(self, rank: int, start: int, end: int, kind: str = "HtoD", src_kind: str = "Pinned",
             dst_kind: str = "Device", size: int = 1 << 20, call: str = "cudaMemcpyAsync", step: int | None = None,
             launch_end: int | None = None) -> TraceBuilder:
        correlation = self._launch(rank, call, launch_end)
        self.copies.append({"rank": rank, "device": 0, "stream": 7, "correlation": correlation, "kind": kind,
                            "src_kind": src_kind, "dst_kind": dst_kind, "bytes": size, "start_ns": start,
                            "end_ns": end, "step": step})
        return self

    def call(self, rank: int, name: str, start: int, end: int, correlation: int | None = None) -> TraceBuilder:
        self.calls.append({"rank": rank, "thread": 1, "name": name, "category": "cuda_runtime",
                           "correlation": correlation, "start_ns": start, "end_ns": end})
        return self

    def op(self, rank: int, name: str, start: int, end: int, category: str = "cpu_op",
           thread: int = 1) -> TraceBuilder:
        """A CPU range (an op, an annotation, a DataLoader call) on `thread` (launches are on thread 1)."""
        self.ranges.append({"rank": rank, "id": len(self.ranges), "thread": thread, "name": name,
                            "category": category, "start_ns": start, "end_ns": end, "depth": 1, "step": None})
        return self

    def step(self, rank: int, number: int, start: int, end: int) -> TraceBuilder:
        self.ranges.append({"rank": rank, "id": len(self.ranges), "thread": 1, "name": f"ProfilerStep#{number}",
                            "category": "profiler_step", "start_ns": start, "end_ns": end, "depth": 0,
                            "step": number})
        return self

    def tables(self) -> dict[str, pl.DataFrame]:
        made = {"kernels": self.kernels, "memcpy": self.copies, "api_calls": self.calls, "ranges": self.ranges}
        return {name: schema.conform(name, pl.DataFrame(rows)) if rows else schema.empty(name)
                for name, rows in made.items()}
