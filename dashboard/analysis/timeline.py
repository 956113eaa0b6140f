"""The `/timeline` view of a run at any zoom, with a bounded number of marks.

`prepare_timeline` indexes a run once (lanes, per-lane sorted arrays, stack
threads); `timeline_view` answers one window of it:

- a lane with few events in the window (all exact lanes together at most
  EXACT_BUDGET events, see exact_limit), not crowded into a few buckets
  (see crowded), lists them one by one (`events`);
- any other lane is summarised per pixel bucket (`cells`): the exact busy
  fraction of the bucket, how many events start in it, and the name holding
  the most time in it (the dominant kernel, which colours it);
- the copy panels and stack panels are per-bucket series (`copies`,
  `stack_depth`), or a thread's frames one by one when few (`stack_frames`).

The bucket count shrinks as lanes are added so that cells + series points
stay under MARK_BUDGET whatever the zoom (plus at most EXACT_BUDGET exact
events), and a view never scans the whole run: every per-lane query is a
handful of binary searches plus work on the events inside the window, or on
a fixed number of samples per bucket (see timeline_index).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from dashboard import schema
from dashboard.analysis.breakdown import kernel_kind
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.timeline_cells import (
    CELL_SCHEMA,
    EXACT_BUDGET,
    MARK_BUDGET,
    bucket_count,
    choose_exact,
    crowded,
    exact_limit,
    lane_cell_arrays,
    named_cells,
)
from dashboard.analysis.timeline_index import IntervalIndex, bucket_edges
from dashboard.analysis.timeline_lanes import LANE_KEY, api_class, display_name, lane_events, lane_table
from dashboard.analysis.timeline_series import (
    StackTrack,
    copy_series,
    stack_depth_series,
    stack_frames,
    stack_frames_in,
    stack_tracks,
)

# Re-exported: callers and tests know them as timeline's.
__all__ = ["CELL_SCHEMA", "EXACT_BUDGET", "MARK_BUDGET", "MIN_WINDOW_NS", "OVERLAY_GROUP", "TimelineData",
           "TimelineView", "choose_exact", "clamp_window", "exact_limit", "lane_cell_arrays", "prepare_timeline",
           "timeline_view"]

MIN_WINDOW_NS = 100
OVERLAY_GROUP = "stack_kernels"  # a rank's kernels, drawn under its stack panels
_LANE_POOL = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="timeline-lanes")
FLOW_SCHEMA = {"kind": pl.String, "from_lane": pl.Int32, "from_ns": pl.Int64, "to_lane": pl.Int32, "to_ns": pl.Int64}
MATCH_SCHEMA = {"bucket": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "matches": pl.Int64}
FOCUS_SCHEMA = {"lane": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.String}
# The tables a timeline is built from, in prepare_timeline's order.
TIMELINE_TABLES = ("kernels", "memcpy", "ranges", "stack", "api_calls")


@dataclass(frozen=True)
class TimelineData:
    """A run indexed for window queries; built once per run and reused by every view."""

    start_ns: int
    end_ns: int
    # lane, group, rank, device, track, sublane, label, track_id, track_label (overlay lanes last)
    lanes: pl.DataFrame
    # every lane event: lane, kind, code, category, start_ns, end_ns, bytes, flops, depth, correlation;
    # index rows point here
    events: pl.DataFrame
    # code, name, kind, key, short, klass (compute / communication / memory; sync / launch / ... for API calls)
    names: pl.DataFrame
    indexes: dict[int, IntervalIndex]
    copies: pl.DataFrame  # rank, kind, start_ns, end_ns, bytes
    stacks: list[StackTrack]
    functions: list[str]
    # Per (lane, kernel code) indexes for highlighting selected kernels, filled on first use.
    kernel_indexes: dict[tuple[int, int], IntervalIndex] = field(default_factory=dict, compare=False)
    # The canonical tables it was built from (details of one event are read from them).
    sources: dict[str, pl.DataFrame] = field(default_factory=dict, compare=False)
    # Built on first use by other modules (the search index, the launch pairs): name -> object.
    derived: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.lanes.get_column("rank").unique().to_list())


@dataclass(frozen=True)
class TimelineView:
    """One window of a run, ready to draw."""

    start_ns: int
    end_ns: int
    run_start_ns: int
    run_end_ns: int
    buckets: int
    lanes: pl.DataFrame  # lane, group, rank, label, track_id, events (in window), exact; top to bottom
    cells: pl.DataFrame  # CELL_SCHEMA: aggregated lanes, non-empty buckets only
    # exact: lane, kind, name, short, klass, category, start_ns, end_ns, bytes, flops, depth, key, selected,
    # matched (by the search), rank, device, track
    events: pl.DataFrame
    copies: pl.DataFrame  # series, bucket, start_ns, end_ns, bandwidth (bytes/s), in_flight (bytes)
    stacks: pl.DataFrame  # stack, rank, thread, label, frames (in window), exact
    stack_depth: pl.DataFrame  # stack, bucket, start_ns, end_ns, depth
    stack_frames: pl.DataFrame  # stack, function, depth, start_ns, end_ns
    selected_keys: frozenset[str]
    # Filled by the page's view (views.timeline) from the search, the flows and the selected event.
    matches: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=MATCH_SCHEMA))
    flows: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FLOW_SCHEMA))
    focus: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FOCUS_SCHEMA))
    search: str | None = None  # "12 matches of 'gemm'": what the matches row says

    @property
    def is_full(self) -> bool:
        return self.start_ns <= self.run_start_ns and self.end_ns >= self.run_end_ns

    @property
    def marks(self) -> int:
        """Marks this view sends: cells, exact events, frames and series points."""
        return (self.cells.height + self.events.height + self.copies.height * 2
                + self.stack_depth.height + self.stack_frames.height)


def _lane_indexes(lane: np.ndarray, starts: np.ndarray, ends: np.ndarray, codes: np.ndarray,
                  n_lanes: int) -> dict[int, IntervalIndex]:
    # A stable sort on a 16-bit key is a radix sort, and keeps each lane's rows in stored
    # (time) order, so building each lane's index needs no further sort.
    order = np.argsort(lane.astype(np.int16), kind="stable")
    bounds = np.searchsorted(lane[order], np.arange(n_lanes + 1), side="left")
    indexes = {}
    for number in range(n_lanes):
        rows = order[bounds[number]:bounds[number + 1]]
        if len(rows):
            indexes[number] = IntervalIndex.build(starts[rows], ends[rows], codes[rows], rows)
    return indexes


def _event_names(events: pl.DataFrame) -> pl.DataFrame:
    """code, name, kind, key: one row per distinct name; a name that is also a kernel is a kernel."""
    priority = {"kernel": 0, "memcpy": 1, "api": 2, "step": 3, "range": 4, "pass": 5}
    per_kind = [events.filter(pl.col("kind") == kind).select(pl.col("name").unique(), pl.lit(kind).alias("kind"))
                for kind in priority]
    names = pl.concat(per_kind).unique(subset="name", keep="first", maintain_order=True).sort("name")
    return names.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("code"),
        # Python once per distinct name, never per event.
        pl.col("name").map_elements(kernel_key, return_dtype=pl.String).alias("key"),
        pl.struct("name", "kind").map_elements(lambda row: display_name(row["name"], row["kind"]),
                                               return_dtype=pl.String).alias("short"),
    ).with_columns(
        pl.when(pl.col("kind") == "kernel").then(kernel_kind())
        .when(pl.col("kind") == "memcpy").then(pl.lit("memory"))
        .when(pl.col("kind") == "api").then(api_class(pl.col("name")))
        .otherwise(pl.lit(None, pl.String)).alias("klass"),
    ).select("code", "name", "kind", "key", "short", "klass")


def lane_tables(kernels: pl.DataFrame, memcpy: pl.DataFrame, ranges: pl.DataFrame,
                api_calls: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """The costly part of indexing a run (lane events, lanes, names: most of it at a million kernels), as
    frames a run can keep (analysis.timeline_kept): events (lane, kind, code, ... rank), lanes, names."""
    events = lane_events(kernels, memcpy, ranges, api_calls)
    lanes = lane_table(events)
    names = _event_names(events)
    events = events.join(lanes.select("lane", *LANE_KEY), on=LANE_KEY, how="left", nulls_equal=True).select(
        "lane", "kind", pl.col("name").cast(pl.Enum(names.get_column("name"))).to_physical().cast(pl.Int64)
        .alias("code"), "category", "start_ns", "end_ns", "bytes", "flops", "depth", "correlation", "rank")
    return {"events": events, "lanes": lanes, "names": names}


def prepare_timeline(kernels: pl.DataFrame, memcpy: pl.DataFrame, ranges: pl.DataFrame,
                     stack: pl.DataFrame, api_calls: pl.DataFrame | None = None,
                     tables: dict[str, pl.DataFrame] | None = None) -> TimelineData:
    """Index a run's canonical tables for timeline views (from its `lane_tables` when they were kept)."""
    if tables is None:
        tables = lane_tables(kernels, memcpy, ranges, api_calls)
    events, lanes, names = tables["events"], tables["lanes"], tables["names"]
    frames = stack_frames(stack, ranges)
    tracks, functions = stack_tracks(frames)
    lane = events.get_column("lane").to_numpy()
    starts, ends = events.get_column("start_ns").to_numpy(), events.get_column("end_ns").to_numpy()
    codes = events.get_column("code").to_numpy()
    indexes = _lane_indexes(lane, starts, ends, codes, lanes.height)
    # Under each stack panel: every kernel of its rank on one lane, over the same event rows.
    overlay_ranks = sorted({track.rank for track in tracks})
    overlay = pl.DataFrame({"group": OVERLAY_GROUP, "rank": overlay_ranks, "label": "kernels"},
                           schema={"group": pl.String, "rank": pl.Int32, "label": pl.String})
    overlay = overlay.with_columns(pl.int_range(lanes.height, lanes.height + pl.len(), dtype=pl.Int32).alias("lane"))
    is_kernel = (events.get_column("kind") == "kernel").to_numpy()
    event_rank = events.get_column("rank").to_numpy()
    for number, rank in zip(overlay.get_column("lane"), overlay_ranks, strict=True):
        rows = np.flatnonzero(is_kernel & (event_rank == rank))
        if len(rows):
            indexes[number] = IntervalIndex.build(starts[rows], ends[rows], codes[rows], rows)
    bounds = [(int(frame.get_column("start_ns").min()), int(frame.get_column("end_ns").max()))  # type: ignore[arg-type]
              for frame in (events, frames) if frame.height]
    start = min((b[0] for b in bounds), default=0)
    end = max((b[1] for b in bounds), default=1)
    return TimelineData(
        start_ns=start, end_ns=max(end, start + 1),
        lanes=pl.concat([lanes, overlay], how="diagonal_relaxed").select(
            "lane", "group", "rank", "device", "track", "sublane", "label", "track_id", "track_label"),
        events=events.drop("rank"),
        names=names,
        indexes=indexes,
        copies=memcpy.select(pl.col("rank").fill_null(0), "kind", "start_ns", "end_ns", "bytes")
        .filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()),
        stacks=tracks,
        functions=functions,
        sources={"kernels": kernels, "memcpy": memcpy, "ranges": ranges, "stack": stack,
                 "api_calls": api_calls if api_calls is not None else schema.empty("api_calls")},
    )


def clamp_window(data: TimelineData, window: tuple[int, int] | None) -> tuple[int, int]:
    """The window inside the run, at least MIN_WINDOW_NS wide; the whole run when None or outside it."""
    if window is None:
        return data.start_ns, data.end_ns
    start, end = max(int(window[0]), data.start_ns), min(int(window[1]), data.end_ns)
    if end <= start:
        return data.start_ns, data.end_ns
    if end - start < MIN_WINDOW_NS:
        middle = (start + end) // 2
        start = max(data.start_ns, middle - MIN_WINDOW_NS // 2)
        end = min(data.end_ns, start + MIN_WINDOW_NS)
    return start, end


def selected_codes(names: pl.DataFrame, keys: Iterable[str]) -> list[int]:
    """Codes of the kernels whose key is selected."""
    return names.filter(pl.col("key").is_in(list(keys)) & (pl.col("kind") == "kernel")).get_column("code").to_list()


def _kernel_indexes(data: TimelineData, lane: int, codes: list[int]) -> list[IntervalIndex]:
    """One index per selected kernel present on a lane, built on first use and kept."""
    index = data.indexes[lane]
    found = []
    for code in codes:
        if code not in index.code_table:
            continue
        key = (lane, code)
        if key not in data.kernel_indexes:
            data.kernel_indexes[key] = index.subset(np.flatnonzero(index.codes == code))
        found.append(data.kernel_indexes[key])
    return found


def shown_lanes(data: TimelineData, rank: int | None, pinned: Sequence[str] = (),
                folded: Collection[str] = ()) -> pl.DataFrame:
    """The lanes of a view, top to bottom: pinned tracks first (in pin order), folded tracks on one row.

    A folded track keeps its first row (a thread's outermost ranges, which cover the deeper ones in
    time) and says how many rows it hides.
    """
    lanes = data.lanes if rank is None else data.lanes.filter(pl.col("rank") == rank)
    rows = pl.col("sublane").count().over("track_id")
    is_folded = pl.col("track_id").is_in(list(folded)).fill_null(False)
    kept = ~is_folded | (pl.col("sublane").fill_null(0) == 0)
    lanes = lanes.with_columns(rows.alias("rows")).filter(kept).with_columns(
        pl.when(is_folded & (pl.col("rows") > 1))
        .then(pl.format("{} (+{} rows folded)", pl.col("label"), pl.col("rows") - 1))
        .otherwise(pl.col("label")).alias("label"))
    if pinned:
        order = {track: position for position, track in enumerate(pinned)}
        pin = pl.col("track_id").replace_strict(order, default=len(order), return_dtype=pl.Int32)
        lanes = lanes.with_columns(pin.alias("pin")).sort("pin", maintain_order=True).drop("pin")
    return lanes.drop("rows")


def timeline_view(data: TimelineData, window: tuple[int, int] | None = None, rank: int | None = None,
                  selected_keys: Iterable[str] = (), *, pinned: Sequence[str] = (), folded: Collection[str] = (),
                  matched_codes: Collection[int] = ()) -> TimelineView:
    """The lanes, cells, exact events and series of one window (rank None = all ranks).

    `pinned` / `folded`: track ids drawn first / on one row; `matched_codes`: names a search matched,
    flagged `matched` on the exact events.
    """
    start, end = clamp_window(data, window)
    keys = frozenset(selected_keys)
    lanes = shown_lanes(data, rank, pinned, folded)
    stacks = [t for t in data.stacks if rank is None or t.rank == rank]
    overlay_ranks = {t.rank for t in stacks}
    lanes = lanes.filter((pl.col("group") != OVERLAY_GROUP) | pl.col("rank").is_in(list(overlay_ranks)))
    copies = data.copies if rank is None else data.copies.filter(pl.col("rank") == rank)
    copy_kinds = copies.get_column("kind").n_unique() if copies.height else 0
    buckets = bucket_count(lanes.height + 2 * copy_kinds + len(stacks), end - start)
    edges = bucket_edges(start, end, buckets)

    lane_ids = lanes.get_column("lane").to_list()
    counts: dict[object, int] = {("lane", lane): data.indexes[lane].count_overlapping(start, end)
                                 for lane in lane_ids if lane in data.indexes}
    counts.update({("stack", t.stack): t.index.count_overlapping(start, end) for t in stacks})
    exact = {row for row in choose_exact(counts, buckets)
             if row[0] != "lane" or not crowded(data.indexes[row[1]].starts_per_bucket(edges))}

    chosen_codes = selected_codes(data.names, keys)
    exact_rows, exact_lanes, summarised = [], [], []
    for lane in lane_ids:
        if ("lane", lane) in exact:
            rows = data.indexes[lane].rows[data.indexes[lane].overlapping(start, end)]
            exact_rows.append(rows)
            exact_lanes.append(np.full(len(rows), lane, dtype=np.int32))
        elif counts.get(("lane", lane), 0) > 0:
            summarised.append((lane, _kernel_indexes(data, lane, chosen_codes)))
    # Lanes are independent and their binary searches release the GIL: summarise them side by side.
    raw_cells = list(_LANE_POOL.map(lambda job: lane_cell_arrays(data.indexes[job[0]], edges, *job), summarised))
    rows = np.concatenate(exact_rows) if exact_rows else np.zeros(0, dtype=np.int64)
    taken = data.events[pl.Series(rows, dtype=pl.Int64)]
    code = taken.get_column("code")
    events = taken.with_columns(
        pl.Series("lane", np.concatenate(exact_lanes) if exact_lanes else [], dtype=pl.Int32),
        *[data.names.get_column(column).gather(code).alias(column) for column in ("name", "short", "key", "klass")],
        code.is_in(chosen_codes).alias("selected"),
        code.is_in(list(matched_codes)).alias("matched"),
    ).join(data.lanes.select("lane", "rank", "device", "track"), on="lane", how="left", maintain_order="left").select(
        "lane", "kind", "name", "short", "klass", "category", "start_ns", "end_ns", "bytes", "flops", "depth", "key",
        "selected", "matched", "rank", "device", "track")

    stack_rows = [(t, counts[("stack", t.stack)], ("stack", t.stack) in exact) for t in stacks]
    depth = [stack_depth_series(t, edges) for t, count, is_exact in stack_rows if count and not is_exact]
    frames = [stack_frames_in(t, start, end) for t, _, is_exact in stack_rows if is_exact]
    return TimelineView(
        start_ns=start, end_ns=end, run_start_ns=data.start_ns, run_end_ns=data.end_ns, buckets=buckets,
        lanes=lanes.select("lane", "group", "rank", "label", "track_id").with_columns(
            pl.col("lane").replace_strict({lane: counts.get(("lane", lane), 0) for lane in lane_ids},
                                          return_dtype=pl.Int64).alias("events"),
            pl.col("lane").is_in([lane for kind, lane in exact if kind == "lane"]).alias("exact")),
        cells=named_cells(raw_cells, data.names),
        events=events,
        copies=copy_series(copies, edges),
        stacks=pl.DataFrame(
            {"stack": [t.stack for t, _, _ in stack_rows], "rank": [t.rank for t, _, _ in stack_rows],
             "thread": [t.thread for t, _, _ in stack_rows], "label": [t.label for t, _, _ in stack_rows],
             "frames": [c for _, c, _ in stack_rows], "exact": [e for _, _, e in stack_rows]},
            schema={"stack": pl.Int32, "rank": pl.Int32, "thread": pl.Int64, "label": pl.String,
                    "frames": pl.Int64, "exact": pl.Boolean}),
        stack_depth=pl.concat(depth) if depth else pl.DataFrame(
            schema={"stack": pl.Int32, "bucket": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64,
                    "depth": pl.Int64}),
        stack_frames=pl.concat(frames) if frames else pl.DataFrame(
            schema={"function": pl.String, "depth": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64,
                    "stack": pl.Int32}),
        selected_keys=keys,
    )
