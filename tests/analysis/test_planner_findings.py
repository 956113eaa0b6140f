"""Planner buffers that could share space: exact pairs and savings, and the finding with its link."""

from __future__ import annotations

import polars as pl

from dashboard.analysis.planner_sharing import sharing_findings, sharing_pairs

KIB = 1024


def buffers(rows: list[tuple[str, str, int, str, int | None, int | None, int | None, int, int]]) -> pl.DataFrame:
    """(group, memory, buffer_index, name, buffer_id, bytes, cols, start_op, end_op) rows of ws_buffers."""
    return pl.DataFrame(rows, orient="row", schema={
        "group": pl.String, "memory": pl.String, "buffer_index": pl.Int32, "name": pl.String, "buffer_id": pl.Int64,
        "bytes": pl.Int64, "cols": pl.Int32, "start_op": pl.Int64, "end_op": pl.Int64})


MIXED = buffers([
    ("g", "SMEM", 0, "a", 1, 40 * KIB, None, 0, 10),
    ("g", "SMEM", 1, "b", 2, 20 * KIB, None, 10, 20),
    ("g", "SMEM", 2, "c", 3, 30 * KIB, None, 20, 30),
    ("g", "SMEM", 3, "d", 1, 8 * KIB, None, 5, 12),   # shares id 1 with a: one allocation [0, 12)
    ("g", "SMEM", 4, "e", 4, 1 * KIB, None, 0, 30),   # overlaps every other
    ("g", "TMEM", 0, "acc", None, None, 128, 0, 5),
    ("g", "TMEM", 1, "acc2", None, None, 256, 5, 9),
])


def test_pairs_are_greedy_and_respect_existing_sharing() -> None:
    pairs = sharing_pairs(MIXED)
    # a+d [0,12) overlaps b [10,20); a+c saves 30 KiB; b+c (20 KiB) is then refused: c is taken.
    assert pairs.select("memory", "first", "second", "saving").rows() == [
        ("SMEM", "a", "c", 30 * KIB), ("TMEM", "acc", "acc2", 128)]


def test_finding_gives_bytes_at_stake_and_link() -> None:
    smem, tmem = sharing_findings("r1", MIXED)
    assert smem.at_stake_bytes == 30 * KIB
    assert smem.share == 30 / 227
    assert smem.severity == "info"  # a compile-time plan: no runtime at stake
    assert smem.url == "/planner?run=r1&group=g&buffer=SMEM-2"
    assert smem.evidence["pairs"] == 1
    assert tmem.at_stake_bytes == 128 * 512 and tmem.share == 128 / 512 and tmem.severity == "info"
    assert tmem.url == "/planner?run=r1&group=g&buffer=TMEM-1"


def test_no_finding_when_lifetimes_overlap_already_share_or_save_little() -> None:
    overlapping = buffers([("g", "SMEM", 0, "a", 1, 64 * KIB, None, 0, 10),
                           ("g", "SMEM", 1, "b", 2, 64 * KIB, None, 9, 20)])
    sharing = buffers([("g", "SMEM", 0, "a", 1, 64 * KIB, None, 0, 10),
                       ("g", "SMEM", 1, "b", 1, 64 * KIB, None, 10, 20)])
    small = buffers([("g", "SMEM", 0, "a", 1, 64 * KIB, None, 0, 10),
                     ("g", "SMEM", 1, "b", 2, 11 * KIB, None, 10, 20)])  # 11 KiB < 5 % of 227 KiB
    other_group = buffers([("g", "SMEM", 0, "a", 1, 64 * KIB, None, 0, 10),
                           ("h", "SMEM", 0, "b", 2, 64 * KIB, None, 10, 20)])
    for frame in (overlapping, sharing, other_group):
        assert sharing_pairs(frame).height == 0
        assert sharing_findings("r1", frame) == []
    assert sharing_pairs(small)["saving"].to_list() == [11 * KIB]
    assert sharing_findings("r1", small) == []
