"""The history trend of a run series on hand-computed numbers, and the Runs page's compare links."""

from __future__ import annotations

import polars as pl

from dashboard import schema
from dashboard.analysis.compare_history import BUSY, KERNEL, MEMORY, STEP, predecessor, series_runs
from dashboard.layouts.compare_links import compare_links
from dashboard.store import RunStore
from dashboard.views.history import history


def kernel_run(scale: int) -> dict[str, pl.DataFrame]:
    """Two steps of kernels 'gemm' (100 x scale ns) then 'relu' (50 ns), a 50 ns gap between steps."""
    rows, start = [], 0
    for step in (1, 2):
        for name, duration in (("gemm", 100 * scale), ("relu", 50)):
            rows.append({"rank": 0, "name": name, "start_ns": start, "end_ns": start + duration, "step": step})
            start += duration
        start += 50
    return {"kernels": schema.conform("kernels", pl.DataFrame(rows))}


def memory_run(dram: list[int]) -> dict[str, pl.DataFrame]:
    return {"op_memory": schema.conform("op_memory", pl.DataFrame({
        "rank": 0, "op_index": list(range(len(dram))), "op_type": "Op", "buffer_type": "DRAM", "banks": 1,
        "total_per_bank": 1000, "allocated_per_bank": dram, "free_per_bank": [1000 - d for d in dram],
        "largest_free_per_bank": [1000 - d for d in dram]}))}


def value(frame: pl.DataFrame, run_id: str, metric: str, series: str) -> float | None:
    found = frame.filter(pl.col("run_id") == run_id, pl.col("metric") == metric, pl.col("series") == series)
    return found.get_column("value").item() if found.height else None


def test_history_metrics_per_run(tmp_path) -> None:
    store = RunStore(tmp_path / "data")
    first = store.write("train", kernel_run(1))
    second = store.write("train", kernel_run(3))
    memory = store.write("mem", memory_run([0, 300, 200]))
    ids = series_runs(store.list_runs(), "train")
    assert ids == [first, second]
    picked = series_runs(store.list_runs(), None, [memory, first, "gone"])
    assert sorted(picked) == sorted([memory, first])  # oldest first; unknown ids are left out
    frame = history([store.open(run_id) for run_id in (first, second, memory)])
    # Step span: gemm + relu = 150 ns (first), 350 ns (second). Busy: 300 of 350 ns, 700 of 750 ns.
    assert value(frame, first, STEP, STEP) == 150 and value(frame, second, STEP, STEP) == 350
    assert value(frame, first, BUSY, BUSY) == 300 / 350 and value(frame, second, BUSY, BUSY) == 700 / 750
    assert value(frame, first, KERNEL, "gemm") == 200 and value(frame, second, KERNEL, "gemm") == 600
    assert value(frame, second, KERNEL, "relu") == 100
    assert value(frame, memory, MEMORY, "DRAM") == 300
    assert value(frame, memory, STEP, STEP) is None  # no kernels: no point, never 0
    assert frame.filter(pl.col("run_id") == memory).get_column("position").unique().to_list() == [2]
    assert predecessor(ids, second) == first and predecessor(ids, first) is None


def test_top_kernels_are_the_series_largest(tmp_path) -> None:
    store = RunStore(tmp_path / "data")
    run_id = store.write("train", kernel_run(1))
    frame = history([store.open(run_id)], top_kernels=1)
    assert frame.filter(pl.col("metric") == KERNEL).get_column("series").to_list() == ["gemm"]


def test_compare_links_need_two_ticked_runs() -> None:
    newer = {"id": "b", "created": "2026-11-24 10:00"}
    older = {"id": "a", "created": "2026-11-24 09:00"}
    assert compare_links([newer, older]) == ("/compare?run=a&other=b", False, "/history?runs=a%2Cb", False)
    assert compare_links([older]) == ("/compare", True, "/history", True)
    three = compare_links([newer, older, {"id": "c", "created": "2026-11-24 11:00"}])
    assert three[1] is True and three[2] == "/history?runs=a%2Cb%2Cc" and three[3] is False
