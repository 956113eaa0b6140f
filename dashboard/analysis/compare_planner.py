"""Two warp-specialization planner dumps of the same kernel: what the planner changed.

Buffers are matched on (memory, name, n-th buffer of that name in index order):
indices shift when a buffer is inserted, names stay (duplicate names such as
dqN x4 are told apart by their order). A matched buffer is "resized" when its
size changed (SMEM bytes; TMEM rows x cols), "moved" when only its liveness
interval [start_op, end_op) changed, else "same"; unmatched ones are "added"
(B only) or "removed" (A only). A buffer both resized and moved says "resized"
and shows both intervals.

Channels are matched on uid; "changed" when its endpoints (src_op, dst_op), memory
or name differ. Peaks are liveness.peak_usage (SMEM bytes, TMEM columns; null =
no buffers of that memory in the dump, so unknown).
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis import planner_liveness as liveness

ADDED, REMOVED, RESIZED, MOVED, SAME, CHANGED = "added", "removed", "resized", "moved", "same", "changed"
_BUFFER_COLUMNS = ("buffer_index", "bytes", "rows", "cols", "start_op", "end_op")
_CHANNEL_COLUMNS = ("src_op", "dst_op", "memory", "name")


def _numbered(buffers: pl.DataFrame, group: str, suffix: str) -> pl.DataFrame:
    mine = buffers.filter(pl.col("group") == group).sort("memory", "buffer_index")
    return mine.select(
        "memory", "name", pl.int_range(pl.len()).over("memory", "name").alias("nth"),
        *[pl.col(c).alias(f"{c}_{suffix}") for c in _BUFFER_COLUMNS])


def buffer_changes(buffers_a: pl.DataFrame, group_a: str, buffers_b: pl.DataFrame, group_b: str) -> pl.DataFrame:
    """One row per buffer on either side: memory, name, nth, A's and B's index / size / liveness, change."""
    joined = _numbered(buffers_a, group_a, "a").join(_numbered(buffers_b, group_b, "b"), on=["memory", "name", "nth"],
                                                     how="full", coalesce=True)
    def size(suffix: str) -> pl.Expr:  # SMEM bytes, TMEM rows x cols, as text for a null-safe compare
        return pl.when(pl.col("memory") == "TMEM").then(pl.format("{}x{}", f"rows_{suffix}", f"cols_{suffix}")) \
            .otherwise(pl.col(f"bytes_{suffix}").cast(pl.String))

    moved = pl.col("start_op_a").ne_missing(pl.col("start_op_b")) | pl.col("end_op_a").ne_missing(pl.col("end_op_b"))
    change = (pl.when(pl.col("buffer_index_a").is_null()).then(pl.lit(ADDED))
              .when(pl.col("buffer_index_b").is_null()).then(pl.lit(REMOVED))
              .when(size("a").ne_missing(size("b"))).then(pl.lit(RESIZED))
              .when(moved).then(pl.lit(MOVED)).otherwise(pl.lit(SAME)))
    return joined.with_columns(
        pl.col(pl.Int32).cast(pl.Int64), change.alias("change"),
        (pl.col("start_op_b") - pl.col("start_op_a")).alias("start_shift"),
        (pl.col("end_op_b") - pl.col("end_op_a")).alias("end_shift"),
    ).sort("memory", pl.coalesce("buffer_index_b", "buffer_index_a"), "name")


def channel_changes(channels_a: pl.DataFrame, group_a: str, channels_b: pl.DataFrame, group_b: str) -> pl.DataFrame:
    """One row per channel uid on either side with A's and B's ends, memory and name, and the change."""
    def side(frame: pl.DataFrame, group: str, suffix: str) -> pl.DataFrame:
        return frame.filter(pl.col("group") == group).select(
            "uid", *[pl.col(c).alias(f"{c}_{suffix}") for c in _CHANNEL_COLUMNS], pl.lit(True).alias(f"in_{suffix}"))

    joined = side(channels_a, group_a, "a").join(side(channels_b, group_b, "b"), on="uid", how="full", coalesce=True)
    differs = pl.any_horizontal(*[pl.col(f"{c}_a").ne_missing(pl.col(f"{c}_b")) for c in _CHANNEL_COLUMNS])
    change = (pl.when(pl.col("in_a").is_null()).then(pl.lit(ADDED)).when(pl.col("in_b").is_null())
              .then(pl.lit(REMOVED)).when(differs).then(pl.lit(CHANGED)).otherwise(pl.lit(SAME)))
    return joined.with_columns(change.alias("change")).drop("in_a", "in_b").sort("uid")


def peak_changes(buffers_a: pl.DataFrame, group_a: str, buffers_b: pl.DataFrame, group_b: str) -> pl.DataFrame:
    """memory, unit, peak_a, peak_b, delta (B − A), at_op_a, at_op_b for SMEM and TMEM."""
    rows = []
    for memory in ("SMEM", "TMEM"):
        ends = {}
        for suffix, frame, group in (("a", buffers_a, group_a), ("b", buffers_b, group_b)):
            present = liveness.buffers_of(frame, group, memory).height > 0
            peak = liveness.peak_usage(frame, group, memory).row(0, named=True)
            ends[suffix] = (peak["peak"], peak["at_op"]) if present else (None, None)
        (peak_a, at_a), (peak_b, at_b) = ends["a"], ends["b"]
        rows.append({"memory": memory, "unit": liveness.UNIT[memory], "peak_a": peak_a, "peak_b": peak_b,
                     "delta": peak_b - peak_a if peak_a is not None and peak_b is not None else None,
                     "at_op_a": at_a, "at_op_b": at_b, "capacity": liveness.CAPACITY[memory]})
    return pl.DataFrame(rows, schema={"memory": pl.String, "unit": pl.String, "peak_a": pl.Int64, "peak_b": pl.Int64,
                                      "delta": pl.Int64, "at_op_a": pl.Int64, "at_op_b": pl.Int64,
                                      "capacity": pl.Int64})


def change_counts(changes: pl.DataFrame) -> dict[str, int]:
    """How many rows of a buffer_changes / channel_changes frame have each change."""
    counted = changes.group_by("change").len()
    return dict(zip(counted.get_column("change").to_list(), counted.get_column("len").to_list(), strict=True))


def default_groups(groups_a: list[str], groups_b: list[str]) -> tuple[str, str] | None:
    """The first group name both dumps have, else each side's first group; None when a side has none."""
    if not groups_a or not groups_b:
        return None
    shared = [group for group in groups_a if group in groups_b]
    return (shared[0], shared[0]) if shared else (groups_a[0], groups_b[0])
