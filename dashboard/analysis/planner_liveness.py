"""Warp-specialization planner analysis: buffer liveness, live memory, channels and partitions.

Pure polars over the canonical `ws_buffers`, `ws_ops` and `ws_channels` tables.
Liveness intervals are half-open: a buffer with `[start_op, end_op)` is live
at operation id x when `start_op <= x < end_op`.

Capacities:
* TMEM: 512 columns of 128 lanes x 32 bit per SM (Blackwell). An allocation
  takes whole columns across all lanes, so TMEM use is counted in columns.
* SMEM: 227 KiB (232,448 bytes), the most one thread block may opt in to on
  Hopper (H100) and Blackwell (B200): 228 KiB per SM minus the 1 KiB the
  runtime reserves per block. Pass another `capacity` for other parts.
Sizes are those the dumps state: SMEM `size` is ONE copy of a buffer
(multi-buffering is decided after the dump), so live SMEM is a lower bound.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

TMEM_COLUMNS = 512
SMEM_CAPACITY_BYTES = 227 * 1024
CAPACITY = {"SMEM": SMEM_CAPACITY_BYTES, "TMEM": TMEM_COLUMNS}
UNIT = {"SMEM": "bytes", "TMEM": "columns"}


def size_expr(memory: str) -> pl.Expr:
    """The size a buffer takes from its memory: SMEM bytes, TMEM columns."""
    column = "bytes" if memory == "SMEM" else "cols"
    return pl.col(column).fill_null(0).cast(pl.Int64)


def planner_groups(buffers: pl.DataFrame, ops: pl.DataFrame, channels: pl.DataFrame) -> list[str]:
    """Every kernel-compile group present in any of the three tables, in first-seen order."""
    seen = pl.concat([frame.select("group") for frame in (buffers, ops, channels)])
    return seen.unique(maintain_order=True)["group"].to_list()


def buffers_of(buffers: pl.DataFrame, group: str, memory: str | None = None) -> pl.DataFrame:
    """The buffers of one group (optionally one memory), in dump order."""
    selected = buffers.filter(pl.col("group") == group)
    if memory is not None:
        selected = selected.filter(pl.col("memory") == memory)
    return selected.sort("memory", "buffer_index")


def live_usage(buffers: pl.DataFrame, group: str, memory: str) -> pl.DataFrame:
    """Live size over operation ids as a step series: (op_id, live, live_buffers).

    Each row holds from its op id until the next row's (plot with a horizontal-
    then-vertical step). `live` is bytes for SMEM, columns for TMEM. The last
    row is the end of the last interval, where nothing is live.
    """
    selected = buffers_of(buffers, group, memory).with_columns(size=size_expr(memory))
    events = pl.concat([
        selected.select(op_id=pl.col("start_op"), delta=pl.col("size"), count=pl.lit(1, pl.Int64)),
        selected.select(op_id=pl.col("end_op"), delta=-pl.col("size"), count=pl.lit(-1, pl.Int64)),
    ])
    return (
        events.group_by("op_id")
        .agg(pl.col("delta").sum(), pl.col("count").sum())
        .sort("op_id")
        .select(
            "op_id",
            live=pl.col("delta").cum_sum().cast(pl.Int64),
            live_buffers=pl.col("count").cum_sum().cast(pl.Int64),
        )
    )


def peak_usage(buffers: pl.DataFrame, group: str, memory: str) -> pl.DataFrame:
    """One row: the peak live size, the first op id where it is reached, and how many buffers are live."""
    usage = live_usage(buffers, group, memory)
    if usage.is_empty():
        return pl.DataFrame({"peak": [0], "at_op": [None], "live_buffers": [0]},
                            schema={"peak": pl.Int64, "at_op": pl.Int64, "live_buffers": pl.Int64})
    return usage.sort("live", "op_id", descending=[True, False]).head(1).select(
        peak="live", at_op="op_id", live_buffers="live_buffers"
    )


def over_capacity(buffers: pl.DataFrame, group: str, memory: str, capacity: int | None = None) -> pl.DataFrame:
    """The op-id ranges [start_op, end_op) where live size exceeds capacity, with the worst value."""
    limit = CAPACITY[memory] if capacity is None else capacity
    usage = live_usage(buffers, group, memory).with_columns(next_op=pl.col("op_id").shift(-1))
    over = usage.filter(pl.col("live") > limit)
    # Consecutive over-capacity steps form one range.
    return (
        over.with_columns(run=(pl.col("op_id") != pl.col("next_op").shift(1)).fill_null(True).cum_sum())
        .group_by("run", maintain_order=True)
        .agg(start_op=pl.col("op_id").first(), end_op=pl.col("next_op").last(), worst=pl.col("live").max())
        .drop("run")
    )


def live_buffers_at(buffers: pl.DataFrame, group: str, op_id: int, memory: str | None = None) -> pl.DataFrame:
    """The buffers live at one operation id (`start_op <= op_id < end_op`)."""
    return buffers_of(buffers, group, memory).filter(
        (pl.col("start_op") <= op_id) & (pl.col("end_op") > op_id)
    )


def channels_of_buffer(buffers: pl.DataFrame, channels: pl.DataFrame, group: str, memory: str,
                       buffer_index: int) -> pl.DataFrame:
    """The channels that use one buffer (the uids its liveness graph lists)."""
    uids = (
        buffers_of(buffers, group, memory)
        .filter(pl.col("buffer_index") == buffer_index)
        .select(pl.col("channels").explode().alias("uid"))
        .drop_nulls()
    )
    return channels.filter(pl.col("group") == group).join(uids, on="uid", how="semi").sort("uid")


def ops_of_buffer(buffers: pl.DataFrame, channels: pl.DataFrame, ops: pl.DataFrame, group: str, memory: str,
                  buffer_index: int) -> pl.DataFrame:
    """The ops that produce or consume one buffer, with `role` (producer / consumer)."""
    used = channels_of_buffer(buffers, channels, group, memory, buffer_index)
    ends = pl.concat([
        used.select(node=pl.col("src_node"), role=pl.lit("producer")),
        used.select(node=pl.col("dst_node"), role=pl.lit("consumer")),
    ]).drop_nulls("node")
    roles = ends.group_by("node").agg(role=pl.col("role").unique().sort().str.join("+"))
    return ops.filter(pl.col("group") == group).join(roles, on="node", how="inner").sort("graph_order")


def buffers_of_channels(buffers: pl.DataFrame, group: str, uids: Iterable[int]) -> pl.DataFrame:
    """The buffers whose liveness graph lists any of these channels (a tapped edge -> its buffer)."""
    wanted = list(uids)
    return buffers_of(buffers, group).filter(pl.col("channels").list.eval(pl.element().is_in(wanted)).list.any())


def buffers_of_op(buffers: pl.DataFrame, channels: pl.DataFrame, group: str, node: str) -> pl.DataFrame:
    """The buffers an op reads or writes through its channels (works without op ids, by node)."""
    uids = channels.filter(
        (pl.col("group") == group) & ((pl.col("src_node") == node) | (pl.col("dst_node") == node))
    )["uid"].to_list()
    return buffers_of_channels(buffers, group, uids)


def ops_of_partition(ops: pl.DataFrame, group: str, partition: int) -> pl.DataFrame:
    """The ops declared in one partition, in program (or insertion) order."""
    return ops.filter(
        (pl.col("group") == group) & pl.col("partitions").list.contains(partition)
    ).sort("graph_order")


def partitions_of(ops: pl.DataFrame, group: str) -> list[int]:
    """The partition numbers of a group, ascending."""
    return sorted(
        ops.filter(pl.col("group") == group).select(pl.col("partitions").explode()).drop_nulls()
        .unique()["partitions"].to_list()
    )


def buffer_summary(buffers: pl.DataFrame, group: str, memory: str) -> pl.DataFrame:
    """The dump's own summary table, one row per buffer: name, id, size, channels, liveness (, OperandD)."""
    selected = buffers_of(buffers, group, memory)
    size = (
        pl.col("bytes")
        if memory == "SMEM"
        else pl.format("{}x{}", pl.col("rows"), pl.col("cols"))
    )
    columns = [
        "buffer_index",
        "name",
        *(["buffer_id"] if memory == "SMEM" else []),
        size.alias("size"),
        pl.col("channels").list.len().alias("channel_count"),
        pl.col("channels").list.eval(pl.format("ch{}", pl.element())).list.join(", ").alias("channels"),
        pl.format("[{}-{})", pl.col("start_op"), pl.col("end_op")).alias("liveness"),
        (pl.col("end_op") - pl.col("start_op")).alias("length"),
        *(["operand_d"] if memory == "TMEM" else []),
    ]
    return selected.select(columns)


def partition_summary(ops: pl.DataFrame, channels: pl.DataFrame, group: str) -> pl.DataFrame:
    """Per partition: key ops, channels produced and consumed, by memory."""
    members = ops.filter(pl.col("group") == group).select("node", partition=pl.col("partitions")).explode(
        "partition"
    )
    mine = channels.filter(pl.col("group") == group)
    produced = mine.join(members, left_on="src_node", right_on="node").group_by("partition").agg(
        smem_out=(pl.col("memory") == "SMEM").sum(), tmem_out=(pl.col("memory") == "TMEM").sum()
    )
    consumed = mine.join(members, left_on="dst_node", right_on="node").group_by("partition").agg(
        smem_in=(pl.col("memory") == "SMEM").sum(), tmem_in=(pl.col("memory") == "TMEM").sum()
    )
    counts = members.group_by("partition").agg(ops=pl.len())
    return (
        counts.join(produced, on="partition", how="left")
        .join(consumed, on="partition", how="left")
        .with_columns(pl.exclude("partition", "ops").fill_null(0).cast(pl.Int64), pl.col("ops").cast(pl.Int64))
        .sort("partition")
    )


def channel_table(channels: pl.DataFrame, ops: pl.DataFrame, group: str) -> pl.DataFrame:
    """Channels of a group with the partitions and op names at both ends."""
    ends = ops.filter(pl.col("group") == group).select("node", "partitions", "op")
    return (
        channels.filter(pl.col("group") == group)
        .join(ends.rename({"node": "src_node", "partitions": "src_partitions", "op": "src_name"}),
              on="src_node", how="left")
        .join(ends.rename({"node": "dst_node", "partitions": "dst_partitions", "op": "dst_name"}),
              on="dst_node", how="left")
        .sort("uid")
    )


def group_summary(buffers: pl.DataFrame, ops: pl.DataFrame, channels: pl.DataFrame,
                  smem_capacity: int = SMEM_CAPACITY_BYTES) -> pl.DataFrame:
    """One row per group: counts, peak live SMEM bytes and TMEM columns, and whether they fit.

    Peaks are null (unknown) for a memory the group has no buffers of.
    """
    rows = []
    for group in planner_groups(buffers, ops, channels):
        smem_peak = peak_usage(buffers, group, "SMEM").row(0, named=True)
        tmem_peak = peak_usage(buffers, group, "TMEM").row(0, named=True)
        group_buffers = buffers.filter(pl.col("group") == group)
        group_channels = channels.filter(pl.col("group") == group)
        group_ops = ops.filter(pl.col("group") == group)
        smem_count = group_buffers.filter(pl.col("memory") == "SMEM").height
        tmem_count = group_buffers.filter(pl.col("memory") == "TMEM").height
        # No buffers of a memory usually means its liveness graph was not dumped (SMEM allocator 1):
        # the peak is then unknown, not zero.
        if not smem_count:
            smem_peak = {"peak": None, "at_op": None}
        if not tmem_count:
            tmem_peak = {"peak": None, "at_op": None}
        rows.append({
            "group": group,
            "smem_buffers": smem_count,
            "tmem_buffers": tmem_count,
            "channels": group_channels.height,
            "ops": group_ops.height,
            "partitions": len(partitions_of(ops, group)),
            "has_op_ids": group_ops["op_id"].is_not_null().any() if group_ops.height else False,
            "peak_smem_bytes": smem_peak["peak"],
            "peak_smem_op": smem_peak["at_op"],
            "smem_fits": None if smem_peak["peak"] is None else smem_peak["peak"] <= smem_capacity,
            "peak_tmem_cols": tmem_peak["peak"],
            "peak_tmem_op": tmem_peak["at_op"],
            "tmem_fits": None if tmem_peak["peak"] is None else tmem_peak["peak"] <= TMEM_COLUMNS,
        })
    schema = {"group": pl.String, "smem_buffers": pl.Int64, "tmem_buffers": pl.Int64, "channels": pl.Int64,
              "ops": pl.Int64, "partitions": pl.Int64, "has_op_ids": pl.Boolean, "peak_smem_bytes": pl.Int64,
              "peak_smem_op": pl.Int64, "smem_fits": pl.Boolean, "peak_tmem_cols": pl.Int64,
              "peak_tmem_op": pl.Int64, "tmem_fits": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)
