"""The planner page's tables as rows and ag-grid columns: the dumps' own buffer summaries, channels, partitions.

Dash-free: rows are plain dicts and column definitions ag-grid's JSON; the
page wraps them in grids (layouts.planner) and their CSV is what they list.
Also the texts the page writes about a group and a selection.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from dashboard.analysis import planner_liveness
from dashboard.analysis.units import format_bytes
from dashboard.store import Run
from dashboard.views.cache import per_run
from dashboard.views.planner import planner_data

Table = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # rows, column definitions (cached: never mutate)


def _number(field: str, header: str, width: int = 90) -> dict[str, Any]:
    return {"field": field, "headerName": header, "type": "numericColumn", "filter": "agNumberColumnFilter",
            "minWidth": width}


@per_run(32)
def buffer_table(run: Run, group: str, memory: str) -> Table:
    """The dump's own summary table (SMEM Buffer Summary / TMEM Allocation Summary), one row per buffer.

    Each row's `key` (`SMEM-3`) is the URL's `buffer` value, so a row and a selection name the same buffer.
    """
    rows = planner_liveness.buffer_summary(planner_data(run).buffers, group, memory).with_columns(
        key=pl.format(f"{memory}-{{}}", pl.col("buffer_index")))
    columns = [{"field": "name", "headerName": "Name", "pinned": "left", "minWidth": 110}]
    if memory == "SMEM":
        columns += [_number("buffer_id", "BufferID", 110), _number("size", "Size (bytes)", 110)]
    else:
        columns += [{"field": "size", "headerName": "Size (rows x cols)"}]
    columns += [_number("channel_count", "Channels", 110), {"field": "channels", "headerName": "channel ids"},
                {"field": "liveness", "headerName": "Liveness", "minWidth": 110}, _number("length", "ops live")]
    if memory == "TMEM":
        columns.append(_number("operand_d", "OperandD", 110))
    columns.append(_number("buffer_index", "#"))
    return rows.to_dicts(), columns


def _joined(column: str) -> pl.Expr:
    return pl.col(column).list.eval(pl.element().cast(pl.String)).list.join(", ")


@per_run(32)
def channel_table(run: Run, group: str) -> Table:
    data = planner_data(run)
    table = planner_liveness.channel_table(data.channels, data.ops, group).with_columns(
        src_partitions=_joined("src_partitions"), dst_partitions=_joined("dst_partitions"))
    columns = [_number("uid", "ch"), {"field": "memory", "headerName": "memory"},
               {"field": "name", "headerName": "buffer"}, _number("buffer_id", "B"),
               _number("src_op", "from op"), {"field": "src_name", "headerName": "producer"},
               {"field": "src_partitions", "headerName": "from partition"},
               _number("dst_op", "to op"), {"field": "dst_name", "headerName": "consumer"},
               {"field": "dst_partitions", "headerName": "to partition"},
               {"field": "operand_d", "headerName": "operand D"}]
    return table.drop("group").to_dicts(), columns


@per_run(32)
def partition_table(run: Run, group: str) -> Table:
    data = planner_data(run)
    rows = planner_liveness.partition_summary(data.ops, data.channels, group)
    columns = [_number("partition", "partition"), _number("ops", "key ops"),
               _number("smem_out", "SMEM produced"), _number("smem_in", "SMEM consumed"),
               _number("tmem_out", "TMEM produced"), _number("tmem_in", "TMEM consumed")]
    return rows.to_dicts(), columns


# --- texts ---------------------------------------------------------------------------------------------------------

def size_text(memory: str, row: dict[str, Any]) -> str:
    """A buffer's size as its dump states it: SMEM bytes, TMEM rows x columns."""
    if memory == "SMEM":
        return format_bytes(row["bytes"]) if row.get("bytes") is not None else "size unknown"
    return f"{row['rows']}x{row['cols']} ({row['cols']} columns)" if row.get("cols") is not None else "size unknown"


def op_text(row: dict[str, Any]) -> str:
    where = f"op {row['op_id']}" if row.get("op_id") is not None else row["node"]
    return f"{where} {row['op']}" + (f" ({row['role']})" if row.get("role") else "")


def count_text(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def totals_text(totals: dict[str, dict[str, int]]) -> str:
    """`planner_view.live_totals` in words: what is live at an op against each memory's capacity."""
    smem, tmem = totals["SMEM"], totals["TMEM"]
    return (f"SMEM: {count_text(smem['count'], 'buffer')}, {format_bytes(smem['size'])} of "
            f"{format_bytes(smem['capacity'])} · TMEM: {count_text(tmem['count'], 'allocation')}, "
            f"{tmem['size']} of {tmem['capacity']} columns")


def group_facts(run: Run, group: str) -> list[tuple[str, bool | None]] | None:
    """Peak SMEM and TMEM against capacity (text, fits?) and the group's counts; None without a summary row."""
    rows = planner_data(run).summary.filter(pl.col("group") == group)
    if not rows.height:
        return None
    row = rows.row(0, named=True)
    smem = ("no SMEM liveness graph" if row["peak_smem_bytes"] is None else
            f"peak live SMEM {format_bytes(row['peak_smem_bytes'])} at op {row['peak_smem_op']} "
            f"of {format_bytes(planner_liveness.SMEM_CAPACITY_BYTES)}")
    tmem = ("no TMEM allocations" if row["peak_tmem_cols"] is None else
            f"peak TMEM {row['peak_tmem_cols']} of {planner_liveness.TMEM_COLUMNS} columns at op "
            f"{row['peak_tmem_op']}")
    counts = f"{row['ops']} key ops · {row['channels']} channels · {row['partitions']} partitions"
    return [(smem, row["smem_fits"]), (tmem, row["tmem_fits"]), (counts, None)]
