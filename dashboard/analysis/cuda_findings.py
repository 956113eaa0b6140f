"""Findings about CUDA allocator memory (`device_memory`, `memory_segments`): each device's peak and its
culprit, and fragmentation at that peak.

- peak: one finding per CUDA device and rank: the highest `allocated` (the
  first event reaching it), the op (snapshots: the Python frame) whose live
  allocations hold the most bytes there (`cuda_memory.peak`), reserved at
  that moment, and the device's capacity when the trace names it (Kineto
  `deviceProperties.totalGlobalMem`). Its share is of the capacity when
  known, else of the reserved bytes at the peak (what the allocator held
  from the device then), else none (a trace without totals).
- fragmentation at the peak: where segments are known (snapshots), 1 −
  largest free block / free bytes within the reserved segments at the peak
  time (`cuda_fragmentation`); raised at FRAGMENTATION_MIN or more. At stake:
  the free bytes outside the largest block, which a request larger than that
  block cannot use.

Each finding links to /memory with the device and `at` = the peak time, which
opens the CUDA view listing the allocations alive at the peak.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboard.analysis import cuda_fragmentation
from dashboard.analysis import cuda_memory as analysis
from dashboard.analysis.device_findings import FRAGMENTATION_MIN
from dashboard.analysis.finding import Finding, view_href
from dashboard.analysis.units import format_bytes, format_ns
from dashboard.collectors.torch_snapshot.tables import NO_HISTORY

THRESHOLDS: dict[str, str] = {
    "CUDA memory peak": "every accelerator's peak (cuda, HIP as cuda, xpu, mtia, ...), with the op or Python "
                        "frame holding the most live bytes; "
                        "share of the device's memory when the trace names it, else of reserved at the peak",
    "CUDA fragmentation": f"at the peak, the largest free block under {1 - FRAGMENTATION_MIN:.0%} of the free "
                          "memory in the reserved segments (snapshots)",
}


@dataclass(frozen=True)
class DevicePeak:
    rank: int
    device: str
    time_ns: int
    since_start_ns: int  # from the device's first memory event
    allocated: int
    reserved: int | None  # reserved at the peak
    peak_reserved: int | None  # highest reserved anywhere in the trace
    culprit: str | None
    culprit_bytes: int | None
    capacity: int | None
    relative: bool
    free: int | None = None  # within the segments at the peak (snapshots)
    largest_free: int | None = None
    at_snapshot: bool = False  # no allocation history: the device's state at the snapshot is all there is

    @property
    def fragmentation(self) -> float | None:
        if self.free is None or self.largest_free is None:
            return None
        return 1 - self.largest_free / self.free if self.free > 0 else 0.0


def device_capacities(metadata: Mapping[str, Any]) -> dict[tuple[int, str], int]:
    """(rank, `cuda:N`) -> total device memory in bytes, from Kineto `deviceProperties` (per rank) anywhere."""
    found: dict[tuple[int, str], int] = {}
    for key, value in metadata.items():
        if key == "deviceProperties" and isinstance(value, Mapping):
            for rank, devices in value.items():
                for device in devices if isinstance(devices, list) else []:
                    memory = device.get("totalGlobalMem") if isinstance(device, Mapping) else None
                    if str(rank).isdigit() and isinstance(memory, int) and isinstance(device.get("id"), int):
                        found[(int(rank), f"cuda:{device['id']}")] = memory
        elif isinstance(value, Mapping):
            found.update(device_capacities(value))
    return found


def device_vendors(metadata: Mapping[str, Any]) -> dict[str, str]:
    """`cuda:0` -> its maker where the trace names one beyond CUDA (a ROCm build's HIP devices), anywhere."""
    found: dict[str, str] = {}
    for key, value in metadata.items():
        if key == "device_vendors" and isinstance(value, Mapping):
            found.update({str(k): str(v) for k, v in value.items()})
        elif isinstance(value, Mapping):
            found.update(device_vendors(value))
    return found


def device_peaks(events: pl.DataFrame, segments: pl.DataFrame,
                 capacities: Mapping[tuple[int, str], int] | None = None) -> list[DevicePeak]:
    """The peak of every (rank, CUDA device) in `device_memory`, in rank and device order."""
    capacities = capacities or {}
    peaks: list[DevicePeak] = []
    # Every accelerator PyTorch names (cuda, also for HIP on ROCm builds; xpu, mtia, ...), the host aside.
    cuda = events.filter(pl.col("device") != "cpu")
    for rank, device in cuda.select("rank", "device").unique().sort("rank", "device").iter_rows():
        mine = cuda.filter((pl.col("rank") == rank) & (pl.col("device") == device)).sort("time_ns", maintain_order=True)
        found = analysis.peak(mine, analysis.lifetimes(mine), device)
        if found is None:
            continue
        at = mine.row(int(mine["allocated"].arg_max()), named=True)  # type: ignore[arg-type]
        at_snapshot = bool((mine["action"] == "snapshot").all())
        culprit, culprit_bytes = found.culprit, found.culprit_bytes
        if at_snapshot and culprit is None and segments.height:  # no lifetimes: the blocks' own frames
            culprit, culprit_bytes = _snapshot_holder(segments.filter((pl.col("rank") == rank)
                                                                      & (pl.col("device") == device)))
        peak = DevicePeak(rank, device, found.time_ns, found.time_ns - int(mine["time_ns"].min()),  # type: ignore[arg-type]
                          found.allocated, at["reserved"], mine["reserved"].max(),  # type: ignore[arg-type]
                          culprit, culprit_bytes, capacities.get((rank, device)), bool(at["relative"]),
                          at_snapshot=at_snapshot)
        state = cuda_fragmentation.layout(
            mine, segments.filter((pl.col("rank") == rank) & (pl.col("device") == device))) if segments.height else None
        if state is not None:
            free, largest = cuda_fragmentation.at_time(state, found.time_ns)
            peak = DevicePeak(**{**peak.__dict__, "free": free, "largest_free": largest})
        peaks.append(peak)
    return peaks


def _snapshot_holder(segments: pl.DataFrame) -> tuple[str | None, int | None]:
    """The Python frame whose blocks hold the most bytes at a snapshot (its blocks in use)."""
    held = segments.filter((pl.col("state") != "free") & pl.col("frame").is_not_null()).group_by("frame").agg(
        pl.col("size").sum()).sort("size", "frame", descending=[True, False])
    return held.row(0) if held.height else (None, None)


def peak_href(run_id: str, peak: DevicePeak) -> str:
    """/memory's CUDA view on this device, listing what is alive at the peak."""
    return view_href("/memory", run_id, rank=peak.rank, device=peak.device, at=str(peak.time_ns))


def _peak_finding(run_id: str, peak: DevicePeak) -> Finding:
    where = f"{peak.device} (rank {peak.rank})"
    if peak.capacity:
        share, share_of = peak.allocated / peak.capacity, f"{where} memory ({format_bytes(peak.capacity)})"
    elif peak.reserved:
        share = peak.allocated / peak.reserved
        share_of = f"{where} reserved at the peak ({format_bytes(peak.reserved)})"
    else:
        share, share_of = 0.0, f"{where} memory (unknown: the trace has neither allocator totals nor device memory)"
    culprit = f"; {peak.culprit} holds {format_bytes(peak.culprit_bytes)} of it" if peak.culprit else ""
    evidence: dict[str, Any] = {
        "peak allocated": format_bytes(peak.allocated)
                          + (" (counted from 0 at the trace start: the trace has no totals)" if peak.relative else ""),
        "at": "the snapshot (its only moment)" if peak.at_snapshot
              else f"{format_ns(peak.since_start_ns)} after the device's first memory event",
        "reserved at the peak": format_bytes(peak.reserved) if peak.reserved is not None else "unknown",
    }
    if peak.reserved:
        evidence["allocated ÷ reserved at the peak"] = f"{peak.allocated / peak.reserved:.1%}"
    if peak.capacity:
        evidence["device memory"] = format_bytes(peak.capacity)
    if peak.at_snapshot:
        evidence["history"] = NO_HISTORY
    if peak.culprit:
        evidence["culprit (op or Python frame holding the most live bytes)"] = peak.culprit
        held = format_bytes(peak.culprit_bytes)
        if peak.allocated:
            held += f" ({(peak.culprit_bytes or 0) / peak.allocated:.1%} of the peak)"
        evidence["culprit's live bytes at the peak"] = held
    verb = "holds" if peak.at_snapshot else "peaks at"
    when = " at the snapshot (no allocation history)" if peak.at_snapshot else ""
    return Finding(
        key=f"cuda_memory:peak:{peak.rank}:{peak.device}",
        title=f"{where} {verb} {format_bytes(peak.allocated)} allocated{when}"
              + (f" ({peak.allocated / peak.capacity:.1%} of its memory)" if peak.capacity else "") + culprit,
        share=share, share_of=share_of, at_stake_bytes=peak.allocated, url=peak_href(run_id, peak),
        advice="free or shrink what the culprit keeps alive at the peak (delete tensors once used, activation "
               "checkpointing, a smaller batch, lower-precision activations)",
        evidence=evidence)


def _fragmentation_finding(run_id: str, peak: DevicePeak) -> Finding | None:
    fragmentation = peak.fragmentation
    if fragmentation is None or not peak.free or fragmentation < FRAGMENTATION_MIN:
        return None
    stranded = peak.free - (peak.largest_free or 0)
    reserved = peak.reserved or peak.free
    where = f"{peak.device} (rank {peak.rank})"
    return Finding(
        key=f"cuda_memory:fragmentation:{peak.rank}:{peak.device}",
        title=f"{where} is {fragmentation:.0%} fragmented at its peak: {format_bytes(stranded)} free outside the "
              "largest free block",
        share=stranded / reserved, share_of=f"{where} reserved at the peak ({format_bytes(reserved)})",
        at_stake_bytes=stranded, url=peak_href(run_id, peak),
        advice="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow instead of splitting; "
               "allocating long-lived tensors first keeps short-lived ones from scattering the free space",
        evidence={"free in the reserved segments": format_bytes(peak.free),
                  "largest free block": format_bytes(peak.largest_free),
                  "fragmentation (1 − largest free ÷ free)": f"{fragmentation:.1%}",
                  "free outside the largest block": format_bytes(stranded)})


def cuda_memory_findings(run_id: str, events: pl.DataFrame, segments: pl.DataFrame,
                         metadata: Mapping[str, Any]) -> list[Finding]:
    """Peak and fragmentation findings of every CUDA device of the run."""
    found: list[Finding] = []
    vendors = device_vendors(metadata)
    for peak in device_peaks(events, segments, device_capacities(metadata)):
        finding = _peak_finding(run_id, peak)
        if peak.device in vendors:
            finding.evidence["device"] = f"{peak.device}: {vendors[peak.device]}"
        found.append(finding)
        fragmented = _fragmentation_finding(run_id, peak)
        if fragmented is not None:
            found.append(fragmented)
    return found
