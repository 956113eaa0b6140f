"""The synthetic mochi run in ../shared/samples/tt: the peaks its README states (CI-only)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import memory as analysis
from dashboard.collectors import registry

pytestmark = pytest.mark.shared
MIB = 1024 * 1024
RUN = "samples/tt/mochi_20260122_143957"


def mib(value: int) -> float:
    return round(value / MIB, 3)


@pytest.fixture(scope="module")
def folder_run(shared_dir: Path) -> registry.CollectedRun:
    return registry.collect([shared_dir / RUN])


@pytest.fixture(scope="module")
def json_run(shared_dir: Path) -> registry.CollectedRun:
    folder = shared_dir / RUN
    return registry.collect([folder / "mochi_memory.json", folder / "mochi_operations.json"])


def _peak(frame: pl.DataFrame, buffer_type: str) -> dict:
    return frame.filter(pl.col("buffer_type") == buffer_type).row(0, named=True)


def test_readme_peaks_from_the_json(json_run: registry.CollectedRun) -> None:
    peaks = analysis.peaks(json_run.tables["op_memory"])
    dram = _peak(peaks, "DRAM")
    # "DRAM peak 803.886 / 1023.418 MB/bank (78.5 %) at op 208 (ttnn.mean; the buffer was
    # allocated by op 207 ttnn.multiply), free 219.532 but largest contiguous only 113.269"
    assert (dram["peak_op_index"], dram["next_mlir_op"]) == (208, "ttnn.mean")
    assert (dram["culprit_op_index"], dram["culprit_mlir_op"]) == (207, "ttnn.multiply")
    assert mib(dram["allocated_per_bank"]) == 803.886 and mib(dram["capacity_per_bank"]) == 1023.418
    assert mib(dram["free_per_bank"]) == 219.532 and mib(dram["largest_free_per_bank"]) == 113.269
    assert dram["utilisation"] == pytest.approx(0.785, abs=5e-4)
    assert dram["fragmentation"] == pytest.approx(0.484, abs=5e-4)
    # "L1 rises to 0.891 MB/bank (70 %) at op 132"
    l1 = _peak(peaks, "L1")
    assert (l1["peak_op_index"], mib(l1["allocated_per_bank"])) == (132, 0.891)
    assert l1["utilisation"] == pytest.approx(0.70, abs=0.005)
    curves = analysis.memory_curves(json_run.tables["op_memory"])
    # "L1 fragmentation up to 56 %"; TRACE region 0 (fragmentation defined as 0 there).
    assert curves.filter(pl.col("buffer_type") == "L1")["fragmentation"].max() == pytest.approx(0.56, abs=0.005)
    assert curves.filter(pl.col("buffer_type") == "TRACE")["fragmentation"].max() == 0.0
    # "L1_SMALL 0 -> 0.006 MB/bank"
    small = curves.filter(pl.col("buffer_type") == "L1_SMALL")["allocated"]
    assert (mib(small[0]), mib(small[-1])) == (0.0, 0.006)


def test_log_and_json_agree_and_the_log_wins(folder_run: registry.CollectedRun) -> None:
    info = folder_run.metadata["tt_memory"]
    assert info["source"] == "runtime log" and folder_run.warnings == []
    meta = folder_run.tables["op_meta"]
    # "393 executed ops incl. 153 ttnn.deallocate and 19 ttnn.get_device; 18 const-eval programs"
    assert meta.height == 393
    assert meta.filter(pl.col("mlir_op") == "ttnn.deallocate").height == 153
    assert meta.filter(pl.col("mlir_op") == "ttnn.get_device").height == 19
    assert meta["profiler_index"].drop_nulls().to_list() == list(range(221))
    assert analysis.const_eval_regions(folder_run.tables["op_memory"]).height == 18
    # "0–93 const-eval (weights prepared, const_eval_graph set)"
    weights = meta.filter(pl.col("const_eval_graph").is_not_null())
    assert weights["profiler_index"].max() == 93 and weights["is_weight_op"].all()


def test_log_peaks_in_the_profilers_view_and_finer(folder_run: registry.CollectedRun) -> None:
    memory = folder_run.tables["op_memory"]
    profiler_view = analysis.peaks(memory, housekeeping_snapshots=False)
    dram = _peak(profiler_view, "DRAM")
    assert (dram["peak_profiler_index"], dram["culprit_profiler_index"]) == (208, 207)
    assert dram["culprit_mlir_op"] == "ttnn.multiply" and mib(dram["allocated_per_bank"]) == 803.886
    assert _peak(profiler_view, "L1")["peak_profiler_index"] == 132
    # The log also has the states just before deallocates, which the JSON drops: the
    # true observed DRAM peak is at least as high, and still blamed on a real op.
    every = _peak(analysis.peaks(memory), "DRAM")
    assert every["allocated_per_bank"] >= dram["allocated_per_bank"]
    assert every["culprit_mlir_op"] not in ("ttnn.deallocate", "ttnn.get_device")
