"""How much of its span each rank's GPU was busy (HTA's temporal breakdown headline).

Definitions (one per page, written on the page too):
- GPU activity: kernels, memcpy and memset intervals of the rank, any stream
  (HTA counts compute, memory and communication kernels alike).
- span: first activity start to last activity end, per rank.
- busy: the length of the union of the activity intervals (two overlapping
  kernels on two streams count once), per rank.
- idle: span - busy.

With a window, intervals are clipped to it first, so span and busy describe
the part of the window the rank was active in.

The union is vectorised: sort by start within a rank, carry the running
maximum end of the earlier intervals, and start a new merged group whenever
an interval starts after that maximum; a group's extent is [min start, max end].
"""

from __future__ import annotations

import polars as pl

BUSY_DEFINITION = (
    "span = first to last GPU activity of a rank; busy = union of its kernel, memcpy and memset "
    "intervals (overlaps count once, HTA's definition); idle = span − busy"
)
BUSY_SCHEMA = {"rank": pl.Int32, "span_ns": pl.Int64, "busy_ns": pl.Int64, "idle_ns": pl.Int64,
               "busy_share": pl.Float64}


def activity_intervals(*tables: pl.DataFrame, window: tuple[int, int] | None = None) -> pl.DataFrame:
    """rank, start_ns, end_ns of every row of `tables` (kernels, memcpy...), clipped to `window`.

    Rows without a start or end are left out (they have no place in time); an
    end before its start counts as a zero-length interval.
    """
    parts = [table.select(pl.col("rank").cast(pl.Int32).fill_null(0), pl.col("start_ns").cast(pl.Int64),
                          pl.col("end_ns").cast(pl.Int64)) for table in tables]
    frame = pl.concat(parts) if parts else pl.DataFrame(schema={"rank": pl.Int32, "start_ns": pl.Int64,
                                                                 "end_ns": pl.Int64})
    frame = frame.drop_nulls(["start_ns", "end_ns"]).with_columns(
        pl.max_horizontal("start_ns", "end_ns").alias("end_ns"))
    if window is None:
        return frame
    start, end = window
    return frame.filter(pl.col("start_ns") < end, pl.col("end_ns") > start).with_columns(
        pl.col("start_ns").clip(lower_bound=start), pl.col("end_ns").clip(upper_bound=end))


def _laid_end_to_end(intervals: pl.DataFrame) -> pl.DataFrame:
    """rank, s, e, shift: each rank's intervals moved onto its own stretch of one time line (s = start_ns
    + shift), sorted by s.

    Ranks laid end to end (rank k's times shifted by k x the whole span) never
    overlap, so one sort and one running maximum serve every rank at once
    (several times faster than sorting and scanning per rank with `over`).
    """
    first = intervals.get_column("start_ns").min()
    stride = intervals.get_column("end_ns").max() - first + 1  # type: ignore[operator]
    shift = (pl.col("rank").rank("dense") - 1).cast(pl.Int64) * stride - first
    return intervals.select("rank", (pl.col("start_ns") + shift).alias("s"), (pl.col("end_ns") + shift).alias("e"),
                            shift.alias("shift")).sort("s")


def _pieces(laid: pl.DataFrame) -> pl.DataFrame:
    """Marks of the union: `opens` on an interval starting after every earlier end, `closes` on the
    last interval before the next opening, and `reach` = the running maximum end."""
    reach = pl.col("e").cum_max()
    opens = reach.shift(1).is_null() | (pl.col("s") > reach.shift(1))
    return laid.with_columns(reach.alias("reach"), opens.alias("opens")).with_columns(
        pl.col("opens").shift(-1, fill_value=True).alias("closes"))


def merged_intervals(intervals: pl.DataFrame) -> pl.DataFrame:
    """The union of `intervals` (rank, start_ns, end_ns) per rank, as disjoint sorted intervals."""
    if intervals.height == 0:
        return intervals.select("rank", "start_ns", "end_ns")
    marked = _pieces(_laid_end_to_end(intervals))
    opening = marked.filter(pl.col("opens"))
    closing = marked.filter(pl.col("closes"))
    return pl.DataFrame({
        "rank": opening.get_column("rank"),
        "start_ns": opening.get_column("s") - opening.get_column("shift"),
        "end_ns": closing.get_column("reach") - closing.get_column("shift"),
    })


def busy_from_pieces(pieces: pl.DataFrame, window: tuple[int, int] | None = None) -> pl.DataFrame:
    """gpu_busy from the union pieces (merged_intervals) of a rank's activity, clipped to `window`.

    The union is built once per run; a window only clips its pieces: the span
    of the clipped activity equals the span of the clipped pieces.
    """
    if window is not None:
        start, end = window
        pieces = pieces.filter(pl.col("start_ns") < end, pl.col("end_ns") > start).with_columns(
            pl.col("start_ns").clip(lower_bound=start), pl.col("end_ns").clip(upper_bound=end))
    if pieces.height == 0:
        return pl.DataFrame(schema=BUSY_SCHEMA)
    per_rank = pieces.group_by("rank").agg(
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span_ns"),
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"),
    )
    return per_rank.select(
        pl.col("rank").cast(pl.Int32), pl.col("span_ns").cast(pl.Int64), pl.col("busy_ns").cast(pl.Int64),
        (pl.col("span_ns") - pl.col("busy_ns")).cast(pl.Int64).alias("idle_ns"),
        pl.when(pl.col("span_ns") > 0).then(pl.col("busy_ns") / pl.col("span_ns")).otherwise(None)
        .alias("busy_share"),
    ).sort("rank")


def gpu_busy(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per rank: span_ns, busy_ns, idle_ns and busy_share (busy / span; null for a zero span).

    `intervals` has rank, start_ns, end_ns (see activity_intervals). One row per
    rank that has any interval, ranks ascending.
    """
    return busy_from_pieces(merged_intervals(intervals))
