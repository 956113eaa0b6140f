"""Per-op memory analysis on small frames built by hand (values in KiB per bank for readability)."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis import memory as analysis

KIB = 1024
# op_index, op_type, mlir_op, const_eval_graph, DRAM allocated, DRAM largest free (KiB per bank, 100 total)
OPS = [
    (0, "ToLayoutOp", "ttnn.to_layout", "main_const_eval_0", 10, 90),
    (1, "ToLayoutOp", "ttnn.to_layout", "main_const_eval_0", 20, 80),
    (2, "MatmulOp", "ttnn.matmul", None, 20, 80),
    (3, "EltwiseBinaryOp", "ttnn.multiply", None, 50, 40),
    (4, "ReductionOp", "ttnn.mean", None, 80, 10),
    (5, "DeallocateOp", "ttnn.deallocate", None, 80, 10),
    (6, "EltwiseBinaryOp", "ttnn.add", None, 50, 30),
    (7, "ToLayoutOp", "ttnn.to_layout", "main_const_eval_1", 60, 30),
    (8, "ReductionOp", "ttnn.sum", None, 80, 20),
]


def frame(rank: int = 0) -> pl.DataFrame:
    rows = []
    for op_index, op_type, mlir_op, graph, allocated, largest in OPS:
        common = {"rank": rank, "program": graph or "main", "op_index": op_index, "op_type": op_type,
                  "mlir_op": mlir_op, "loc": f"loc.{op_index}", "const_eval_graph": graph,
                  "is_weight_op": graph is not None}
        for bt, banks, total, alloc, big in (("DRAM", 12, 100, allocated, largest), ("TRACE", 12, 0, 0, 0),
                                             ("L1", 64, 8, 8 if op_index == 2 else 1, 0 if op_index == 2 else 7)):
            rows.append({**common, "buffer_type": bt, "banks": banks, "total_per_bank": total * KIB,
                         "allocated_per_bank": alloc * KIB, "free_per_bank": (total - alloc) * KIB,
                         "largest_free_per_bank": big * KIB, "total": total * KIB * banks,
                         "allocated": alloc * KIB * banks, "free": (total - alloc) * KIB * banks,
                         "largest_free": big * KIB * banks})
    return schema.conform("op_memory", pl.DataFrame(rows)).sample(fraction=1.0, shuffle=True, seed=3)


def test_fragmentation_math() -> None:
    values = pl.DataFrame({"free_per_bank": [100, 100, 0, 50], "largest_free_per_bank": [100, 25, 0, 51]})
    result = values.select(analysis.fragmentation().alias("f"))["f"].to_list()
    assert result == [0.0, 0.75, 0.0, 0.0]  # one hole, a quarter, nothing free, rounding clipped


def test_curves_per_bank_and_device() -> None:
    per_bank = analysis.memory_curves(frame())
    dram = per_bank.filter(pl.col("buffer_type") == "DRAM")
    assert dram["op_index"].to_list() == list(range(9))  # ordered despite the shuffled input
    assert dram["allocated"][4] == 80 * KIB and dram["capacity"][0] == 100 * KIB
    assert dram["fragmentation"][4] == pytest.approx(1 - 10 / 20)
    assert dram["utilisation"][4] == pytest.approx(0.8)
    assert dram["housekeeping"].to_list() == [False] * 5 + [True] + [False] * 3
    device = analysis.memory_curves(frame(), per_bank=False).filter(pl.col("buffer_type") == "DRAM")
    assert device["allocated"][4] == 80 * KIB * 12
    l1 = per_bank.filter(pl.col("buffer_type") == "L1")
    assert l1["fragmentation"][2] == 0.0  # a full bank: nothing free, defined as 0
    assert analysis.peaks(frame())["buffer_type"].to_list() == ["DRAM", "L1", "TRACE"]


def test_deltas_belong_to_the_op_that_ran() -> None:
    deltas = analysis.with_deltas(frame()).filter(pl.col("buffer_type") == "DRAM")
    assert deltas["delta_per_bank"].to_list() == [k * KIB for k in (10, 0, 30, 30, 0, -30, 10, 20)] + [None]
    assert deltas["delta"][3] == 30 * KIB * 12


def test_peak_first_occurrence_and_culprit() -> None:
    peaks = analysis.peaks(frame())
    dram = peaks.filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    # 80 KiB is seen before ops 4, 5 and 8: the first counts; op 3 allocated it.
    assert (dram["peak_op_index"], dram["next_mlir_op"]) == (4, "ttnn.mean")
    assert (dram["culprit_op_index"], dram["culprit_mlir_op"], dram["culprit_loc"]) == (3, "ttnn.multiply", "loc.3")
    assert dram["culprit_delta_per_bank"] == 30 * KIB
    assert dram["fragmentation"] == pytest.approx(0.5)
    trace = peaks.filter(pl.col("buffer_type") == "TRACE").row(0, named=True)
    assert trace["allocated_per_bank"] == 0 and trace["culprit_op_index"] is None


def test_peak_without_housekeeping_snapshots() -> None:
    rows = frame().filter(~((pl.col("op_index") == 4) & (pl.col("buffer_type") == "DRAM")))
    dram = analysis.peaks(rows, housekeeping_snapshots=False).filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    # Without op 4's DRAM row and without the deallocate (op 5), the peak is before op 8.
    assert (dram["peak_op_index"], dram["culprit_op_index"]) == (8, 7)


def test_top_growth() -> None:
    top = analysis.top_growth(frame(), n=2, buffer_types=["DRAM"])
    assert top["op_index"].to_list() == [2, 3]  # two +30 KiB ops, earliest first on ties
    assert top["delta_per_bank"].to_list() == [30 * KIB, 30 * KIB]
    assert analysis.top_growth(frame(), n=5)["buffer_type"].unique(maintain_order=True).to_list() == ["DRAM", "L1"]


def test_const_eval_regions() -> None:
    regions = analysis.const_eval_regions(frame())
    assert regions.select("const_eval_graph", "start_op_index", "end_op_index", "ops").rows() == [
        ("main_const_eval_0", 0, 1, 2), ("main_const_eval_1", 7, 7, 1)]


def test_filters_and_op_table() -> None:
    table = analysis.op_table(frame())
    assert 5 not in table["op_index"].to_list() and table.height == 8
    assert table.filter(pl.col("op_index") == 4)["DRAM_delta"][0] == 0
    assert table.filter(pl.col("op_index") == 8)["DRAM_delta"][0] is None
    assert {"DRAM_allocated", "L1_delta", "TRACE_allocated"} <= set(table.columns)
    picked = analysis.filter_ops(table, op_types=["ReductionOp"], op_range=(0, 5))
    assert picked["op_index"].to_list() == [4]
    assert analysis.filter_ops(table, programs=["main_const_eval_0"])["op_index"].to_list() == [0, 1]
    assert analysis.filter_ops(table, mlir_ops=["ttnn.sum"])["op_index"].to_list() == [8]
    both = analysis.op_table(frame(), show_housekeeping=True)
    assert both.filter(pl.col("op_index") == 5)["DRAM_delta"][0] == -30 * KIB


def test_range_stats() -> None:
    stats = analysis.range_stats(frame(), 2, 6).filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    assert (stats["ops"], stats["deallocates"]) == (4, 1)
    assert stats["start_per_bank"] == 20 * KIB and stats["end_per_bank"] == 60 * KIB  # after op 6
    assert (stats["peak_per_bank"], stats["peak_op_index"]) == (80 * KIB, 4)
    assert stats["growth_per_bank"] == 70 * KIB and stats["freed_per_bank"] == 30 * KIB
    assert stats["net_per_bank"] == 40 * KIB
    assert stats["max_fragmentation"] == pytest.approx(0.5)


def test_op_detail_joins_metadata() -> None:
    meta = schema.conform("op_meta", pl.DataFrame({"rank": [0], "op_index": [3], "mlir_op": ["ttnn.multiply"],
                                                   "result": ["%3"], "output_shapes": [["1x32"]]}))
    detail = analysis.op_detail(frame(), meta, 3)
    dram = detail.filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    assert (dram["before_per_bank"], dram["after_per_bank"], dram["delta_per_bank"]) == (50 * KIB, 80 * KIB,
                                                                                       30 * KIB)
    assert dram["result"] == "%3" and dram["output_shapes"] == ["1x32"]
    assert analysis.op_detail(frame(), meta, 99).is_empty()


def test_downsample_keeps_extremes() -> None:
    steps = 10_000
    rows = pl.DataFrame({"rank": [0] * steps, "buffer_type": ["DRAM"] * steps, "op_index": list(range(steps)),
                         "allocated": [(i * 7919) % 1000 for i in range(steps)]}).with_columns(
        pl.when(pl.col("op_index") == 4321).then(5000).otherwise(pl.col("allocated")).alias("allocated"))
    small = analysis.downsample(rows, "allocated", 200)
    assert small.height <= 200
    assert 4321 in small["op_index"].to_list() and small["allocated"].max() == 5000
    assert analysis.downsample(rows.head(50), "allocated", 200).height == 50
