"""The `/memory` curves for a state: the whole figure, or only what changed between two states.

The curves figure is built once per (run, rank, unit, peak view) without any
state (`views.memory.base_figure`, a plain dict). A state reuses it: the range
band and selected-op line are shapes, the highlighted ops fill one marker trace
per track kept for them, and an x-zoom swaps the curve traces for the zoomed
window at full detail. `curves_changes` lists those pieces as (path, value)
pairs, which the page sends as a plotly Patch instead of the whole figure.
Dash-free; states are `views.memory.State`, read here through the `State` protocol below.
"""

from __future__ import annotations

from typing import Any, Protocol

from _plotly_utils.utils import to_typed_array_spec

from dashboard.figures.memory import mark_shapes, track_curves, track_points
from dashboard.views import memory_data as analysis
from dashboard.views.memory_data import MemoryData


class State(Protocol):
    """What the curves read of `views.memory.State` (which calls here, so it is named by shape, not imported)."""

    @property
    def ops(self) -> tuple[int, int] | None: ...
    @property
    def op(self) -> int | None: ...
    @property
    def optypes(self) -> tuple[str, ...]: ...
    @property
    def programs(self) -> tuple[str, ...]: ...
    @property
    def unit(self) -> str: ...
    @property
    def peaks(self) -> str: ...
    @property
    def zoom(self) -> tuple[int, int] | None: ...


Change = tuple[tuple[Any, ...], Any]  # a path into the figure dict and its new value


def _band(state: State) -> tuple[int, int] | None:
    """The brushed range as a band, unless it is the zoomed window itself (it would tint everything)."""
    return state.ops if state.ops is not None and state.ops != state.zoom else None


def _shapes(base: dict[str, Any], state: State) -> list[dict]:
    meta = base["layout"]["meta"]
    return list(base["layout"].get("shapes", ())) + mark_shapes(meta["rows"], _band(state), state.op)


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Trace values as plotly sends a figure's: numeric arrays base64-packed (plotly.js's typed-array
    spec), others as lists; so the page's figure and the export's (a go.Figure of it) are the same JSON."""
    return {key: (value.tolist() if value.dtype.kind == "O" else to_typed_array_spec(value))
            if getattr(value, "dtype", None) is not None else value for key, value in values.items()}


def _highlight_traces(data: MemoryData, base: dict[str, Any], state: State) -> dict[int, dict[str, Any]]:
    rows = analysis.highlight_rows(data, state.unit, state.optypes, state.programs, state.zoom)
    updates = {}
    for position, track in enumerate(base["layout"]["meta"]["tracks"]):
        frame = rows.get(track["buffer_type"])
        if frame is None or track.get("highlight") is None:
            continue
        points = track_points(frame, "allocated", track["divisor"], analysis.MAX_HIGHLIGHT_POINTS)
        updates[track["highlight"]] = {**_plain(points), "showlegend": position == 0 and frame.height > 0}
    return updates


def _curve_traces(data: MemoryData, base: dict[str, Any], state: State) -> dict[int, dict[str, Any]]:
    """The curve traces for the zoomed window at full detail, or the whole-run ones without a zoom."""
    meta = base["layout"]["meta"]
    indices = [track[c] for track in meta["tracks"] for c in ("allocated", "free", "largest_free")]
    indices += list(meta["fragmentation"].values())
    if state.zoom is None:
        return {i: {key: base["data"][i][key] for key in ("x", "y", "customdata") if key in base["data"][i]}
                for i in indices}
    rows = analysis.window_rows(data, state.unit, state.zoom)
    updates = {}
    for track in meta["tracks"]:
        curves = track_curves(rows[track["buffer_type"]], track["divisor"], analysis.MAX_ZOOM_POINTS)
        for column, points in curves.items():
            updates[track[column]] = _plain(points)
    for bt, index in meta["fragmentation"].items():
        updates[index] = _plain(track_points(rows[bt], "fragmentation", 0.01, analysis.MAX_ZOOM_POINTS,
                                             by="fragmentation"))
    return updates


def _x_range(base: dict[str, Any], state: State) -> dict[str, Any]:
    rows = base["layout"]["meta"]["rows"]
    axes = ["xaxis"] + [f"xaxis{row}" for row in range(2, rows + 1)]
    if state.zoom is None:
        return {axis: {"autorange": True} for axis in axes}
    return {axis: {"range": [state.zoom[0] - 0.5, state.zoom[1] + 0.5], "autorange": False} for axis in axes}


def curves_figure(data: MemoryData, base: dict[str, Any], state: State) -> dict[str, Any]:
    """The whole figure for a state (first load, a new unit or peak view, the PNG export)."""
    traces = list(base["data"])
    for index, values in _highlight_traces(data, base, state).items():
        traces[index] = {**traces[index], **values}
    if state.zoom is not None:
        for index, values in _curve_traces(data, base, state).items():
            traces[index] = {**traces[index], **values}
    layout = {**base["layout"], "shapes": _shapes(base, state)}
    for axis, settings in _x_range(base, state).items():
        layout[axis] = {**layout.get(axis, {}), **settings}
    return {**base, "data": traces, "layout": layout}


def curves_changes(data: MemoryData, base: dict[str, Any], state: State, before: State,
                   reset_token: str | None = None) -> list[Change]:
    """What changed between two states of one figure (same unit and peak view), path by path.

    `reset_token` also resets the x axes: plotly keeps a user's zoom across updates
    while `uirevision` stays the same, so a new one hands the axes back to the figure.
    """
    changes: list[Change] = []
    if reset_token is not None:
        changes.append((("layout", "uirevision"), f"{state.unit}-{state.peaks}-{reset_token}"))
        for axis, settings in _x_range(base, state).items():
            changes += [(("layout", axis, key), value) for key, value in settings.items()]
    if (_band(state), state.op) != (_band(before), before.op):
        changes.append((("layout", "shapes"), _shapes(base, state)))
    if (state.optypes, state.programs) != (before.optypes, before.programs) or (
            state.optypes and state.zoom != before.zoom):
        for index, values in _highlight_traces(data, base, state).items():
            changes += [(("data", index, key), value) for key, value in values.items()]
    if state.zoom != before.zoom:
        for index, values in _curve_traces(data, base, state).items():
            changes += [(("data", index, key), value) for key, value in values.items()]
    return changes
