"""PyTorch CUDA allocator snapshots (`torch.cuda.memory._dump_snapshot`, `.pickle`).

A snapshot holds `segments` (the cudaMalloc'd segments at the moment of the
dump, each with its `blocks`: size, state, the traceback that allocated it)
and `device_traces` (per device, the allocator's recent actions: `alloc`,
`free_requested`, `free_completed`, `segment_alloc`, `segment_free`, `oom`,
`snapshot`, with address, size, stream, `time_us` and traceback), written
when `torch.cuda.memory._record_memory_history()` was on. Format reference:
PyTorch's `torch/cuda/memory.py` (`_snapshot`) and `torch/cuda/_memory_viz.py`.

Shapes read (each tested on a snapshot of torch's layout): the dict with
`device_traces` (one list per device), with or without `time_us` (before
PyTorch 2.1) and `allocator_settings`; the dict without traces or with empty
ones (history recording off); the bare list of segments that
`torch.cuda.memory_snapshot()` returns and people pickle.

Tables: `device_memory` (one row per trace action, curves rebuilt as in
`tables`; without history one `snapshot` row per device holding its
allocated and reserved bytes at the snapshot, and a warning that says so) and
`memory_segments` (one row per block at the end). Rank comes from the file
name (`collectors.rank_names`), else the file's position.

How bad input is handled: the pickle is never allowed to import or call
anything (`unpickle`): such a file, a truncated or corrupt pickle, or a
pickle that is not a snapshot is one IngestError line. Snapshots up to
`STREAM_ABOVE_BYTES` are read whole by the C unpickler under an
address-space cap (`bounded`); larger ones, and any the cap stops, by the
streaming loader, `BATCH` trace entries at a time, so a 2 GB snapshot does
not need its whole object graph in memory (`unpickle`).
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn, is_gzip, open_source
from dashboard.collectors.rank_names import rank_from_name
from dashboard.collectors.safe_pickle import starts_a_pickle
from dashboard.collectors.torch_snapshot.bounded import can_bound, load_whole
from dashboard.collectors.torch_snapshot.tables import (
    NO_HISTORY,
    FrameNamer,
    device_memory,
    entries_frame,
    segments_frame,
    state_at_snapshot,
)
from dashboard.collectors.torch_snapshot.unpickle import STREAM_ABOVE_BYTES, OnEntries, RefusedPickle, load_streaming

BATCH = 100_000  # trace entries turned into columns at a time


def _read(path: Path, size: int, on_entries: OnEntries) -> tuple[Any, dict[int, int] | None]:
    """(snapshot, id(trace list) -> number when streamed, else None: its trace lists are still full)."""
    if size <= STREAM_ABOVE_BYTES and can_bound():
        try:
            with open_source(path) as handle:
                return load_whole(handle, size), None
        except MemoryError:
            pass  # a memo index or length past the cap (damaged, or a snapshot needing more room): stream it
    with open_source(path) as handle:
        return load_streaming(handle, on_entries, BATCH)


def _load(path: Path, size: int) -> tuple[Any, list[pl.DataFrame], dict[int, int], FrameNamer, int]:
    """(snapshot with its trace lists emptied, trace batches as frames, id(list) -> number, frame namer,
    trace entries left out because they are not dicts)."""
    namer = FrameNamer()
    parts: list[pl.DataFrame] = []
    counts: dict[int, int] = {}
    refused = [0]

    def on_entries(number: int, entries: list[dict[str, Any]]) -> None:
        kept = [entry for entry in entries if type(entry) is dict]
        refused[0] += len(entries) - len(kept)
        parts.append(entries_frame(number, counts.get(number, 0), kept, namer))
        counts[number] = counts.get(number, 0) + len(kept)

    try:
        snapshot, streamed = _read(path, size, on_entries)
    except RefusedPickle as exc:
        raise IngestError(path, str(exc)) from None
    except (EOFError, struct.error):  # struct.error: an opcode's argument cut short by the file's end
        raise IngestError(path, "truncated pickle: the file ends before the snapshot does") from None
    except MemoryError:  # a length field asking for more than the machine has: never a real snapshot's
        raise IngestError(path, "corrupt pickle: a length in it exceeds the memory of this machine") from None
    except (pickle.UnpicklingError, ValueError, KeyError, IndexError, TypeError, AttributeError,
            OverflowError, UnicodeDecodeError, RecursionError) as exc:
        if "truncated" in str(exc):
            raise IngestError(path, "truncated pickle: the file ends before the snapshot does") from None
        # The exception's text is the unpickler's or polars' (issue 14: no library text reaches the user).
        what = "a value of the wrong type" if isinstance(exc, TypeError | AttributeError) else "damaged data"
        raise IngestError(path, f"corrupt pickle: its bytes do not decode as an allocator snapshot ({what})") from None
    if streamed is not None:
        return snapshot, parts, streamed, namer, refused[0]
    numbers = {}
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    for index, trace in enumerate(traces if isinstance(traces, list) else []):
        if isinstance(trace, list):
            numbers[id(trace)] = index
            for first in range(0, len(trace), BATCH):
                on_entries(index, trace[first:first + BATCH])
            trace.clear()  # the objects of this device are no longer needed
    return snapshot, parts, numbers, namer, refused[0]


def _as_snapshot(path: Path, loaded: Any) -> dict[str, Any]:
    """The snapshot dict: as `_dump_snapshot` wrote it, or built around the list of segments
    `torch.cuda.memory_snapshot()` returns (as `torch.cuda._memory_viz` reads one)."""
    if isinstance(loaded, dict) and {"segments", "device_traces"} & loaded.keys():
        return loaded
    if isinstance(loaded, list) and loaded and all(isinstance(s, dict) and "blocks" in s for s in loaded):
        return {"segments": loaded, "device_traces": []}
    if isinstance(loaded, list) and not loaded:
        raise IngestError(path, "an empty list of allocator segments (the snapshot was taken with nothing allocated)")
    kind = type(loaded).__name__
    raise IngestError(path, f"not an allocator snapshot: a pickled {kind} without `segments` or `device_traces` "
                            "(nor a list of segments)")


class TorchSnapshotCollector:
    name = "torch_snapshot"
    description = "PyTorch CUDA allocator snapshot (torch.cuda.memory._dump_snapshot .pickle)"

    def sniff(self, probe: Probe) -> bool:
        head = probe.head
        if not starts_a_pickle(head):
            return False
        # The dict `_dump_snapshot` writes, or the list of segments `torch.cuda.memory_snapshot()` returns.
        return b"segments" in head[:4096] or b"device_traces" in head or (
            b"total_size" in head[:4096] and b"address" in head[:4096])

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        sources = [Path(source) for source in sources]
        if not sources:
            raise IngestError("(no files)", "no allocator snapshots were given")
        memory: list[pl.DataFrame] = []
        segments: list[pl.DataFrame] = []
        warnings: list[str] = []
        files: list[dict[str, Any]] = []
        for index, path in enumerate(sources):
            progress(index / len(sources), f"reading {path.name}")
            rank = rank_from_name(path)
            rank = index if rank is None else rank
            size = os.path.getsize(path) * (4 if is_gzip(path) else 1)  # gzip: about 4x smaller
            snapshot, parts, numbers, namer, refused = _load(path, size)
            if refused:
                warnings.append(f"{path}: {refused:,} trace entries that are not dicts (damaged) were left out")
            snapshot = _as_snapshot(path, snapshot)
            blocks = segments_frame(snapshot.get("segments"), namer, rank)
            traces = snapshot.get("device_traces")
            devices = {numbers[id(trace)]: position for position, trace in enumerate(traces or [])
                       if id(trace) in numbers}
            del snapshot, traces
            table, found = device_memory(parts, devices, blocks, rank)
            warnings += [f"{path}: {warning}" for warning in found]
            # Devices without trace entries (recording off, or on for other devices only): their state at the
            # snapshot, placed after the last traced action (the snapshot is taken after it).
            untraced = blocks.filter(~pl.col("device").is_in(table["device"].unique().implode()))
            if untraced.height:
                last = int(table["time_ns"].max()) if table.height else 0  # type: ignore[arg-type]
                table = pl.concat([table, state_at_snapshot(untraced, rank, last)])
                devices_text = ", ".join(sorted(untraced["device"].unique()))
                warnings.append(f"{path}: {NO_HISTORY}" + (f" for {devices_text}" if table.height > untraced[
                    "device"].n_unique() else ""))
            if table.height == 0:
                warnings.append(f"{path}: the snapshot holds no segments and no trace entries (nothing was "
                                "allocated on any device)")
            memory.append(table)
            segments.append(blocks)
            files.append({"path": str(path), "rank": rank, "trace_entries": table.height, "blocks": blocks.height})
        progress(1.0, "done")
        tables = {"device_memory": pl.concat(memory), "memory_segments": pl.concat(segments)}
        return Collected(tables={k: v for k, v in tables.items() if v.height}, metadata={"files": files},
                         warnings=warnings)


COLLECTOR = TorchSnapshotCollector()
