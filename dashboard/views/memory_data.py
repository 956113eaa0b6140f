"""What the `/memory` page shows for one state: per-run prepared frames and filtered views.

No Dash here. The page's state (`views.memory.State`, events applied by
`views.memory_events`) picks the range, op and filters; the functions below
give the frames that `figures.memory` draws.

Speed on 100 k-op runs: `prepare` does the whole-run work once per run (deltas,
curves in both units, peaks in both views, the op list); every view after it
slices by op range with a binary search on the op-ordered frames, and the
results are kept in small LRU caches keyed by (prepared run, filters). The
prepared run is hashed by identity (`eq=False`), so one cached `MemoryData` per
run (the page keeps it in its own LRU cache) is the cache key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboard.analysis import memory as analysis
from dashboard.views.cache import per_run

UNITS = {"bank": "per bank", "device": "device total"}
PEAK_VIEWS = {"all": "true peak", "profiler": "profiler's view"}
DEFAULT_UNIT, DEFAULT_PEAKS = "bank", "all"
MAX_CURVE_POINTS = 2000  # per curve of the whole run: ~2 points per pixel column of a wide chart
MAX_ZOOM_POINTS = 1200  # per curve of a zoomed window: exact up to 1,200 ops
MAX_HIGHLIGHT_POINTS = 800  # highlighted ops marked per track (extremes kept when there are more)
MAX_TABLE_BLOCK = 1000  # rows per request of the infinite-scroll table
TOP_GROWTH = 10


@dataclass(frozen=True, eq=False)
class MemoryData:
    """One rank of one run, prepared once: everything else is a slice or filter of these."""

    rank: int
    op_memory: pl.DataFrame  # this rank, in op order, with per-op deltas
    op_meta: pl.DataFrame | None
    ops: pl.DataFrame  # one row per op: op_index, program, op_type, mlir_op, loc, housekeeping
    growth: pl.DataFrame  # snapshots whose op left memory behind (delta > 0)
    curves: Mapping[str, Mapping[str, pl.DataFrame]]  # unit -> buffer type -> analysis.memory_curves rows
    peaks: Mapping[str, pl.DataFrame]  # peak view -> analysis.peaks
    buffer_types: tuple[str, ...]  # drawn ones (capacity > 0), display order
    op_types: tuple[tuple[str, int], ...]  # (op type, ops), most frequent first; housekeeping left out
    programs: tuple[tuple[str, int], ...]

    @property
    def first_op(self) -> int:
        return int(self.ops["op_index"][0]) if self.ops.height else 0

    @property
    def last_op(self) -> int:
        return int(self.ops["op_index"][-1]) if self.ops.height else 0


def parse_int(text: Any) -> int | None:
    try:
        return int(str(text))
    except (TypeError, ValueError):
        return None


# ---- preparing a run ----------------------------------------------------------------------------

def ranks_of(op_memory: pl.DataFrame) -> list[int]:
    return sorted(int(r) for r in op_memory["rank"].unique().drop_nulls()) if op_memory.height else []


def _counts(ops: pl.DataFrame, column: str) -> tuple[tuple[str, int], ...]:
    counted = ops.filter(pl.col(column).is_not_null()).group_by(column).len().sort(
        ["len", column], descending=[True, False])
    return tuple((str(name), int(n)) for name, n in counted.iter_rows())


def prepare(op_memory: pl.DataFrame, op_meta: pl.DataFrame | None, rank: int = 0) -> MemoryData:
    """The whole-run work, done once: deltas, curves (both units), peaks (both views), op list."""
    mine = analysis.with_deltas(op_memory.filter(pl.col("rank") == rank))
    drawn = set(mine.filter(pl.col("total_per_bank") > 0)["buffer_type"].unique())
    # A buffer type without capacity (no TRACE region) has nothing to show: left out from here on.
    mine = mine.filter(pl.col("buffer_type").is_in(drawn))
    ops = mine.filter((pl.col("op_index") != pl.col("op_index").shift(1)).fill_null(True)).select(
        "op_index", "program", "op_type", "mlir_op", "loc", analysis.housekeeping().alias("housekeeping"))
    buffer_types = tuple([bt for bt in analysis.BUFFER_ORDER if bt in drawn]
                         + sorted(drawn - set(analysis.BUFFER_ORDER)))
    curves = {}
    for unit in UNITS:
        frame = analysis.memory_curves(mine, per_bank=unit == "bank")
        curves[unit] = {bt: frame.filter(pl.col("buffer_type") == bt) for bt in buffer_types}
    meta = op_meta.filter(pl.col("rank") == rank) if op_meta is not None and op_meta.height else None
    if meta is not None and not meta["op_index"].is_sorted():
        meta = meta.sort("op_index", maintain_order=True)  # op slices are binary searches
    computing = ops.filter(~pl.col("housekeeping"))
    return MemoryData(
        rank=rank, op_memory=mine, op_meta=meta, ops=ops,
        growth=mine.filter(pl.col("delta_per_bank") > 0),
        curves=curves,
        peaks={"all": analysis.peaks(mine), "profiler": analysis.peaks(mine, housekeeping_snapshots=False)},
        buffer_types=buffer_types,
        op_types=_counts(computing, "op_type"),
        programs=_counts(computing, "program"),
    )


def _rows_between(frame: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    """Rows with start <= op_index <= end of an op-ordered frame (binary search, no scan)."""
    index = frame["op_index"]
    low = int(index.search_sorted(start, side="left"))
    high = int(index.search_sorted(end, side="right"))
    return frame.slice(low, high - low)


# ---- the views ----------------------------------------------------------------------------------

@per_run(8)
def op_table(data: MemoryData, unit: str) -> pl.DataFrame:
    """One row per computing op: allocated before and delta per drawn buffer type, shapes."""
    table = analysis.op_table(data.op_memory, data.op_meta, per_bank=unit == "bank")
    undrawn = [c for c in table.columns if c.endswith(("_allocated", "_delta"))
               and c.rsplit("_", 1)[0] not in data.buffer_types]
    return table.drop(undrawn, "rank", "is_weight_op", "const_eval_graph", strict=False)


def _filter(frame: pl.DataFrame, ops: tuple[int, int] | None, optypes: tuple[str, ...] = (),
            programs: tuple[str, ...] = ()) -> pl.DataFrame:
    if ops is not None:
        frame = _rows_between(frame, *ops)
    return analysis.filter_ops(frame, op_types=optypes or None, programs=programs or None)


@per_run(32)
def table_view(data: MemoryData, unit: str, ops: tuple[int, int] | None, optypes: tuple[str, ...],
               programs: tuple[str, ...], sort: tuple[tuple[str, bool], ...] = ()) -> pl.DataFrame:
    """The ops table for a range and filters, sorted as the grid asks (op order by default)."""
    frame = _filter(op_table(data, unit), ops, optypes, programs)
    known = [(column, descending) for column, descending in sort if column in frame.columns]
    if known:
        frame = frame.sort([c for c, _ in known], descending=[d for _, d in known], nulls_last=True,
                           maintain_order=True)
    return frame


def sort_key(sort_model: Sequence[Mapping[str, Any]] | None) -> tuple[tuple[str, bool], ...]:
    """The grid's sortModel ([{colId, sort}]) as a hashable key."""
    return tuple((str(item.get("colId")), item.get("sort") == "desc") for item in sort_model or []
                 if item.get("colId") and item.get("sort") in ("asc", "desc"))


def table_block(frame: pl.DataFrame, start: Any, end: Any) -> list[dict[str, Any]]:
    """Rows start..end (exclusive) of the table, at most MAX_TABLE_BLOCK of them."""
    first = max(parse_int(start) or 0, 0)
    last = min(parse_int(end) or first + 100, first + MAX_TABLE_BLOCK)
    return frame.slice(first, max(last - first, 0)).to_dicts()


def table_csv(frame: pl.DataFrame, per_bank: bool) -> str:
    """The table as CSV, sizes in bytes with the unit in each column name."""
    suffix = "_bytes_per_bank" if per_bank else "_bytes_device"
    renamed = {c: c + suffix for c in frame.columns if c.endswith(("_allocated", "_delta"))}
    return frame.rename(renamed).write_csv()


@per_run(32)
def growth_view(data: MemoryData, ops: tuple[int, int] | None, programs: tuple[str, ...],
                n: int = TOP_GROWTH) -> pl.DataFrame:
    """Top-n ops by memory left behind per buffer type, within the range and programs."""
    frame = _filter(data.growth, ops, programs=programs)
    return analysis.top_growth(frame, n=n, buffer_types=data.buffer_types)


@per_run(32)
def range_view(data: MemoryData, ops: tuple[int, int] | None) -> pl.DataFrame:
    """`analysis.range_stats` over the brushed range (the whole run without one), drawn types only."""
    start, end = ops if ops is not None else (data.first_op, data.last_op)
    # The op after the range is kept so the last op's delta is known.
    sliced = _rows_between(data.op_memory, start, end + 1)
    stats = analysis.range_stats(sliced, start, end, rank=data.rank)
    return stats.filter(pl.col("buffer_type").is_in(data.buffer_types))


def op_detail(data: MemoryData, op: int) -> pl.DataFrame:
    """`analysis.op_detail` of one op (its snapshot and the next one only are read)."""
    sliced = _rows_between(data.op_memory, op, op + 1)
    meta = None if data.op_meta is None else _rows_between(data.op_meta, op, op)
    detail = analysis.op_detail(sliced, meta, op, rank=data.rank)
    return detail.filter(pl.col("buffer_type").is_in(data.buffer_types))


def op_summary(data: MemoryData, op: int) -> dict[str, Any] | None:
    """Program, op type, MLIR op and loc of one op (None when it does not exist)."""
    row = _rows_between(data.ops, op, op)
    return row.row(0, named=True) if row.height else None


@per_run(32)
def highlighted_ops(data: MemoryData, optypes: tuple[str, ...], programs: tuple[str, ...]) -> pl.Series:
    """Op indices of the selected op types (within the selected programs); empty without types."""
    if not optypes:
        return pl.Series("op_index", [], pl.Int64)
    return analysis.filter_ops(data.ops, op_types=optypes, programs=programs or None)["op_index"]


@per_run(32)
def highlight_rows(data: MemoryData, unit: str, optypes: tuple[str, ...], programs: tuple[str, ...],
                   window: tuple[int, int] | None = None) -> dict[str, pl.DataFrame]:
    """Per drawn buffer type, the curve rows of highlighted ops (in the zoomed window, if any).

    Beyond MAX_HIGHLIGHT_POINTS per track the extremes are kept, so a zoom shows every one again.
    """
    ops = highlighted_ops(data, optypes, programs)
    chosen = {}
    for bt, curve in data.curves[unit].items():
        inside = curve if window is None else _rows_between(curve, *window)
        chosen[bt] = analysis.downsample(inside.filter(pl.col("op_index").is_in(ops.implode())), "allocated",
                                         MAX_HIGHLIGHT_POINTS)
    return chosen


def window_rows(data: MemoryData, unit: str, window: tuple[int, int]) -> dict[str, pl.DataFrame]:
    """Per drawn buffer type, the curve rows in an x-zoom window (one op beyond each edge)."""
    return {bt: _rows_between(curve, window[0] - 1, window[1] + 1) for bt, curve in data.curves[unit].items()}


def clamp_range(data: MemoryData, op_range: tuple[int, int] | None) -> tuple[int, int] | None:
    if op_range is None or op_range[1] < data.first_op or op_range[0] > data.last_op:
        return None
    return max(op_range[0], data.first_op), min(op_range[1], data.last_op)


def existing_op(data: MemoryData, op: int | None) -> int | None:
    return op if op is not None and data.first_op <= op <= data.last_op else None
