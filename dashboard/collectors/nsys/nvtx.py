"""NVTX range nesting and kernel-to-range attribution, in polars.

Push/pop ranges nest strictly per CPU thread; start/end ranges may overlap
arbitrarily. Both are nested here by time containment on their starting
thread, so an overlapping start/end range gets the depth of the ranges open
when it starts and a parent only if that parent really contains it.
"""

from __future__ import annotations

import polars as pl


def nest(ranges: pl.DataFrame) -> pl.DataFrame:
    """Sort ranges per thread and add `id`, `depth` and `parent` (null at the top).

    Needs `thread`, `start_ns`, `end_ns` with `end_ns >= start_ns`. Depth is the
    number of ranges still open on the thread when a range starts, from a
    sweep over start (+1) and end (-1) events. Ties are broken by sort
    position (start at 2*id, end at 2*id+1): a range ending where another
    starts always sorts before it (adjacent ranges are siblings), and a
    zero-length range ends right after its own start.
    """
    ordered = ranges.sort(
        ["thread", "start_ns", "end_ns"], descending=[False, False, True], maintain_order=True
    ).with_row_index("id")
    ordered = ordered.with_columns(pl.col("id").cast(pl.Int64))
    starts = ordered.select("id", "thread", time=pl.col("start_ns"), tiebreak=pl.col("id") * 2, delta=pl.lit(1))
    ends = ordered.select(
        "id",
        "thread",
        time=pl.col("end_ns"),
        tiebreak=pl.col("id") * 2 + 1,
        delta=pl.lit(-1),
    )
    depths = (
        pl.concat([starts, ends])
        .sort(["thread", "time", "tiebreak"])
        # Every range starts and ends on its own thread, so each thread's deltas sum to zero and a plain
        # running sum restarts at zero where the next thread begins (a per-thread window costs ~3x more).
        .with_columns(open=pl.col("delta").cum_sum())
        .filter(pl.col("delta") == 1)
        .select("id", depth=(pl.col("open") - 1).cast(pl.Int32))
    )
    ordered = ordered.join(depths, on="id", how="left", maintain_order="left")
    # The parent is the latest earlier range one level up on the same thread,
    # kept only when it contains the child (overlapping start/end ranges).
    candidates = ordered.select(
        "thread",
        "id",
        parent_depth=pl.col("depth"),
        parent=pl.col("id"),
        parent_end=pl.col("end_ns"),
    )
    with_parent = ordered.with_columns(parent_depth=pl.col("depth") - 1).join_asof(
        candidates,
        on="id",
        by=["thread", "parent_depth"],
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,  # sorted by id above
    )
    contained = pl.col("parent_end") >= pl.col("end_ns")
    return with_parent.with_columns(parent=pl.when(contained).then(pl.col("parent"))).drop("parent_depth", "parent_end")


_CORRELATION_LIMIT = 2**32  # CUPTI correlation ids are 32-bit; pids arrive masked to 24 bits


def _launch_key(*frames: pl.DataFrame) -> list[pl.Expr]:
    """Join keys for (pid, correlation): one packed integer when every value fits, else both columns.

    A join on one integer costs about half of one on two columns; the pack is only used when no two
    distinct pairs can share a packed value.
    """
    fits = all(
        frame.is_empty() or frame.select(
            (pl.col("correlation").min() >= 0) & (pl.col("correlation").max() < _CORRELATION_LIMIT)
            & (pl.col("pid").min() >= 0) & (pl.col("pid").max() < 2**24)
        ).item() is not False
        for frame in frames
    )
    if fits:
        return [(pl.col("pid") * _CORRELATION_LIMIT + pl.col("correlation")).alias("_launch")]
    return [pl.col("pid").alias("_launch_pid"), pl.col("correlation").alias("_launch")]


def call_ranges(calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """`pid`, `correlation`, `op`: per API call, the name of the innermost range enclosing the whole call.

    `calls` has `pid`, `correlation`, `thread`, `start_ns`, `end_ns`; `ranges`
    comes from `nest`. The range must contain the whole call on the calling
    thread; calls without one get a null `op`. Computed per call rather than
    per kernel so that it can run while the kernels are still being read;
    `launch_ranges` then joins activity to it.
    """
    key = _launch_key(calls)
    if len(key) == 1 and calls.select(key[0].n_unique()).item() == calls.height:
        keyed = calls  # one call per correlation id, as exports have it: nothing to drop
    else:
        keyed = calls.unique(["pid", "correlation"], keep="first", maintain_order=True)
    keyed = keyed.select("pid", "correlation", "thread", call_start="start_ns", call_end="end_ns")
    if keyed.is_empty() or ranges.is_empty():
        return keyed.select("pid", "correlation", op=pl.lit(None, dtype=pl.String))
    launches = keyed.with_row_index("row").sort("call_start")
    # The latest range started at or before the call is the innermost
    # candidate; climb its parents until one contains the whole call.
    pending = launches.join_asof(
        ranges.select("thread", range_start="start_ns", candidate="id").sort("range_start"),
        left_on="call_start",
        right_on="range_start",
        by="thread",
        strategy="backward",
        check_sortedness=False,  # both sides sorted just above
    ).select("row", "call_end", "candidate")
    lookup = ranges.select(candidate="id", candidate_end="end_ns", candidate_parent="parent")
    found: list[pl.DataFrame] = [pl.DataFrame(schema={"row": pl.UInt32, "range_id": pl.Int64})]
    for _ in range(int(ranges["depth"].max() or 0) + 1):
        pending = pending.filter(pl.col("candidate").is_not_null()).join(lookup, on="candidate", how="left")
        if pending.is_empty():
            break
        encloses = pl.col("candidate_end") >= pl.col("call_end")
        found.append(pending.filter(encloses).select("row", range_id="candidate"))
        pending = pending.filter(~encloses).select("row", "call_end", candidate="candidate_parent")
    names = pl.concat(found).join(ranges.select(range_id="id", op="name"), on="range_id", how="left")
    ops = keyed.with_row_index("row").join(names.select("row", "op"), on="row", how="left", maintain_order="left")
    return ops.select("pid", "correlation", "op")


def launch_ranges(activity: pl.DataFrame, per_call: pl.DataFrame) -> pl.Series:
    """For each activity row (`pid`, `correlation`), the `op` of the API call that launched it (null without one)."""
    keys = _launch_key(activity, per_call)
    names = [key.meta.output_name() for key in keys]
    return activity.select(keys).join(
        per_call.select(*keys, "op"), on=names, how="left", maintain_order="left")["op"]
