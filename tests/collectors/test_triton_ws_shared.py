"""The triton_ws collector on the shared synthetic samples (CI-only; skipped without ../shared).

Counts are the ones ../shared/samples/ws/README.md states.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry

pytestmark = pytest.mark.shared


def _ws(shared_dir: Path, name: str) -> Path:
    return shared_dir / "samples" / "ws" / name


def _by_memory(buffers: pl.DataFrame) -> dict[str, int]:
    return dict(buffers.group_by("memory").len().iter_rows())


def test_fa_bwd_counts(shared_dir: Path) -> None:
    run = registry.collect([_ws(shared_dir, "fa_bwd")])
    groups = run.metadata["triton_ws"]["groups"]
    assert [g["group"] for g in groups] == ["fa_bwd#1"]  # output.txt repeats the dump files
    assert groups[0]["graphs"] == ["smem", "tmem", "combined"]  # the user doc's file naming
    assert _by_memory(run.tables["ws_buffers"]) == {"SMEM": 13, "TMEM": 6}
    assert run.tables["ws_channels"].height == 21
    ops = run.tables["ws_ops"]
    assert ops.height == 59
    assert ops["partitions"].explode().n_unique() == 6
    assert run.warnings == []
    smem = run.tables["ws_buffers"].filter(pl.col("memory") == "SMEM")
    assert smem.filter(pl.col("name") == "dqN").height == 4
    tmem = run.tables["ws_buffers"].filter(pl.col("memory") == "TMEM").sort("buffer_index")
    assert tmem.select("name", "rows", "cols", "operand_d").rows() == [
        ("dk", 128, 128, 2), ("dv", 128, 128, 2), ("qkT", 128, 128, 0), ("dpT", 128, 128, 0),
        ("dq", 128, 128, 0), ("dv", 128, 64, 0)]


def test_fa_bwd_log_alone_gives_the_same_tables(shared_dir: Path) -> None:
    from_files = registry.collect([_ws(shared_dir, "fa_bwd") / n for n in
                                   ("smem_liveness_0.dot", "tmem_liveness_1.dot", "combined_graph_2.dot")])
    from_log = registry.collect([_ws(shared_dir, "fa_bwd") / "output.txt"])
    for table in ("ws_buffers", "ws_ops", "ws_channels"):
        assert from_log.tables[table].drop("group").equals(from_files.tables[table].drop("group"))


def test_gemm_shared_buffer_ids_and_wrap_around(shared_dir: Path) -> None:
    run = registry.collect([_ws(shared_dir, "gemm")])
    assert run.tables["ws_ops"]["partitions"].explode().n_unique() == 4
    channels = run.tables["ws_channels"].sort("uid")
    smem = channels.filter(pl.col("memory") == "SMEM")
    assert smem.select("name", "buffer_id").rows() == [("a", 0), ("b", 0), ("c", 1), ("c", 1)]
    tmem = channels.filter(pl.col("memory") == "TMEM")
    assert tmem.select("src_op", "dst_op", "operand_d").rows() == [(30, 33, True), (33, 30, True)]
    (accumulator,) = run.tables["ws_buffers"].filter(pl.col("memory") == "TMEM").to_dicts()
    assert (accumulator["rows"], accumulator["cols"], accumulator["operand_d"]) == (128, 256, 2)


def test_multi_kernel_real_counter_order(shared_dir: Path) -> None:
    run = registry.collect([_ws(shared_dir, "multi_kernel_real_order")])
    meta = run.metadata["triton_ws"]
    assert [(g["group"], g["counters"]) for g in meta["groups"]] == [
        ("multi_kernel_real_order#1", [0, 1, 2]), ("multi_kernel_real_order#2", [3, 4, 5])]
    assert len(meta["repeated"]) == 2  # both log groups are the dump files again
    counts = run.tables["ws_ops"].group_by("group").len().sort("group")["len"].to_list()
    assert counts == [59, 12]
    log = registry.collect([_ws(shared_dir, "multi_kernel_real_order") / "output.txt"])
    names = [g["group"] for g in log.metadata["triton_ws"]["groups"]]
    assert names == ["output.txt#1", "output.txt#2 matmul_kernel_tma_persistent"]
    assert [g["counters"] for g in log.metadata["triton_ws"]["groups"]] == [[0, 1, 2], [3, 4, 5]]


def test_gemm_no_debug(shared_dir: Path) -> None:
    run = registry.collect([_ws(shared_dir, "gemm_no_debug")])
    (group,) = run.metadata["triton_ws"]["groups"]
    assert group["graphs"] == ["combined", "tmem"] and group["op_ids"] is False
    ops = run.tables["ws_ops"]
    assert ops["op_id"].null_count() == ops.height == 12
    assert "op_op_28304" in ops["node"].to_list()
    channels = run.tables["ws_channels"]
    assert channels.height == 6 and channels["src_op"].null_count() == 6
    assert _by_memory(run.tables["ws_buffers"]) == {"TMEM": 1}


def test_edge_cases(shared_dir: Path) -> None:
    run = registry.collect([_ws(shared_dir, "edge_cases")])
    groups = run.metadata["triton_ws"]["groups"]
    assert [g["counters"] for g in groups] == [[0, 1, 2], [3, 4, 5], [6]]
    assert "TMEM liveness: No TMEM allocations" in groups[1]["notes"]
    assert "SMEM liveness: No SMEM allocations" in groups[2]["notes"]
    assert run.warnings == ["edge_cases#3: no combined graph: the group is incomplete (the compile stopped "
                            "between dumps?)"]
    buffers = run.tables["ws_buffers"].filter(pl.col("group") == "edge_cases#1")
    smem = buffers.filter(pl.col("memory") == "SMEM").sort("buffer_index")
    assert smem["buffer_id"].to_list() == [0, 1, 2, 3, 5]  # the skipped [0,0) buffer leaves a gap
    assert smem["name"].to_list() == ["q", "k", "attn_fwd_edge.py:212", "alloc3", "scratch"]
    assert smem["channels"].to_list()[-1] == []  # "no channels"
    assert buffers.filter(pl.col("memory") == "TMEM")["name"].to_list() == ["acc", "qk", "alloc2"]
    ops = run.tables["ws_ops"].filter(pl.col("group") == "edge_cases#1")
    multi = ops.filter(pl.col("partitions").list.len() > 1).select("op_id", "partitions").rows()
    assert multi == [(18, [3, 4]), (19, [3, 4])]
    assert ops.filter(pl.col("op_id") == 15).row(0, named=True)["out"] == "?"
    channels = run.tables["ws_channels"].filter(pl.col("group") == "edge_cases#1").sort("uid")
    assert channels.height == 10
    guard = channels.filter(pl.col("uid") == 9).row(0, named=True)  # only in the combined graph
    assert (guard["src_op"], guard["dst_op"]) == (18, 17)
    assert not any(9 in uids for uids in buffers["channels"].to_list())
    backwards = channels.filter(pl.col("uid") == 6).row(0, named=True)
    assert (backwards["src_op"], backwards["dst_op"]) == (31, 26)
    unnamed = channels.filter(pl.col("uid") == 3).row(0, named=True)
    assert unnamed["name"] is None and unnamed["buffer_id"] is None
