"""Flows: which CPU call launched which GPU kernel or copy, as Perfetto draws them.

A CUDA runtime / driver call and the kernel or copy it launched share a
correlation id on one rank (CUPTI's, kept by Kineto, Nsight Systems and live
capture alike); `launch_pairs` is that join, used by the timeline and by the
Perfetto export. The op that launched a kernel is the innermost CPU range on
the launching call's thread that encloses the call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import polars as pl

from dashboard.analysis.timeline import FLOW_SCHEMA, TimelineData

LAUNCH_KEYS = ["rank", "correlation"]
MAX_EVENT_FLOWS = 500  # arrows drawn from one selected op (it lists every kernel it launched)
_BUILD_LOCK = threading.Lock()


def launch_pairs(callers: pl.DataFrame, targets: pl.DataFrame) -> pl.DataFrame:
    """Each API call joined with the kernels / copies it launched: same rank and correlation id.

    Both frames need `rank` and `correlation`; a null or 0 correlation links nothing (sources write 0
    where the call launched nothing). The other columns of both come along (`targets`' suffixed
    `_target` where names clash).
    """
    linked = pl.col("correlation").is_not_null() & (pl.col("correlation") != 0)
    return callers.filter(linked).join(targets.filter(linked), on=LAUNCH_KEYS, how="inner", suffix="_target")


@dataclass(frozen=True)
class LaunchLinks:
    """The launch pairs of an indexed run as positions in TimelineData.events."""

    api_rows: np.ndarray  # per pair, ascending
    target_rows: np.ndarray  # per pair
    by_target: np.ndarray  # pair positions in target_rows order
    sorted_targets: np.ndarray  # target_rows[by_target]
    by_start: np.ndarray  # pair positions in target start order
    target_starts: np.ndarray  # target start_ns in that order

    def of_target(self, row: int) -> np.ndarray:
        """The API rows that launched the event at `row`."""
        low, high = np.searchsorted(self.sorted_targets, [row, row + 1])
        return self.api_rows[self.by_target[low:high]]

    def of_calls(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(API row, target row) of the pairs launched by any of the API rows."""
        low = np.searchsorted(self.api_rows, rows, side="left")
        high = np.searchsorted(self.api_rows, rows, side="right")
        positions = np.concatenate([np.arange(a, b) for a, b in zip(low, high, strict=True)]) if len(rows) else []
        positions = np.asarray(positions, dtype=np.int64)
        return self.api_rows[positions], self.target_rows[positions]


def launch_links(data: TimelineData) -> LaunchLinks:
    """The run's launch pairs, joined on first use and kept with the indexed run."""
    with _BUILD_LOCK:
        if "launches" not in data.derived:
            data.derived["launches"] = _build(data)
        return data.derived["launches"]


def lane_ranks(data: TimelineData) -> np.ndarray:
    """Rank of each lane id (an array indexed by lane)."""
    lanes = data.lanes.get_column("lane").to_numpy()
    ranks = np.zeros(int(lanes.max()) + 1 if len(lanes) else 0, dtype=np.int32)
    ranks[lanes] = data.lanes.get_column("rank").fill_null(0).to_numpy()
    return ranks


def _build(data: TimelineData) -> LaunchLinks:
    events = data.events
    ranks = lane_ranks(data)
    rank = pl.Series("rank", ranks[events.get_column("lane").to_numpy()] if len(ranks) else [], dtype=pl.Int32)
    coded = events.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"), "kind", "correlation", "start_ns"
                          ).with_columns(rank)
    callers = coded.filter(pl.col("kind") == "api").select(pl.col("row").alias("api_row"), *LAUNCH_KEYS)
    targets = coded.filter(pl.col("kind").is_in(["kernel", "memcpy"])).select(
        pl.col("row").alias("target_row"), pl.col("start_ns").alias("target_start"), *LAUNCH_KEYS)
    pairs = launch_pairs(callers, targets).sort("api_row", "target_row")
    api_rows = pairs.get_column("api_row").to_numpy()
    target_rows = pairs.get_column("target_row").to_numpy()
    starts = pairs.get_column("target_start").to_numpy()
    by_target = np.argsort(target_rows, kind="stable")
    by_start = np.argsort(starts, kind="stable")
    return LaunchLinks(api_rows, target_rows, by_target, target_rows[by_target], by_start, starts[by_start])


def _flows(kind: str, from_rows: np.ndarray, to_rows: np.ndarray, from_ns: np.ndarray | None,
           data: TimelineData) -> pl.DataFrame:
    lane = data.events.get_column("lane").to_numpy()
    start = data.events.get_column("start_ns").to_numpy()
    return pl.DataFrame({
        "kind": kind, "from_lane": lane[from_rows], "from_ns": start[from_rows] if from_ns is None else from_ns,
        "to_lane": lane[to_rows], "to_ns": start[to_rows]}, schema=FLOW_SCHEMA)


def window_flows(data: TimelineData, lanes: np.ndarray, start_ns: int, end_ns: int,
                 limit: int | None = None) -> tuple[pl.DataFrame, int]:
    """Launch arrows (kind `window`) to the kernels and copies starting in a window, between lanes shown;
    and their count.

    With `limit`, no more than that many arrows are returned (the count is still exact).
    """
    links = launch_links(data)
    low, high = np.searchsorted(links.target_starts, [start_ns, end_ns])
    pairs = links.by_start[low:high]
    lane = data.events.get_column("lane").to_numpy()
    shown = np.zeros(len(lane_ranks(data)), dtype=bool)
    shown[lanes] = True
    keep = pairs[shown[lane[links.api_rows[pairs]]] & shown[lane[links.target_rows[pairs]]]]
    count = len(keep)
    if limit is not None:
        keep = keep[:limit]
    return _flows("window", links.api_rows[keep], links.target_rows[keep], None, data), count


def targets_starting(data: TimelineData, lanes: np.ndarray, start_ns: int, end_ns: int) -> int:
    """Kernels and copies starting in a window on the given lanes: at least as many as their launch arrows,
    and counted from the lanes' indexes without joining a single launch (which costs ~0.3 s at 1 M)."""
    gpu = set(data.lanes.filter(pl.col("group") == "gpu").get_column("lane").to_list())
    total = 0
    for lane in set(lanes.tolist()) & gpu:
        index = data.indexes.get(lane)
        if index is not None:
            low, high = np.searchsorted(index.starts, [start_ns, end_ns])
            total += int(high - low)
    return total


def launching_op(data: TimelineData, api_row: int) -> int | None:
    """The innermost CPU range on the API call's thread enclosing its start (its row), if any."""
    events = data.events
    api_lane = int(events.get_column("lane")[api_row])
    lane = data.lanes.filter(pl.col("lane") == api_lane).row(0, named=True)
    flame = data.lanes.filter((pl.col("group") == "cpu") & (pl.col("rank") == lane["rank"])
                              & (pl.col("track") == lane["track"])).get_column("lane").to_list()
    at = int(events.get_column("start_ns")[api_row])
    candidates = [data.indexes[number].rows[data.indexes[number].overlapping(at, at + 1)]
                  for number in flame if number in data.indexes]
    rows = np.concatenate(candidates) if candidates else np.zeros(0, dtype=np.int64)
    if not len(rows):
        return None
    found = events[pl.Series(rows, dtype=pl.Int64)].with_columns(pl.Series("row", rows))
    found = found.filter(pl.col("end_ns") >= at).sort(["depth", "start_ns"], descending=True, nulls_last=True)
    return int(found.get_column("row")[0]) if found.height else None


def calls_inside(data: TimelineData, row: int) -> np.ndarray:
    """API rows on the range's thread that start inside it (the range's own launches and its callees')."""
    events = data.events
    lane = data.lanes.filter(pl.col("lane") == int(events.get_column("lane")[row])).row(0, named=True)
    api = data.lanes.filter((pl.col("group") == "api") & (pl.col("rank") == lane["rank"])
                            & (pl.col("track") == lane["track"])).get_column("lane").to_list()
    start, end = int(events.get_column("start_ns")[row]), int(events.get_column("end_ns")[row])
    found = []
    for number in api:
        index = data.indexes.get(number)
        if index is not None:
            low, high = np.searchsorted(index.starts, [start, end + 1])
            found.append(index.rows[low:high])
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class EventLinks:
    """What a selected event launched or was launched by."""

    flows: pl.DataFrame  # FLOW_SCHEMA: launch (API call -> kernel) and op (op -> kernel) arrows
    launch_row: int | None  # the API call that launched the event
    op_row: int | None  # the op that made that call
    launched: pl.DataFrame  # target rows the event launched: row, lane, name code, start_ns, end_ns
    total_launched: int


def event_links(data: TimelineData, row: int) -> EventLinks:
    """The arrows of a selected event: a kernel or copy from its API call and its op; an API call to
    what it launched; an op (or any CPU range) to every kernel and copy launched inside it."""
    links = launch_links(data)
    kind = str(data.events.get_column("kind")[row])
    start = data.events.get_column("start_ns").to_numpy()
    empty = np.zeros(0, dtype=np.int64)
    if kind in ("kernel", "memcpy"):
        calls = links.of_target(row)
        launch = int(calls[0]) if len(calls) else None
        op = launching_op(data, launch) if launch is not None else None
        flows = [_flows("launch", calls[:1], np.array([row]), None, data)] if launch is not None else []
        if op is not None and launch is not None:
            flows.append(_flows("op", np.array([op]), np.array([row]), start[[launch]], data))
        return EventLinks(_concat(flows), launch, op, _targets(data, empty), 0)
    if kind == "api":
        calls, targets = links.of_calls(np.array([row]))
        op = launching_op(data, row)
        flows = [_flows("launch", calls, targets, None, data)]
        if op is not None and len(targets):
            flows.append(_flows("op", np.full(len(targets), op), targets, start[calls], data))
        return EventLinks(_concat(flows), row, op, _targets(data, targets), len(targets))
    if kind in ("range", "step"):
        calls, targets = links.of_calls(calls_inside(data, row))
        shown = slice(0, MAX_EVENT_FLOWS)
        flows = _flows("op", np.full(len(targets[shown]), row), targets[shown], start[calls[shown]], data)
        return EventLinks(flows, None, None, _targets(data, targets), len(targets))
    return EventLinks(pl.DataFrame(schema=FLOW_SCHEMA), None, None, _targets(data, empty), 0)


def _concat(flows: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(flows) if flows else pl.DataFrame(schema=FLOW_SCHEMA)


def _targets(data: TimelineData, rows: np.ndarray) -> pl.DataFrame:
    return data.events[pl.Series(rows, dtype=pl.Int64)].select(
        pl.Series("row", rows, dtype=pl.Int64), "lane", "code", "kind", "start_ns", "end_ns")
