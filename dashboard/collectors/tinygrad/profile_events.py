"""profile.pkl (a list of Profile*Event records) -> one flat frame of timed events, as serve flattens them.

serve's `flatten_events`: a range spans `st + tdiff[device]` to `(en or st) + tdiff[device]`, a
point sits at `ts`, and a ProfileGraphEvent (a batch of kernels run as one graph) yields first a
synthetic range on the row `<backend> Graph` named `batched N`, from the earliest to the latest of
its entries, then each entry at `sigs[st_id] + tdiff .. sigs[en_id] + tdiff` (the signals are on
the device's clock; `tdiff` is the device's offset to the host's, its last ProfileDeviceEvent
winning; 0.12 has separate compute and copy offsets). Timestamps are Decimal microseconds with
nanosecond resolution: they become exact int64 ns here.

One Python pass over the events (each is a separate pickled object); everything after it is polars
(`profile.py`). The frame keeps each event's position in the flattened order (`position`), since
serve sorts a row's events by whole microseconds and keeps that order among equal ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl

from dashboard.collectors.tinygrad.records import is_record
from dashboard.collectors.tinygrad.values import itemsize, name_text

# Decimal µs past this (31 years) are damage, not a perf_counter reading.
_MAX_US = Decimal(10) ** 15
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "position": pl.Int64, "row": pl.String, "kind": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64,
    "name": pl.String, "profile_key": pl.Binary, "ret_bytes": pl.Int64, "is_copy": pl.Boolean, "point": pl.String,
    "key": pl.Int64, "item_bytes": pl.Int64, "var_vals": pl.Int64,
}


@dataclass
class FlatEvents:
    frame: pl.DataFrame
    var_vals: list[dict[str, int]]  # the distinct `var_vals` of exec points, indexed by the `var_vals` column
    damaged: int = 0  # events left out: not a profile event, or timestamps that are not times
    events: int = 0  # events in the file


def ns(value: Any) -> int | None:
    """Decimal (or int / float) microseconds -> int ns, None for anything that is not a usable time."""
    if type(value) is Decimal:
        if not value.is_finite() or abs(value) >= _MAX_US:
            return None
        return int((value * 1000).to_integral_value())
    if type(value) in (int, float) and abs(value) < 1e15 and value == value:
        return round(value * 1000)
    return None


def _tdiffs(events: Sequence[Any]) -> tuple[dict[str, int], dict[str, int]]:
    """(compute offset, copy offset) in ns per device; the last ProfileDeviceEvent of a device wins."""
    compute: dict[str, int] = {}
    copy: dict[str, int] = {}
    for event in events:
        if is_record(event, "ProfileDeviceEvent") and type(device := event.get("device")) is str:
            compute[device] = ns(event.get("tdiff", event.get("comp_tdiff"))) or 0
            copy_tdiff = ns(event.get("copy_tdiff"))  # 0.12 only; None there means "as compute"
            copy[device] = compute[device] if copy_tdiff is None else copy_tdiff
    return compute, copy


class _Columns:
    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {name: [] for name in EVENT_SCHEMA}

    def add(self, row: str, kind: str, start: int, end: int, name: Any = None, **extra: Any) -> None:
        values = self.values
        values["position"].append(len(values["position"]))
        values["row"].append(row)
        values["kind"].append(kind)
        values["start_ns"].append(start)
        values["end_ns"].append(end)
        values["name"].append(name_text(name))
        for column in ("profile_key", "ret_bytes", "is_copy", "point", "key", "item_bytes", "var_vals"):
            values[column].append(extra.get(column))


def _ret_bytes(name: Any) -> int | None:
    """A TracingKey whose `ret` is an int names a copy of that many bytes (serve shows B and B/s)."""
    ret = name.get("ret") if is_record(name, "TracingKey") else None
    return ret if type(ret) is int and 0 <= ret < 2**63 else None


def flatten(events: list[Any]) -> FlatEvents:
    compute, copy = _tdiffs(events)
    columns = _Columns()
    var_vals: dict[tuple[tuple[str, int], ...], int] = {}
    damaged = 0
    for event in events:
        kind = event.name
        device = event.get("device")
        if kind == "ProfileRangeEvent" and type(device) is str:
            is_copy = event.get("is_copy") is True
            offset = (copy if is_copy else compute).get(device, 0)
            start = ns(event.get("st"))
            end = start if event.get("en") is None else ns(event.get("en"))
            if start is None or end is None:
                damaged += 1
                continue
            name = event.get("name")
            key = event.get("profile_key")
            columns.add(device, "range", start + offset, end + offset, name, is_copy=is_copy,
                        profile_key=key if type(key) is bytes else None, ret_bytes=_ret_bytes(name))
        elif kind == "ProfilePointEvent" and type(device) is str:
            if (at := ns(event.get("ts"))) is None:
                damaged += 1
                continue
            point, arg = event.get("name"), event.get("arg")
            key = event.get("key")
            extra: dict[str, Any] = {"point": point if type(point) is str else None,
                                     "key": key if type(key) is int and -(2**63) <= key < 2**63 else None}
            if point == "alloc" and type(arg) is dict:
                size, width = arg.get("sz"), itemsize(arg.get("dtype"))
                if type(size) is int and size >= 0 and width is not None:
                    extra["item_bytes"] = min(size, 1_000_000_000_000) * width  # serve's cap on `sz`
            elif point == "exec" and type(arg) is dict and type(values := arg.get("var_vals")) is dict:
                known = tuple(sorted((k, v) for k, v in values.items() if type(k) is str and type(v) is int))
                extra["var_vals"] = var_vals.setdefault(known, len(var_vals))
            columns.add(device, "point", at, at, arg.get("name") if point == "marker" and type(arg) is dict else
                        point, **extra)
        elif kind == "ProfileGraphEvent":
            damaged += _flatten_graph(event, compute, copy, columns)
        elif kind != "ProfileDeviceEvent" and kind != "ProfileProgramEvent":
            damaged += 1  # an event class this reader does not know (SQTT / PMC counters): not a timeline event
    frame = pl.DataFrame(columns.values, schema=EVENT_SCHEMA)
    return FlatEvents(frame, [dict(key) for key in var_vals], damaged, len(events))


def _flatten_graph(event: Any, compute: dict[str, int], copy: dict[str, int], columns: _Columns) -> int:
    """Add a graph batch's synthetic range and its entries; returns how many entries were damaged."""
    entries, sigs = event.get("ents"), event.get("sigs")
    if type(entries) is not list or type(sigs) is not list or not entries:
        return 1
    times: list[tuple[Any, int, int]] = []
    damaged = 0
    for entry in entries:
        device = entry.get("device") if is_record(entry, "ProfileGraphEntry") else None
        first, last = (entry.get("st_id"), entry.get("en_id")) if device else (None, None)
        if type(device) is not str or type(first) is not int or type(last) is not int \
                or not (0 <= first < len(sigs) and 0 <= last < len(sigs)):
            damaged += 1
            continue
        start, end = ns(sigs[first]), ns(sigs[last])
        if start is None or end is None:
            damaged += 1
            continue
        offset = (copy if entry.get("is_copy") is True else compute).get(device, 0)
        times.append((entry, start + offset, end + offset))
    if not times:
        return damaged
    backend = times[0][0].get("device").split(":")[0]
    columns.add(f"{backend} Graph", "batch", min(t[1] for t in times), max(t[2] for t in times),
                f"batched {len(entries)}")
    for entry, start, end in times:
        name, key = entry.get("name"), entry.get("profile_key")
        columns.add(entry.get("device"), "entry", start, end, name, is_copy=entry.get("is_copy") is True,
                    profile_key=key if type(key) is bytes else None, ret_bytes=_ret_bytes(name))
    return damaged
