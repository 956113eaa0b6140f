"""Page events of `/memory` (plotly selections, zooms, clicks; control changes) as new view states.

Pure and Dash-free: a callback hands over what fired, gets a `views.memory.State` (or None: nothing to do).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from dashboard.views.chart_events import x_range_from_relayout
from dashboard.views.memory import State
from dashboard.views.memory_data import (
    DEFAULT_PEAKS,
    DEFAULT_UNIT,
    PEAK_VIEWS,
    UNITS,
    MemoryData,
    clamp_range,
    existing_op,
    op_summary,
)
from dashboard.views.params import parse_int


def parse_list(value: Any) -> tuple[str, ...]:
    """A multi-select's value (a list; or comma-separated text) as names in order, no repeats."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))


def _as_ops(low: float, high: float) -> tuple[int, int]:
    """Op indices covered by an x extent; a sliver between two ops takes the nearest op."""
    low, high = sorted((low, high))
    start, end = math.ceil(low), math.floor(high)
    if start > end:
        start = end = round((low + high) / 2)
    return start, end


def range_from_selection(selection: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The op range of a box selection (`selectedData.range.x*`); None for point selections."""
    ranges = (selection or {}).get("range") or {}
    for key, value in ranges.items():
        if key.startswith("x") and isinstance(value, list | tuple) and len(value) == 2:
            try:
                return _as_ops(float(value[0]), float(value[1]))
            except (TypeError, ValueError):
                return None
    return None


def range_from_relayout(relayout: Mapping[str, Any] | None) -> tuple[int, int] | str | None:
    """The op range an x-zoom asks for, "all" for a reset (autorange), None if it is not an x-zoom."""
    extent = x_range_from_relayout(relayout)
    if extent is None or extent == "all":
        return extent
    return _as_ops(*extent)


def op_from_click(click: Mapping[str, Any] | None) -> int | None:
    """The op index of a clicked point: customdata[0] (every memory trace carries it), else x."""
    points = (click or {}).get("points") or []
    if not points:
        return None
    custom = points[0].get("customdata")
    value = custom[0] if isinstance(custom, list | tuple) and custom else points[0].get("x")
    number = parse_int(value) if not isinstance(value, float) else int(value)
    return number


def after_event(data: MemoryData, state: State, kind: str, payload: Any) -> State | None:
    """The state after one page event; None when the event asks for nothing.

    kinds: select (box selection), relayout (x-zoom or reset), click (a curve point),
    growth (a growth bar: its op and op type), cell (a table cell), optype, program,
    unit, peaks (control values), clear-range, clear-op, peak (a peak card's buffer type).
    """
    if kind == "select":
        picked = clamp_range(data, range_from_selection(payload))
        return None if picked is None else replace(state, ops=picked)
    if kind == "relayout":
        asked = range_from_relayout(payload)
        if asked is None:
            return None
        if asked == "all":
            return replace(state, ops=None, zoom=None)
        window = clamp_range(data, asked)  # type: ignore[arg-type]
        return replace(state, ops=window, zoom=window)
    if kind in ("click", "growth", "cell"):
        if kind == "cell":
            raw = (payload or {}).get("rowId")
            op = existing_op(data, parse_int(raw if raw is not None else (payload or {}).get("value")))
        else:
            op = existing_op(data, op_from_click(payload))
        if op is None:
            return None
        if kind == "growth":
            summary = op_summary(data, op) or {}
            op_type = summary.get("op_type")
            return replace(state, op=op, optypes=(op_type,) if op_type else state.optypes)
        return replace(state, op=op)
    if kind == "optype":
        known = {name for name, _ in data.op_types}
        return replace(state, optypes=tuple(t for t in parse_list(payload) if t in known))
    if kind == "program":
        known = {name for name, _ in data.programs}
        return replace(state, programs=tuple(p for p in parse_list(payload) if p in known))
    if kind == "unit":
        return replace(state, unit=payload if payload in UNITS else DEFAULT_UNIT)
    if kind == "peaks":
        return replace(state, peaks=payload if payload in PEAK_VIEWS else DEFAULT_PEAKS)
    if kind == "clear-range":
        return replace(state, ops=None, zoom=None)
    if kind == "clear-op":
        return replace(state, op=None)
    if kind == "peak":
        found = data.peaks[state.peaks].filter(pl.col("buffer_type") == payload)
        culprit = found["culprit_op_index"][0] if found.height else None
        return None if culprit is None else replace(state, op=int(culprit))
    return None
