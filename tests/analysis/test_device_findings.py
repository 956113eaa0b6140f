"""Device-memory and planner findings appear where the numbers cross their thresholds, and only there."""

from __future__ import annotations

import polars as pl

from dashboard import schema
from dashboard.analysis.device_findings import memory_findings, planner_findings
from tests.analysis.test_memory import KIB, frame

GROUP = "attention_fwd"


def _op_memory(allocated: list[int], largest: list[int], total: int = 100, padded: tuple[int, int] | None = None,
               ) -> pl.DataFrame:
    """One DRAM snapshot per op, values in KiB per bank, 10 banks; `padded` = (padded, unpadded) bytes."""
    rows = [{"rank": 0, "program": "main", "op_index": index, "op_type": "MatmulOp", "mlir_op": "ttnn.matmul",
             "buffer_type": "DRAM", "banks": 10, "total_per_bank": total * KIB, "allocated_per_bank": used * KIB,
             "free_per_bank": (total - used) * KIB, "largest_free_per_bank": big * KIB, "total": total * KIB * 10,
             "allocated": used * KIB * 10, "free": (total - used) * KIB * 10, "largest_free": big * KIB * 10,
             "padded_bytes": padded[0] if padded else None, "unpadded_bytes": padded[1] if padded else None}
            for index, (used, big) in enumerate(zip(allocated, largest, strict=True))]
    return schema.conform("op_memory", pl.DataFrame(rows))


def test_peak_and_fragmentation_of_the_shared_memory_frame() -> None:
    found = {finding.key: finding for finding in memory_findings("m1", frame())}
    dram = found["memory:peak:0:DRAM"]
    assert (dram.share, dram.at_stake_bytes) == (0.8, 80 * KIB * 12)
    assert dram.evidence["allocated by (culprit)"] == "op 3 ttnn.multiply (+30 KiB per bank)"
    assert dram.url == "/memory?run=m1&rank=0&op=4"
    assert found["memory:peak:0:L1"].share == 1.0
    fragmented = found["memory:fragmentation:0:DRAM"]
    assert (fragmented.share, fragmented.at_stake_bytes) == (0.1, 10 * KIB * 12)  # 20 free, largest block 10
    assert "memory:fragmentation:0:L1" not in found and not [key for key in found if "TRACE" in key]


def test_low_peak_and_one_free_block_give_nothing() -> None:
    assert memory_findings("m1", _op_memory([10, 50, 20], [90, 50, 80])) == []


def test_tile_padding_waste_only_where_recorded_and_large() -> None:
    wasteful = memory_findings("m1", _op_memory([10, 20], [90, 80], padded=(1000, 800)))
    assert [(f.key, f.at_stake_bytes, f.share) for f in wasteful] == [("memory:padding", 200, 0.2)]
    assert memory_findings("m1", _op_memory([10, 20], [90, 80], padded=(1000, 950))) == []


def _buffers(sizes_kib: list[int]) -> pl.DataFrame:
    rows = [{"group": GROUP, "memory": "SMEM", "buffer_index": index, "name": f"buf{index}", "bytes": size * KIB,
             "start_op": index * 5, "end_op": index * 5 + 10} for index, size in enumerate(sizes_kib)]
    return schema.conform("ws_buffers", pl.DataFrame(rows))


def test_planner_smem_without_headroom() -> None:
    (finding,) = planner_findings("p1", _buffers([120, 100]))
    assert finding.at_stake_bytes == 220 * KIB and finding.share == 220 / 227
    assert finding.title == f"SMEM of {GROUP} peaks at 220 KiB of 227 KiB (3% headroom)"
    assert finding.url == f"/planner?run=p1&group={GROUP}&op=5"
    assert planner_findings("p1", _buffers([100, 50])) == []


def test_planner_tmem_without_headroom_has_bytes_at_stake() -> None:
    # TMEM counts columns; a finding must still say what is at stake (the report's contract), in bytes.
    rows = [{"group": GROUP, "memory": "TMEM", "buffer_index": index, "name": f"acc{index}", "cols": cols,
             "start_op": 0, "end_op": 10} for index, cols in enumerate([256, 240])]
    (finding,) = planner_findings("p1", schema.conform("ws_buffers", pl.DataFrame(rows)))
    assert finding.title == f"TMEM of {GROUP} peaks at 496 columns of 512 columns (3% headroom)"
    assert finding.at_stake_bytes == 496 * 512
