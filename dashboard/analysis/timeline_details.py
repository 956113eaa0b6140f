"""One event of the timeline in full: its stored row, what launched it and what it launched.

An event is named in the URL by an `EventRef` (`kernel.0.7.0.<start_ns>`:
kind, rank, stream or thread, device or depth, start), which reads the same in
every process and after a re-index, unlike a row number. `event_details`
gathers what a details pane shows: every stored column of the event's row,
the API call that launched it, the chain of CPU ranges (ops, annotations,
steps) around that call with their input shapes where the source kept them,
the Python stack at that instant, and what an op or call launched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import polars as pl

from dashboard.analysis.timeline import TimelineData
from dashboard.analysis.timeline_flows import EventLinks, event_links
from dashboard.analysis.timeline_lanes import STACK_CATEGORY

KINDS = ("kernel", "memcpy", "range", "step", "api")
# The canonical table of each kind, and the column holding its track (stream or thread).
TABLE_OF = {"kernel": ("kernels", "stream"), "memcpy": ("memcpy", "stream"), "range": ("ranges", "thread"),
            "step": ("ranges", "thread"), "api": ("api_calls", "thread")}
_LANE_GROUPS = {"kernel": ("gpu",), "memcpy": ("gpu",), "range": ("cpu", "gpu_ranges"),
                "step": ("cpu", "gpu_ranges"), "api": ("api",)}


@dataclass(frozen=True)
class EventRef:
    """An event named by what it is: kind, rank, track (stream / thread), sub (device / depth), start."""

    kind: str
    rank: int
    track: int
    sub: int  # the device of a kernel or copy, the depth of a range (-1: unknown), 0 for an API call
    start_ns: int

    def text(self) -> str:
        return f"{self.kind}.{self.rank}.{self.track}.{self.sub}.{self.start_ns}"

    @classmethod
    def parse(cls, text: str | None) -> Self | None:
        """The ref a URL value names; None when malformed."""
        parts = (text or "").strip().split(".")
        if len(parts) != 5 or parts[0] not in KINDS:
            return None
        try:
            rank, track, sub, start = (int(part) for part in parts[1:])
        except ValueError:
            return None
        return cls(parts[0], rank, track, sub, start) if rank >= 0 else None


def event_ref(data: TimelineData, row: int) -> EventRef:
    """The ref of the event at a row of TimelineData.events."""
    event = data.events.row(row, named=True)
    lane = data.lanes.filter(pl.col("lane") == event["lane"]).row(0, named=True)
    kind = event["kind"]
    if kind in ("kernel", "memcpy"):
        sub = lane["device"]
    elif kind == "api":
        sub = 0
    else:
        sub = event["depth"]
    return EventRef(kind, int(lane["rank"]), int(lane["track"]) if lane["track"] is not None else -1,
                    -1 if sub is None else int(sub), int(event["start_ns"]))


def find_event(data: TimelineData, ref: EventRef) -> int | None:
    """The row of TimelineData.events a ref names, None when the run has no such event."""
    lanes = data.lanes.filter(pl.col("group").is_in(_LANE_GROUPS[ref.kind]) & (pl.col("rank") == ref.rank)
                              & (pl.col("track").fill_null(-1) == ref.track))
    if ref.kind in ("kernel", "memcpy"):
        lanes = lanes.filter(pl.col("device").fill_null(-1) == ref.sub)
    kinds = data.events.get_column("kind")
    depth = data.events.get_column("depth")
    for lane in lanes.get_column("lane").to_list():
        index = data.indexes.get(lane)
        if index is None:
            continue
        low, high = np.searchsorted(index.starts, [ref.start_ns, ref.start_ns + 1])
        for row in index.rows[low:high].tolist():
            if kinds[row] != ref.kind:
                continue
            if ref.kind in ("range", "step") and (-1 if depth[row] is None else depth[row]) != ref.sub:
                continue
            return int(row)
    return None


@dataclass(frozen=True)
class EventDetails:
    """What the details pane shows of one event."""

    ref: EventRef
    row: int
    name: str
    record: dict[str, Any]  # every stored column of the event's row (null ones too)
    launch: dict[str, Any] | None  # the API call that launched a kernel or copy
    op_chain: list[dict[str, Any]]  # CPU ranges around the launch (or the range), outermost first
    stack: list[str]  # Python frames at the launch, outermost first
    launched: pl.DataFrame  # name, kind, launches, total_ns: what an op or call launched
    links: EventLinks


def _source_row(data: TimelineData, ref: EventRef) -> dict[str, Any]:
    table, track = TABLE_OF[ref.kind]
    frame = data.sources.get(table)
    if frame is None or frame.is_empty():
        return {}
    condition = ((pl.col("rank").fill_null(0) == ref.rank) & (pl.col(track).fill_null(-1) == ref.track)
                 & (pl.col("start_ns") == ref.start_ns))
    if ref.kind in ("kernel", "memcpy"):
        condition &= pl.col("device").fill_null(-1) == ref.sub
    if ref.kind in ("range", "step"):
        condition &= pl.col("depth").fill_null(-1) == ref.sub
    found = frame.filter(condition)
    return found.row(0, named=True) if found.height else {}


def op_chain(data: TimelineData, rank: int, thread: int, start_ns: int, end_ns: int | None = None,
             deepest: int | None = None) -> list[dict[str, Any]]:
    """The CPU ranges on a thread enclosing an instant (or an interval), outermost first.

    Python-function ranges are the stack, not the chain. `deepest` leaves out ranges nested deeper.
    """
    ranges = data.sources.get("ranges")
    if ranges is None or ranges.is_empty():
        return []
    end_ns = start_ns if end_ns is None else end_ns
    chain = ranges.filter((pl.col("rank").fill_null(0) == rank) & (pl.col("thread") == thread)
                          & (pl.col("start_ns") <= start_ns) & (pl.col("end_ns") >= end_ns)
                          & (pl.col("category").fill_null("") != STACK_CATEGORY))
    if deepest is not None:
        chain = chain.filter(pl.col("depth").fill_null(0) <= deepest)
    return chain.sort(["depth", "start_ns"], nulls_last=True).to_dicts()


def python_stack(data: TimelineData, rank: int, thread: int, at_ns: int) -> list[str]:
    """The Python frames on a thread at an instant, outermost first: the stack table, else the profiler's
    python_function ranges."""
    frames = data.sources.get("stack")
    if frames is not None and frames.height:
        found = frames.filter((pl.col("rank").fill_null(0) == rank) & (pl.col("thread") == thread)
                              & (pl.col("start_ns") <= at_ns) & (pl.col("end_ns") >= at_ns))
        if found.height:
            return found.sort("depth").get_column("function").fill_null("(unknown)").to_list()
    ranges = data.sources.get("ranges")
    if ranges is None or ranges.is_empty():
        return []
    found = ranges.filter((pl.col("rank").fill_null(0) == rank) & (pl.col("thread") == thread)
                          & (pl.col("category") == STACK_CATEGORY)
                          & (pl.col("start_ns") <= at_ns) & (pl.col("end_ns") >= at_ns))
    return found.sort("depth").get_column("name").fill_null("(unknown)").to_list()


def launched_summary(data: TimelineData, launched: pl.DataFrame) -> pl.DataFrame:
    """name, kind, launches, total_ns of launched events, most GPU time first."""
    return (launched.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("duration"))
            .group_by("code").agg(pl.col("kind").first(), pl.len().alias("launches"),
                                  pl.col("duration").sum().alias("total_ns"))
            .join(data.names.select("code", "name"), on="code", how="left")
            .sort(["total_ns", "name"], descending=[True, False])
            .select("name", "kind", pl.col("launches").cast(pl.Int64), pl.col("total_ns").cast(pl.Int64)))


def event_details(data: TimelineData, ref: EventRef) -> EventDetails | None:
    """Everything the details pane shows of the event a ref names; None when the run has no such event."""
    row = find_event(data, ref)
    if row is None:
        return None
    record = _source_row(data, ref)
    name = str(data.names.get_column("name")[int(data.events.get_column("code")[row])])
    links = event_links(data, row)
    launch = None
    chain: list[dict[str, Any]] = []
    stack: list[str] = []
    if links.launch_row is not None:
        launch_ref = event_ref(data, links.launch_row)
        launch = _source_row(data, launch_ref) or None
        chain = op_chain(data, launch_ref.rank, launch_ref.track, launch_ref.start_ns)
        stack = python_stack(data, launch_ref.rank, launch_ref.track, launch_ref.start_ns)
    elif ref.kind in ("range", "step") and ref.track >= 0:
        end = record.get("end_ns", ref.start_ns)
        chain = op_chain(data, ref.rank, ref.track, ref.start_ns, end, deepest=None if ref.sub < 0 else ref.sub)
        stack = python_stack(data, ref.rank, ref.track, ref.start_ns)
    return EventDetails(ref, row, name, record, launch, chain, stack, launched_summary(data, links.launched), links)
