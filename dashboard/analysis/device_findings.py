"""Findings about device memory (Tenstorrent per-op snapshots) and the warp-specialization planner.

- memory peak: a buffer type whose peak reaches PEAK_UTILISATION_MIN of its
  capacity; names the op that allocated it (the culprit: the op before the
  peak snapshot, see analysis.memory).
- fragmentation at the peak: free memory split into blocks, so the largest
  free block is under (1 − FRAGMENTATION_MIN) of the free total.
- tile padding: bytes the tile layout adds to the live tensors at the
  DRAM/L1 peak (padded − unpadded), when the source records both; over
  PADDING_WASTE_MIN of the padded bytes.
- planner headroom: a group whose live SMEM or TMEM at its peak leaves less
  than PLANNER_HEADROOM_MIN of the capacity free (or exceeds it).
Buffers kept alive after their last use need per-buffer lifetimes, which the
op_memory table does not hold: that rule is not run.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis import memory as memory_analysis
from dashboard.analysis import planner_liveness as liveness
from dashboard.analysis.finding import Finding, view_href
from dashboard.analysis.planner_sharing import TMEM_COLUMN_BYTES
from dashboard.analysis.units import format_bytes

PEAK_UTILISATION_MIN = 0.80
FRAGMENTATION_MIN = 0.30
PADDING_WASTE_MIN = 0.10
PLANNER_HEADROOM_MIN = 0.10

THRESHOLDS: dict[str, str] = {
    "memory peak": f"a buffer type's peak at {PEAK_UTILISATION_MIN:.0%} of its capacity or more",
    "fragmentation": f"at the peak, the largest free block under {1 - FRAGMENTATION_MIN:.0%} of the free memory",
    "tile padding": f"padding over {PADDING_WASTE_MIN:.0%} of the live tensor bytes at the peak",
    "planner headroom": f"SMEM or TMEM at its peak with under {PLANNER_HEADROOM_MIN:.0%} of the capacity free",
}


def memory_findings(run_id: str, op_memory: pl.DataFrame) -> list[Finding]:
    """Peak, fragmentation and padding findings, one per (rank, buffer type) that crosses a threshold."""
    if op_memory.height == 0:
        return []
    found: list[Finding] = []
    for row in memory_analysis.peaks(op_memory).iter_rows(named=True):
        where = f"{row['buffer_type']} (rank {row['rank']})"
        url = view_href("/memory", run_id, rank=row["rank"], op=row["peak_op_index"])
        capacity = row["capacity_per_bank"] or 0
        if capacity and row["utilisation"] >= PEAK_UTILISATION_MIN:
            found.append(Finding(
                key=f"memory:peak:{row['rank']}:{row['buffer_type']}",
                title=f"{where} peaks at {row['utilisation']:.0%} of capacity before op {row['peak_op_index']}",
                share=row["utilisation"],
                share_of=f"{row['buffer_type']} capacity per bank ({format_bytes(capacity, 4)})",
                at_stake_bytes=row["allocated"], url=url,
                advice="free or spill what is live at the peak (deallocate earlier, move to DRAM, smaller shards)",
                evidence={"allocated per bank": format_bytes(row["allocated_per_bank"]),
                          "capacity per bank": format_bytes(capacity, 4),
                          "allocated by (culprit)": f"op {row['culprit_op_index']} {row['culprit_mlir_op'] or ''} "
                                                    f"(+{format_bytes(row['culprit_delta_per_bank'])} per bank)",
                          "next op": f"{row['next_mlir_op'] or row['next_op_type'] or ''}"}))
        free = row["free_per_bank"] or 0
        if free and row["fragmentation"] >= FRAGMENTATION_MIN:
            stranded = free - (row["largest_free_per_bank"] or 0)
            found.append(Finding(
                key=f"memory:fragmentation:{row['rank']}:{row['buffer_type']}",
                title=f"{where} is {row['fragmentation']:.0%} fragmented at its peak",
                share=stranded / capacity if capacity else 0.0,
                share_of=f"{row['buffer_type']} capacity per bank ({format_bytes(capacity, 4)})",
                at_stake_bytes=stranded * (row["banks"] or 1), url=url,
                advice="allocate long-lived buffers first or reorder ops so that frees leave contiguous space",
                evidence={"free per bank": format_bytes(free),
                          "largest free block": format_bytes(row["largest_free_per_bank"]),
                          "stranded per bank (free outside the largest block)": format_bytes(stranded),
                          f"stranded on the device (x {row['banks'] or 1} banks)":
                              format_bytes(stranded * (row["banks"] or 1))}))
    found.extend(_padding_findings(run_id, op_memory))
    return found


def _padding_findings(run_id: str, op_memory: pl.DataFrame) -> list[Finding]:
    padded = op_memory.drop_nulls(["padded_bytes", "unpadded_bytes"]).filter(pl.col("padded_bytes") > 0)
    if padded.height == 0:
        return []  # the source does not record logical vs tile-padded sizes
    row = padded.with_columns((pl.col("padded_bytes") - pl.col("unpadded_bytes")).alias("waste")).sort(
        "padded_bytes", descending=True).row(0, named=True)
    share = row["waste"] / row["padded_bytes"]
    if share <= PADDING_WASTE_MIN:
        return []
    return [Finding(
        key="memory:padding", title=f"Tile padding wastes {format_bytes(row['waste'])} of live tensors at the peak",
        share=share, share_of=f"live tensor bytes at op {row['op_index']} ({format_bytes(row['padded_bytes'])})",
        at_stake_bytes=row["waste"], url=view_href("/memory", run_id, rank=row["rank"], op=row["op_index"]),
        advice="pad shapes to multiples of the 32x32 tile in the model, or use row-major layout for thin tensors",
        evidence={"padded": format_bytes(row["padded_bytes"]), "logical": format_bytes(row["unpadded_bytes"])})]


def planner_findings(run_id: str, buffers: pl.DataFrame) -> list[Finding]:
    """Groups whose SMEM / TMEM peak leaves less than PLANNER_HEADROOM_MIN of the capacity."""
    found: list[Finding] = []
    if buffers.height == 0:
        return found
    for group, memory in buffers.select("group", "memory").unique().sort("group", "memory").iter_rows():
        if memory not in liveness.CAPACITY:
            continue
        peak = liveness.peak_usage(buffers, group, memory).row(0, named=True)
        capacity = liveness.CAPACITY[memory]
        headroom = (capacity - peak["peak"]) / capacity
        if headroom >= PLANNER_HEADROOM_MIN:
            continue
        unit = liveness.UNIT[memory]
        amount = format_bytes(peak["peak"]) if unit == "bytes" else f"{peak['peak']} columns"
        limit = format_bytes(capacity) if unit == "bytes" else f"{capacity} columns"
        found.append(Finding(
            key=f"planner:{group}:{memory}",
            title=f"{memory} of {group} peaks at {amount} of {limit}"
                  + (" (over capacity)" if headroom < 0 else f" ({headroom:.0%} headroom)"),
            share=peak["peak"] / capacity, share_of=f"{memory} capacity ({limit})",
            # TMEM is allocated in columns of 128 lanes × 32 bit: its bytes at stake are columns × 512.
            at_stake_bytes=peak["peak"] if unit == "bytes" else peak["peak"] * TMEM_COLUMN_BYTES,
            url=view_href("/planner", run_id, group=group, op=peak["at_op"]),
            advice="buffers whose lifetimes do not overlap can share space; fewer pipeline stages or smaller "
                   "tiles lower the peak",
            informational=True,  # a compile-time plan: no runtime at stake
            evidence={"peak": amount, "capacity": limit, "at op": peak["at_op"],
                      "live buffers": peak["live_buffers"],
                      "would save": "no runtime at stake (a compile-time plan); freeing space here lets the "
                                    "planner keep more stages or larger tiles"}))
    return found
