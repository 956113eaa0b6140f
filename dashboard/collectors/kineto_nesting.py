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
    ordered = frame.sort(keys, descending=descending, nulls_last=True, maintain_order=True).with_row_index(ROW)
    ordered = ordered.with_columns(pl.col(ROW).cast(pl.Int64))
    if ordered.height == 0:
        return ordered.with_columns(pl.lit(None, pl.Int64).alias(PARENT), pl.lit(0, pl.Int32).alias(DEPTH))

    ends = (
        ordered.select([*track, "end_ns"])
        .sort([*track, "end_ns"])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(track).alias("_closed"))
    )
    zero_length = (
        ordered.filter(pl.col("start_ns") == pl.col("end_ns"))
        .group_by([*track, "start_ns"])
        .agg(pl.len().cast(pl.Int64).alias("_zero"))
    )
    counted = (
        ordered.select([*track, ROW, "start_ns"])
        .join_asof(
            ends,
            left_on="start_ns",
            right_on="end_ns",
            by=track,
            strategy="backward",
            check_sortedness=False,
        )
        .join(zero_length, on=[*track, "start_ns"], how="left", maintain_order="left")
        .select(
            (
                pl.col(ROW)
                - pl.col(ROW).min().over(track)
                - pl.col("_closed").fill_null(0)
                + pl.col("_zero").fill_null(0)
            )
            .cast(pl.Int32)
            .alias(DEPTH)
        )
    )
    ordered = ordered.with_columns(counted.get_column(DEPTH))
    levels = ordered.select([*track, DEPTH, ROW]).sort([*track, DEPTH, ROW]).rename({ROW: PARENT})
    ordered = ordered.with_columns(_parents_by_level(ordered, track, levels))
    return _repair(ordered)


def _parents_by_level(ordered: pl.DataFrame, track: list[str], levels: pl.DataFrame) -> pl.Series:
    """The last row before each row, in nesting order, one level up on the same track."""
    left = ordered.select([*track, ROW, (pl.col(DEPTH) - 1).alias(DEPTH)])
    right = levels.with_columns(pl.col(PARENT).alias("_at"))
    joined = left.join_asof(
        right,
        left_on=ROW,
        right_on="_at",
        by=[*track, DEPTH],
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
    left = points.select([*track, "start_ns"]).with_row_index("_point")
    left = left.sort([*track, "start_ns"])
    right = ranges.select([*track, pl.col("start_ns").alias("_range_start"), ROW])
    candidate = left.join_asof(
        right,
        left_on="start_ns",
        right_on="_range_start",
        by=track,
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
