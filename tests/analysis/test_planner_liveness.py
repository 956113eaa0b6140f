"""Planner liveness analysis on small hand-made tables with hand-checked answers."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis import planner_liveness as lv

G = "k#1"


def _buffers() -> pl.DataFrame:
    rows = [
        # SMEM: A [0,10) 100 B, B [5,15) 50 B, C [10,12) 30 B
        {"group": G, "memory": "SMEM", "buffer_index": 0, "name": "A", "buffer_id": 0, "bytes": 100,
         "start_op": 0, "end_op": 10, "channels": [0]},
        {"group": G, "memory": "SMEM", "buffer_index": 1, "name": "B", "buffer_id": 1, "bytes": 50,
         "start_op": 5, "end_op": 15, "channels": [1, 2]},
        {"group": G, "memory": "SMEM", "buffer_index": 2, "name": "C", "buffer_id": 3, "bytes": 30,
         "start_op": 10, "end_op": 12, "channels": []},
        # TMEM: X 128x128 [2,8), Z 128x64 [4,9) as operand D, Y 128x256 [8,20)
        {"group": G, "memory": "TMEM", "buffer_index": 0, "name": "X", "rows": 128, "cols": 128,
         "start_op": 2, "end_op": 8, "channels": [3], "operand_d": 0},
        {"group": G, "memory": "TMEM", "buffer_index": 1, "name": "Z", "rows": 128, "cols": 64,
         "start_op": 4, "end_op": 9, "channels": [4], "operand_d": 1},
        {"group": G, "memory": "TMEM", "buffer_index": 2, "name": "Y", "rows": 128, "cols": 256,
         "start_op": 8, "end_op": 20, "channels": [], "operand_d": 0},
        # Another compile with TMEM only (no SMEM liveness dump).
        {"group": "k#2", "memory": "TMEM", "buffer_index": 0, "name": "acc", "rows": 128, "cols": 256,
         "start_op": 1, "end_op": 3, "channels": [0], "operand_d": 2},
    ]
    return schema.conform("ws_buffers", pl.DataFrame(rows, schema=schema.schema_of("ws_buffers")))


def _ops() -> pl.DataFrame:
    rows = [
        {"group": G, "op_id": 1, "node": "op_op_1", "graph_order": 0, "partitions": [0], "op": "local_store"},
        {"group": G, "op_id": 6, "node": "op_op_6", "graph_order": 1, "partitions": [1], "op": "local_load"},
        {"group": G, "op_id": 7, "node": "op_op_7", "graph_order": 2, "partitions": [1, 2], "op": "tmem_load"},
        {"group": G, "op_id": 3, "node": "op_op_3", "graph_order": 3, "partitions": [1], "op": "tc_gen5_mma"},
        {"group": "k#2", "op_id": None, "node": "op_op_99", "graph_order": 0, "partitions": [0], "op": "x"},
    ]
    return schema.conform("ws_ops", pl.DataFrame(rows, schema=schema.schema_of("ws_ops")))


def _channels() -> pl.DataFrame:
    rows = [
        {"group": G, "uid": 0, "src_op": 1, "dst_op": 6, "src_node": "op_op_1", "dst_node": "op_op_6",
         "memory": "SMEM", "buffer_id": 0, "name": "A", "operand_d": False},
        {"group": G, "uid": 1, "src_op": 1, "dst_op": 7, "src_node": "op_op_1", "dst_node": "op_op_7",
         "memory": "SMEM", "buffer_id": 1, "name": "B", "operand_d": False},
        {"group": G, "uid": 2, "src_op": 7, "dst_op": 1, "src_node": "op_op_7", "dst_node": "op_op_1",
         "memory": "SMEM", "buffer_id": 1, "name": "B", "operand_d": False},
        {"group": G, "uid": 3, "src_op": 3, "dst_op": 7, "src_node": "op_op_3", "dst_node": "op_op_7",
         "memory": "TMEM", "buffer_id": None, "name": "X", "operand_d": False},
        {"group": G, "uid": 4, "src_op": 7, "dst_op": 3, "src_node": "op_op_7", "dst_node": "op_op_3",
         "memory": "TMEM", "buffer_id": None, "name": "Z", "operand_d": True},
    ]
    return schema.conform("ws_channels", pl.DataFrame(rows, schema=schema.schema_of("ws_channels")))


def test_capacities() -> None:
    assert lv.TMEM_COLUMNS == 512
    assert lv.SMEM_CAPACITY_BYTES == 232_448


def test_live_smem_bytes_step_series_is_half_open() -> None:
    usage = lv.live_usage(_buffers(), G, "SMEM")
    # At 10, A has ended and C has started: 50 + 30, not 180.
    assert usage.rows() == [(0, 100, 1), (5, 150, 2), (10, 80, 2), (12, 50, 1), (15, 0, 0)]


def test_live_tmem_columns() -> None:
    usage = lv.live_usage(_buffers(), G, "TMEM")
    assert usage.select("op_id", "live").rows() == [(2, 128), (4, 192), (8, 320), (9, 256), (20, 0)]


def test_peak_usage() -> None:
    assert lv.peak_usage(_buffers(), G, "SMEM").row(0) == (150, 5, 2)
    assert lv.peak_usage(_buffers(), G, "TMEM").row(0) == (320, 8, 2)
    assert lv.peak_usage(_buffers(), "k#2", "SMEM").row(0) == (0, None, 0)


def test_over_capacity_merges_consecutive_steps() -> None:
    assert lv.over_capacity(_buffers(), G, "TMEM", capacity=200).rows() == [(8, 20, 320)]
    assert lv.over_capacity(_buffers(), G, "SMEM", capacity=90).rows() == [(0, 10, 150)]
    assert lv.over_capacity(_buffers(), G, "TMEM").is_empty()  # 320 <= 512


@pytest.mark.parametrize(("op_id", "names"), [(9, ["A", "B"]), (10, ["B", "C"]), (15, []), (4, ["A"])])
def test_live_buffers_at(op_id: int, names: list[str]) -> None:
    assert lv.live_buffers_at(_buffers(), G, op_id, "SMEM")["name"].to_list() == names


def test_live_buffers_at_any_memory() -> None:
    live = lv.live_buffers_at(_buffers(), G, 8)
    assert live.select("memory", "name").rows() == [("SMEM", "A"), ("SMEM", "B"), ("TMEM", "Z"), ("TMEM", "Y")]


def test_channels_and_ops_of_a_buffer() -> None:
    buffers, channels, ops = _buffers(), _channels(), _ops()
    assert lv.channels_of_buffer(buffers, channels, G, "SMEM", 1)["uid"].to_list() == [1, 2]
    used = lv.ops_of_buffer(buffers, channels, ops, G, "SMEM", 1)
    assert used.select("node", "role").rows() == [("op_op_1", "consumer+producer"), ("op_op_7", "consumer+producer")]
    assert lv.ops_of_buffer(buffers, channels, ops, G, "TMEM", 0).select("node", "role").rows() == [
        ("op_op_7", "consumer"), ("op_op_3", "producer")]
    assert lv.channels_of_buffer(buffers, channels, G, "SMEM", 2).is_empty()


def test_buffers_of_channels_and_of_op() -> None:
    buffers, channels = _buffers(), _channels()
    assert lv.buffers_of_channels(buffers, G, [4, 0])["name"].to_list() == ["A", "Z"]
    # op_op_3 is the MMA: it writes X (ch3) and reads Z (ch4).
    assert lv.buffers_of_op(buffers, channels, G, "op_op_3")["name"].to_list() == ["X", "Z"]


def test_ops_of_partition_and_partitions() -> None:
    ops = _ops()
    assert lv.ops_of_partition(ops, G, 1)["op_id"].to_list() == [6, 7, 3]
    assert lv.ops_of_partition(ops, G, 2)["op_id"].to_list() == [7]
    assert lv.partitions_of(ops, G) == [0, 1, 2]


def test_buffer_summaries_like_the_dump_tables() -> None:
    smem = lv.buffer_summary(_buffers(), G, "SMEM")
    assert smem.select("name", "buffer_id", "size", "channel_count", "channels", "liveness").rows() == [
        ("A", 0, 100, 1, "ch0", "[0-10)"), ("B", 1, 50, 2, "ch1, ch2", "[5-15)"), ("C", 3, 30, 0, "", "[10-12)")]
    tmem = lv.buffer_summary(_buffers(), G, "TMEM")
    assert tmem.select("name", "size", "liveness", "operand_d").rows() == [
        ("X", "128x128", "[2-8)", 0), ("Z", "128x64", "[4-9)", 1), ("Y", "128x256", "[8-20)", 0)]


def test_partition_summary() -> None:
    summary = lv.partition_summary(_ops(), _channels(), G)
    assert summary.rows() == [
        # partition, ops, smem_out, tmem_out, smem_in, tmem_in
        (0, 1, 2, 0, 1, 0),
        (1, 3, 1, 2, 2, 2),
        (2, 1, 1, 1, 1, 1),
    ]


def test_channel_table_joins_partitions() -> None:
    table = lv.channel_table(_channels(), _ops(), G)
    row = table.filter(pl.col("uid") == 3).row(0, named=True)
    assert row["src_partitions"] == [1] and row["dst_partitions"] == [1, 2]
    assert row["src_name"] == "tc_gen5_mma" and row["dst_name"] == "tmem_load"


def test_group_summary_peaks_and_unknowns() -> None:
    summary = lv.group_summary(_buffers(), _ops(), _channels(), smem_capacity=120)
    first = summary.filter(pl.col("group") == G).row(0, named=True)
    assert (first["smem_buffers"], first["tmem_buffers"], first["channels"], first["ops"], first["partitions"]) == (
        3, 3, 5, 4, 3)
    assert (first["peak_smem_bytes"], first["peak_smem_op"], first["smem_fits"]) == (150, 5, False)
    assert (first["peak_tmem_cols"], first["peak_tmem_op"], first["tmem_fits"]) == (320, 8, True)
    second = summary.filter(pl.col("group") == "k#2").row(0, named=True)
    # No SMEM liveness graph: the peak is unknown, not zero.
    assert second["peak_smem_bytes"] is None and second["smem_fits"] is None
    assert second["peak_tmem_cols"] == 256 and second["has_op_ids"] is False


def test_planner_groups_in_first_seen_order() -> None:
    assert lv.planner_groups(_buffers(), _ops(), _channels()) == [G, "k#2"]
