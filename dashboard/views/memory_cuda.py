"""`/memory` for runs with CUDA allocator memory (Kineto `[memory]` events, allocator snapshots).

URL state: run, rank (the run's first rank by default), device (one device; all
GPUs by default), window (`<start_ns>-<end_ns>` on the run clock, the key
/timeline and /kernels use, so a window brushed on either page re-aggregates
this one and back), at (a time in ns: the live allocations there; a click on
the curves or the peak button sets it).

The page shows this view for a run with CUDA memory and no Tenstorrent memory
(`shows`); the PNG export picks it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis import cuda_fragmentation
from dashboard.analysis import cuda_memory as analysis
from dashboard.figures.memory_cuda import curves_figure
from dashboard.figures.plain import plain
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.state import ViewState, param

EVIDENCE = "cuda_memory"
# Export name of each chart -> the page's component id.
CHARTS = {"cuda-memory": "memory-cuda-curves"}


def shows(run: Run) -> bool:
    """Whether `/memory` shows this view for the run: CUDA allocator memory and no Tenstorrent memory."""
    return run.has_evidence(EVIDENCE) and not run.has_evidence("memory")


@dataclass(frozen=True)
class CudaData:
    events: pl.DataFrame  # one rank's device_memory, in time order per device
    lives: pl.DataFrame
    segments: pl.DataFrame
    devices: tuple[str, ...]
    origin_ns: int
    relative: bool
    has_kernels: bool
    layouts: dict[str, cuda_fragmentation.Layout]  # devices whose segments are known (snapshots): replayable


@per_run(4)
def run_ranks(run: Run) -> tuple[int, ...]:
    return tuple(sorted(run.frame("device_memory")["rank"].unique().to_list()))


@per_run(4)
def _cuda_data(run: Run, rank: int) -> CudaData:
    events = run.frame("device_memory").filter(pl.col("rank") == rank).sort("device", "time_ns", maintain_order=True)
    segments = run.frame("memory_segments").filter(pl.col("rank") == rank)
    devices = tuple(sorted(events["device"].unique().to_list(), key=lambda d: (d == "cpu", d)))
    origin = int(events["time_ns"].min()) if events.height else 0  # type: ignore[arg-type]
    layouts = {device: state for device in devices if segments.height and (state := cuda_fragmentation.layout(
        analysis.device_events(events, device), segments.filter(pl.col("device") == device))) is not None}
    return CudaData(events, analysis.lifetimes(events), segments, devices, origin,
                    bool(events["relative"].any()), run.has_evidence("kernels"), layouts)


def cuda_data(run: Run, rank: int | None) -> CudaData:
    """One rank of the run (None: its first)."""
    ranks = run_ranks(run)
    return _cuda_data(run, rank if rank is not None else (ranks[0] if ranks else 0))


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())  # None: the run's first rank
    device: str | None = param(params.text("device"))  # None: every GPU (the CPU only when there is no GPU)
    window: tuple[int, int] | None = param(params.window())
    at: int | None = param(params.number("at"))

    def resolved(self, run: Run) -> Self:
        rank = params.resolve_rank(self.rank, run_ranks(run))
        devices = cuda_data(run, rank).devices
        return self.replace(rank=rank, device=self.device if self.device in devices else None)


@dataclass(frozen=True)
class CudaView:
    """What the page shows for a state: per shown device its events in the window, peaks, lifetimes."""

    data: CudaData
    devices: tuple[str, ...]
    per_device: dict[str, pl.DataFrame]
    lives: pl.DataFrame  # allocations of the shown devices
    peaks: list[analysis.Peak]
    top: analysis.Peak | None  # the highest peak of the shown devices

    @property
    def events(self) -> pl.DataFrame:
        return pl.concat(list(self.per_device.values())) if self.per_device else self.data.events.clear()

    @property
    def held_before(self) -> dict[str, int]:
        """Per shown device, the bytes allocated before the profiler's first event (held_before)."""
        return {device: held for device in self.devices if (held := held_before(self.data, device))}

    def allocated_at(self, time_ns: int) -> int | None:
        """The allocator's allocated bytes at `time_ns`, summed over the shown devices (None: no totals)."""
        if self.data.relative:
            return None
        total = 0
        for device in self.devices:
            before = self.data.events.filter((pl.col("device") == device) & (pl.col("time_ns") <= time_ns))
            total += int(before["allocated"][-1]) if before.height else held_before(self.data, device)
        return total

    def fragmentation(self) -> pl.DataFrame:
        return analysis.fragmentation(self.data.segments.filter(pl.col("device").is_in(self.devices)))


def held_before(data: CudaData, device: str) -> int:
    """Bytes the device held before the profiler started: what the allocator reported allocated at its first
    event, less that event's own change. Allocations made before the trace have no event of their own, so
    the live allocations the trace lists at a time fall short of the allocator's total by about this much.
    0 for a trace without allocator totals (its curve counts from 0: what was held before is unknown)."""
    if data.relative:
        return 0
    events = data.events.filter(pl.col("device") == device)
    if events.height == 0:
        return 0
    first = events.row(0, named=True)
    return max(int(first["allocated"] or 0) - int(first["bytes_delta"] or 0), 0)


def cuda_view(run: Run, state: State) -> CudaView:
    return _shown(run, state.rank, state.device, state.window)


@per_run(8)
def _shown(run: Run, rank: int | None, device: str | None, window: tuple[int, int] | None) -> CudaView:
    """The devices a state shows, their events in its window and their peaks (shared: frames are immutable)."""
    data = cuda_data(run, rank)
    devices = (device,) if device else tuple(d for d in data.devices if d != "cpu") or data.devices
    per_device = {d: analysis.device_events(data.events, d, window) for d in devices}
    lives = data.lives.filter(pl.col("device").is_in(devices))
    peaks = [p for d in devices if (p := analysis.peak(per_device[d], lives, d)) is not None]
    top = max(peaks, key=lambda p: p.allocated) if peaks else None
    return CudaView(data, devices, per_device, lives, peaks, top)


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The page's figures as plotly figures of their own (the PNG export sizes them)."""
    return {name: go.Figure(figure) for name, figure in page_figures(run, state).items()}


@per_run(16)
def page_figures(run: Run, state: State) -> dict[str, dict[str, Any]]:
    """Allocated and reserved over time per shown device, the peak starred, the chosen time marked: plain
    dicts, as the page sends them (shared: never mutate)."""
    shown = cuda_view(run, state)
    curves = {d: analysis.curve(frame, state.window) for d, frame in shown.per_device.items()}
    # Fragmentation over time where segments are known (snapshots), sampled at the drawn points.
    fragmentation = {d: cuda_fragmentation.over_time(shown.data.layouts[d], cuda_fragmentation.sample_times(
        curves[d]["time_ns"])) for d in shown.devices if d in shown.data.layouts}
    return {"cuda-memory": plain(curves_figure(curves, shown.data.origin_ns, shown.top, state.at,
                                               shown.data.relative, state.window, fragmentation, shown.held_before))}
