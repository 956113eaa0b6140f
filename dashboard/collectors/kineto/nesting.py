"""Interval nesting on threads, computed with sorts and joins instead of a stack.

Within one thread (a "track") profiler ranges nest: an op encloses the ops it
calls. With the intervals sorted by (start ascending, end descending) the
ancestors of an interval are exactly the intervals that started before it and
are still open at its start, so

    depth = (intervals started before it) - (intervals closed by its start)

and its parent is the last interval before it, in that order, one level up.
Both counts come from an as-of join, the parent from another one: no Python
loop over events. Sampled or rounded traces can break the nesting (a child
ending a microsecond after its parent); a parent that is not open at its
child's start is then replaced by its own parent until one is, and depths
are recomputed from the repaired tree.

Trees are handled as `row` -> `parent_row` pointers into one frame; the
`inherit` helper answers "nearest ancestor-or-self with a value" for every
row at once by pointer jumping (log₂(depth) rounds of gathers).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

ROW = "row"
PARENT = "parent_row"
DEPTH = "depth"
_TRACK = "_track"  # one integer per track, numbered in a frame sorted by track
_MAX_REPAIR_ROUNDS = 256


def _is_open_at(end: pl.Expr, start: pl.Expr, at: pl.Expr) -> pl.Expr:
    """An interval [start, end] is open at `at` (a zero-length one only at its own instant)."""
    return (end > at) | ((end == at) & (start == at))


def nest(frame: pl.DataFrame, track: Sequence[str], order: Sequence[str] = ()) -> pl.DataFrame:
    """Sort `frame` into nesting order and add `row`, `parent_row` and `depth`.

    `track` names the columns that identify a thread; `order` breaks ties
    between intervals with equal start and end (earlier sorts outside).
    """
    track = list(track)
    keys = [*track, "start_ns", "end_ns", *order]
    descending = [False] * len(track) + [False, True] + [False] * len(order)
    # A key with one value everywhere (one file, one process, no Python ids) orders nothing, and every key
    # costs the multi-column sort: half of it went on three such keys in a 300 k-range trace.
    varying = _varying(frame, keys)
    keys, descending = [k for k in keys if varying[k]], [d for k, d in zip(keys, descending, strict=True) if varying[k]]
    ordered = frame.sort(keys, descending=descending, nulls_last=True, maintain_order=True) if keys else frame
    ordered = ordered.with_row_index(ROW)
    ordered = ordered.with_columns(pl.col(ROW).cast(pl.Int64))
    if ordered.height == 0:
        return ordered.with_columns(pl.lit(None, pl.Int64).alias(PARENT), pl.lit(0, pl.Int32).alias(DEPTH))

    # Tracks are contiguous in `ordered`: one integer per track and the row where it begins
    # stand in for the track columns below (multi-column sorts and joins cost ~4x more).
    new_track = track_starts(track)
    work = ordered.select(
        ROW, "start_ns", "end_ns",
        new_track.cum_sum().cast(pl.Int64).alias(_TRACK),
        pl.when(new_track).then(pl.col(ROW)).forward_fill().alias("_first"),
    )
    # Ends sorted within each track occupy the same positions as the track's rows, so the
    # number of the track's intervals closed up to an end is its position minus the track's first.
    ends = work.select(_TRACK, "end_ns", "_first").sort([_TRACK, "end_ns"]).select(
        _TRACK, "end_ns", (pl.int_range(1, pl.len() + 1, dtype=pl.Int64) - pl.col("_first")).alias("_closed")
    )
    zero_length = (
        work.filter(pl.col("start_ns") == pl.col("end_ns"))
        .group_by([_TRACK, "start_ns"])
        .agg(pl.len().cast(pl.Int64).alias("_zero"))
    )
    counted = (
        work.join_asof(
            ends,
            left_on="start_ns",
            right_on="end_ns",
            by=_TRACK,
            strategy="backward",
            check_sortedness=False,
        )
        .join(zero_length, on=[_TRACK, "start_ns"], how="left", maintain_order="left")
        .select(
            pl.col(_TRACK),
            (pl.col(ROW) - pl.col("_first") - pl.col("_closed").fill_null(0) + pl.col("_zero").fill_null(0))
            .cast(pl.Int32)
            .alias(DEPTH),
        )
    )
    ordered = ordered.with_columns(counted.get_column(DEPTH))
    return _repair(ordered.with_columns(_parents_by_level(ordered, counted)))


def _varying(frame: pl.DataFrame, columns: Sequence[str]) -> dict[str, bool]:
    """Per column: does it hold more than one value (nulls count as one)?"""
    if frame.height < 2:
        return dict.fromkeys(columns, False)
    checks = frame.select(
        ((pl.col(c).min() != pl.col(c).max()) | pl.col(c).null_count().is_between(1, frame.height - 1))
        .fill_null(False).alias(c)
        for c in columns
    ).row(0)
    return dict(zip(columns, checks, strict=True))


def track_starts(track: Sequence[str]) -> pl.Expr:
    """True on the first row of each track of a frame sorted by track."""
    return pl.any_horizontal(*(pl.col(c).ne_missing(pl.col(c).shift()) for c in track)).fill_null(True)


def _parents_by_level(ordered: pl.DataFrame, counted: pl.DataFrame) -> pl.Series:
    """The last row before each row, in nesting order, one level up on the same track."""
    # (track, depth) as one integer: a stable single-key sort keeps rows in order within a level.
    # Offsets keep every depth and depth - 1 of a track inside that track's block of keys.
    depth = counted.get_column(DEPTH)
    lowest = int(depth.min() or 0) - 1  # type: ignore[arg-type]
    levels_per_track = int(depth.max() or 0) - lowest + 1  # type: ignore[arg-type]
    level = (pl.col(_TRACK) * levels_per_track + pl.col(DEPTH).cast(pl.Int64) - lowest).alias("_level")
    rows = counted.select(level, ordered.get_column(ROW))
    right = rows.sort("_level", maintain_order=True).select("_level", pl.col(ROW).alias(PARENT),
                                                             pl.col(ROW).alias("_at"))
    left = rows.select((pl.col("_level") - 1).alias("_level"), ROW)
    joined = left.join_asof(
        right,
        left_on=ROW,
        right_on="_at",
        by="_level",
        strategy="backward",
        check_sortedness=False,
    )
    return joined.get_column(PARENT)


def _open_at(starts: pl.Series, ends: pl.Series, rows: pl.Series, at: pl.Series) -> pl.Series:
    """Per entry: is range `rows[i]` open at time `at[i]` (null where `rows[i]` is null)."""
    frame = pl.DataFrame({"start": starts.gather(rows), "end": ends.gather(rows), "at": at})
    return frame.select(_is_open_at(pl.col("end"), pl.col("start"), pl.col("at"))).to_series()


def _repair(ordered: pl.DataFrame) -> pl.DataFrame:
    """Climb from parents that are not open at their child's start; recompute depth if any moved."""
    starts = ordered.get_column("start_ns")
    ends = ordered.get_column("end_ns")
    parent = ordered.get_column(PARENT)
    moved = False
    for _ in range(_MAX_REPAIR_ROUNDS):
        bad = parent.is_not_null() & ~_open_at(starts, ends, parent, starts).fill_null(False)
        if not bad.any():
            break
        moved = True
        parent = _where(bad, parent.gather(parent), parent)
    if moved:
        ordered = ordered.with_columns(parent.alias(PARENT), depth_from_parents(parent).alias(DEPTH))
    return ordered


def _where(condition: pl.Series, then: pl.Series, otherwise: pl.Series) -> pl.Series:
    return otherwise.zip_with(~condition, then)


def depth_from_parents(parent: pl.Series) -> pl.Series:
    """Number of ancestors of every row, by pointer jumping."""
    depth = parent.is_not_null().cast(pl.Int32)
    ancestor = parent
    while ancestor.is_not_null().any():
        depth = depth + depth.gather(ancestor).fill_null(0) * ancestor.is_not_null().cast(pl.Int32)
        ancestor = ancestor.gather(ancestor)
    return depth.cast(pl.Int32)


def inherit(values: pl.Series, parent: pl.Series) -> pl.Series:
    """For every row, its own value or else the nearest ancestor's non-null value."""
    ancestor = parent
    while True:
        pending = values.is_null() & ancestor.is_not_null()
        if not pending.any():
            return values
        values = values.fill_null(values.gather(ancestor))
        ancestor = ancestor.gather(ancestor)


def flag_inherited(flags: pl.Series, parent: pl.Series) -> pl.Series:
    """True where the row or any of its ancestors is flagged."""
    marked = flags.to_frame("flag").select(pl.when(pl.col("flag")).then(True)).to_series()
    return inherit(marked, parent).fill_null(False)


def enclosing(
    points: pl.DataFrame,
    ranges: pl.DataFrame,
    track: Sequence[str],
    eligible: pl.Series,
) -> pl.Series:
    """For each point (`start_ns` on a track), the innermost eligible range open at it.

    `ranges` is the output of `nest` (sorted, with `row` / `parent_row`);
    `eligible` says per range row whether it may be the answer. Returns the
    range `row` per point, in the points' order, null where none encloses it.
    """
    track = list(track)
    # One integer per track: `ranges` is sorted by track, and single-key sorts and joins
    # cost a third of those on several columns.
    new_track = track_starts(track)
    numbered = ranges.select(*track, pl.col("start_ns").alias("_range_start"), ROW, new_track.alias("_new"))
    numbered = numbered.with_columns(pl.col("_new").cum_sum().cast(pl.Int64).alias(_TRACK))
    tracks = numbered.filter(pl.col("_new")).select(*track, _TRACK)
    right = numbered.select(_TRACK, "_range_start", ROW)
    left = (
        points.select([*track, "start_ns"])
        .with_row_index("_point")
        .join(tracks, on=track, how="left", maintain_order="left")
        .select("_point", _TRACK, "start_ns")
        .sort("start_ns", maintain_order=True)
        .sort(_TRACK, maintain_order=True, nulls_last=True)  # stable: by track, then start
    )
    candidate = left.join_asof(
        right,
        left_on="start_ns",
        right_on="_range_start",
        by=_TRACK,
        strategy="backward",
        check_sortedness=False,
    )
    at = candidate.get_column("start_ns")
    row = candidate.get_column(ROW)
    starts = ranges.get_column("start_ns")
    ends = ranges.get_column("end_ns")
    parent = ranges.get_column(PARENT)
    for _ in range(_MAX_REPAIR_ROUNDS):
        fits = _open_at(starts, ends, row, at) & eligible.gather(row)
        bad = row.is_not_null() & ~fits.fill_null(False)
        if not bad.any():
            break
        row = _where(bad, parent.gather(row), row)
    result = pl.DataFrame({"_point": candidate.get_column("_point"), ROW: row}).sort("_point")
    return result.get_column(ROW)
