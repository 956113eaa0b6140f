"""Planner buffers whose lifetimes never overlap but that hold separate space: what sharing would save.

Buffers with the same SMEM `buffer_id` already share one allocation, so they
are merged first (lifetime from the first start to the last end, size of the
largest). Two allocations of the same group and memory can share space when
their live intervals [start_op, end_op) do not overlap; sharing saves the
smaller of the two. Pairs are taken greedily, largest saving first, each
allocation in at most one pair, so no space is counted twice (a lower bound:
chains of three or more could save more).
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis import planner_liveness as liveness
from dashboard.analysis.finding import Finding, view_href
from dashboard.analysis.planner_view import buffer_key
from dashboard.analysis.units import format_bytes

# A TMEM column spans all 128 lanes of 32-bit cells: 512 bytes, the unit TMEM is allocated in.
TMEM_COLUMN_BYTES = 128 * 4
SHARING_MIN_SHARE = 0.05  # savings under 5 % of the memory's capacity are no finding

THRESHOLD = (f"buffers of one group and memory whose lifetimes never overlap could share space worth at least "
             f"{SHARING_MIN_SHARE:.0%} of the capacity (saving = the smaller of each pair, each buffer in one pair)")

PAIR_SCHEMA = {"group": pl.String, "memory": pl.String, "first": pl.String, "first_index": pl.Int32,
               "second": pl.String, "second_index": pl.Int32, "first_size": pl.Int64, "second_size": pl.Int64,
               "saving": pl.Int64}


def _allocations(buffers: pl.DataFrame) -> pl.DataFrame:
    """One row per separate allocation: buffers sharing an SMEM buffer_id merged; unit = bytes / columns."""
    sized = pl.concat([buffers.filter(pl.col("memory") == memory).with_columns(size=liveness.size_expr(memory))
                       for memory in liveness.CAPACITY])
    sized = sized.with_columns(
        pl.coalesce(pl.col("buffer_id").cast(pl.String), pl.lit("index ") + pl.col("buffer_index").cast(pl.String))
        .alias("allocation"))
    return sized.sort("buffer_index").group_by("group", "memory", "allocation", maintain_order=True).agg(
        pl.col("name").first(), pl.col("buffer_index").first(), pl.col("start_op").min(), pl.col("end_op").max(),
        pl.col("size").max())


def sharing_pairs(buffers: pl.DataFrame) -> pl.DataFrame:
    """Pairs chosen to share space, largest saving first, each allocation in at most one pair."""
    allocations = _allocations(buffers).drop_nulls(["start_op", "end_op"]).filter(pl.col("size") > 0)
    candidates = allocations.join(allocations, on=["group", "memory"], suffix="_2").filter(
        (pl.col("buffer_index") < pl.col("buffer_index_2"))
        & ((pl.col("end_op") <= pl.col("start_op_2")) | (pl.col("end_op_2") <= pl.col("start_op")))
    ).with_columns(pl.min_horizontal("size", "size_2").alias("saving")).sort(
        ["group", "memory", "saving", "buffer_index", "buffer_index_2"], descending=[False, False, True, False, False])
    chosen: list[dict] = []
    used: set[tuple[str, str, str]] = set()
    for row in candidates.iter_rows(named=True):  # pairs of one kernel's few buffers, not per-event data
        first, second = (row["group"], row["memory"], row["allocation"]), (row["group"], row["memory"],
                                                                            row["allocation_2"])
        if first in used or second in used:
            continue
        used.update((first, second))
        chosen.append({"group": row["group"], "memory": row["memory"], "first": row["name"],
                       "first_index": row["buffer_index"], "second": row["name_2"],
                       "second_index": row["buffer_index_2"], "first_size": row["size"],
                       "second_size": row["size_2"], "saving": row["saving"]})
    return pl.DataFrame(chosen, schema=PAIR_SCHEMA)


def sharing_findings(run_id: str, buffers: pl.DataFrame) -> list[Finding]:
    """Per group and memory, the space that sharing non-overlapping buffers would save, over SHARING_MIN_SHARE."""
    if buffers.height == 0:
        return []
    pairs = sharing_pairs(buffers)
    found: list[Finding] = []
    for (group, memory), of_memory in pairs.group_by("group", "memory", maintain_order=True):
        saved, capacity = int(of_memory["saving"].sum()), liveness.CAPACITY[memory]
        if saved / capacity < SHARING_MIN_SHARE:
            continue
        in_bytes = liveness.UNIT[memory] == "bytes"
        amount = format_bytes(saved) if in_bytes else f"{saved} columns"
        top = of_memory.row(0, named=True)
        found.append(Finding(
            key=f"planner:sharing:{group}:{memory}",
            title=f"{memory} of {group}: {of_memory.height} buffer pair(s) never live together could share "
                  f"{amount}",
            share=saved / capacity,
            share_of=f"{memory} capacity ({format_bytes(capacity) if in_bytes else f'{capacity} columns'})",
            at_stake_bytes=saved if in_bytes else saved * TMEM_COLUMN_BYTES,
            url=view_href("/planner", run_id, group=group, buffer=buffer_key(memory, top["second_index"])),
            advice="let the planner reuse one allocation for buffers whose lifetimes do not overlap "
                   "(same buffer id), or reorder the ops that keep them apart",
            informational=True,  # a plan's memory, not runtime: it would save on-chip space
            evidence={"would save": f"{amount} of {memory} (no runtime at stake: compile-time plan)",
                      "pairs": of_memory.height,
                      **{f"{row['first']} [{row['first_index']}] + {row['second']} [{row['second_index']}]":
                         format_bytes(row["saving"]) if in_bytes else f"{row['saving']} columns"
                         for row in of_memory.head(5).iter_rows(named=True)}}))
    return found
