"""The profiler's JSON files, run folders (which source wins) and the demo generator."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import memory as analysis
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress, probe_file
from dashboard.collectors.tt.collector import COLLECTOR
from dashboard.demo import tt_memory_log

MIB = 1024 * 1024


def view(allocated: float, largest: float, total: float = 100.0, banks: int = 12) -> dict:
    return {"numBanks": banks, "totalBytesPerBank_MB": total, "totalBytesAllocatedPerBank_MB": allocated,
            "totalBytesFreePerBank_MB": round(total - allocated, 3), "largestContiguousBytesFreePerBank_MB": largest}


def memory_entries() -> list[dict]:
    """Four ops: weights in const-eval, then a multiply whose output peaks DRAM before the mean."""
    rows = [("ToLayoutOp", "ttnn.to_layout", "w.tile", "main_const_eval_0", 1.0),
            ("EltwiseBinaryOp", "ttnn.multiply", "multiply.7", None, 2.0),
            ("ReductionOp", "ttnn.mean", "reduce.8_mean", None, 42.0),
            ("EltwiseBinaryOp", "ttnn.add", "add.9", None, 12.0)]
    return [{"op_type": t, "memory": {"DRAM": view(a, 100 - a - (10 if a > 40 else 0)),
                                      "L1": view(0.5 if i == 2 else 0.0, 1.25 - (0.5 if i == 2 else 0.0), 1.25, 64)},
             "index": i, "mlir_op": op, "loc": loc, "const_eval_graph": graph, "const_eval_cache_miss": False,
             "is_weight_op": graph is not None}
            for i, (t, op, loc, graph, a) in enumerate(rows)]


def operation_records() -> list[dict]:
    return [{"result": f"%{i}", "mlir_op": e["mlir_op"], "inputs": [f"%{i - 1}"], "attributes": None,
             "input_types": None, "output_type": "tensor<1x32xf32, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, "
             "memref<1x1x!ttcore.tile<32x32, f32>, #ttnn.buffer_type<dram>>, <interleaved>>>",
             "input_shapes": ["1x32"], "input_dtypes": ["f32"], "output_shapes": ["1x32"], "output_dtypes": ["f32"],
             "loc": e["loc"], "index": i, "const_eval_graph": e["const_eval_graph"], "const_eval_cache_miss": False,
             "is_weight_op": e["is_weight_op"] or i == 1, "weights": []}
            for i, e in enumerate(memory_entries())]


def write_json(folder: Path, memory: object, operations: object | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "m_memory.json"]
    paths[0].write_text(json.dumps(memory))
    if operations is not None:
        paths.append(folder / "m_operations.json")
        paths[1].write_text(json.dumps(operations))
    return paths


def test_v0_memory_and_operations_json(tmp_path: Path) -> None:
    entries = memory_entries()
    document = {"metadata": {"memory_config": {}, "total_operations": 4}, "operations": entries}
    tables = COLLECTOR.collect(write_json(tmp_path, document, operation_records()), no_progress).tables
    memory, meta = tables["op_memory"], tables["op_meta"]
    assert memory.height == 8 and meta["op_index"].to_list() == [0, 1, 2, 3]
    assert meta["program"].to_list() == ["main_const_eval_0", "main", "main", "main"]  # caller of main_const_eval_0
    assert meta["is_weight_op"].to_list() == [True, True, False, False]  # operations.json's upgraded flag
    assert meta["buffer_types"][1].to_list() == ["DRAM"] and meta["layouts"][1].to_list() == ["tile/interleaved"]
    dram = memory.filter(pl.col("buffer_type") == "DRAM")
    assert dram["allocated_per_bank"].to_list() == [round(v * MIB) for v in (1.0, 2.0, 42.0, 12.0)]
    peak = analysis.peaks(memory).filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    assert (peak["peak_op_index"], peak["culprit_mlir_op"]) == (2, "ttnn.multiply")
    assert peak["fragmentation"] == pytest.approx(1 - 48 / 58)


def test_bare_list_and_v1_unpadded_memory(tmp_path: Path) -> None:
    entries = memory_entries()
    for e in entries:
        e["unpadded_memory"] = {"DRAM": {"unpadded_bytes": 1000, "padded_bytes": 4096, "num_tensors": 1,
                                         "unpadded_MB": 0.001, "padded_MB": 0.004, "overhead_MB": 0.003,
                                         "overhead_pct": 75.0}}
    memory = COLLECTOR.collect(write_json(tmp_path, entries), no_progress).tables["op_memory"]
    dram = memory.filter(pl.col("buffer_type") == "DRAM")
    assert dram["padded_bytes"].to_list() == [4096] * 4 and dram["unpadded_bytes"].to_list() == [1000] * 4
    assert memory.filter(pl.col("buffer_type") == "L1")["padded_bytes"].null_count() == 4


def test_a_buffer_type_missing_for_one_op(tmp_path: Path) -> None:
    entries = memory_entries()
    del entries[1]["memory"]["L1"]
    memory = COLLECTOR.collect(write_json(tmp_path, entries), no_progress).tables["op_memory"]
    assert memory.filter(pl.col("op_index") == 1)["buffer_type"].to_list() == ["DRAM"]


@pytest.mark.parametrize(("operations", "problem"), [
    (operation_records()[:3], "3 operation records but m_memory.json has 4"),
    ([{**r, "loc": "elsewhere"} if r["index"] == 2 else r for r in operation_records()], "record 2"),
])
def test_operations_json_that_does_not_match(tmp_path: Path, operations: list[dict], problem: str) -> None:
    with pytest.raises(IngestError, match=problem):
        COLLECTOR.collect(write_json(tmp_path, memory_entries(), operations), no_progress)


def test_json_bad_inputs(tmp_path: Path) -> None:
    (tmp_path / "cut").mkdir()
    cut = tmp_path / "cut" / "m_memory.json"
    cut.write_text(json.dumps(memory_entries())[:-200])
    with pytest.raises(IngestError, match="not valid JSON"):
        COLLECTOR.collect([cut], no_progress)
    broken = memory_entries()
    del broken[0]["memory"]["DRAM"]["totalBytesAllocatedPerBank_MB"]
    with pytest.raises(IngestError, match="position 0: DRAM memory has missing or non-numeric values"):
        COLLECTOR.collect(write_json(tmp_path / "b", broken), no_progress)
    lonely = write_json(tmp_path / "c", memory_entries(), operation_records())[1]
    with pytest.raises(IngestError, match="holds no memory values"):
        COLLECTOR.collect([lonely], no_progress)
    with pytest.raises(IngestError, match="no operations"):
        COLLECTOR.collect(write_json(tmp_path / "d", {"metadata": {}, "operations": []}), no_progress)


def test_sniff_json_roles_by_content(tmp_path: Path) -> None:
    paths = write_json(tmp_path, memory_entries(), operation_records())
    registry_file = tmp_path / "renamed.json"
    registry_file.write_text(json.dumps({"metadata": {"total_weight_bytes": 10}, "entries": [{"ssa": "%arg1"}]}))
    assert all(COLLECTOR.sniff(probe_file(p)) for p in [*paths, registry_file])


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tt_memory_log.write(tmp_path_factory.mktemp("demo"))[0]


def test_demo_folder_log_is_authoritative(demo_run: Path) -> None:
    assert demo_run.name == f"{tt_memory_log.SCRIPT}_{tt_memory_log.STAMP}"
    run = registry.collect([demo_run])
    meta, memory = run.tables["op_meta"], run.tables["op_memory"]
    info = run.metadata["tt_memory"]
    assert info["source"] == "runtime log" and info["cross_checked"] == [
        f"{tt_memory_log.SCRIPT}_memory.json", f"{tt_memory_log.SCRIPT}_operations.json"]
    assert run.warnings == []  # the JSON agrees with the log
    # Counted once: one row per logged op and buffer type, deallocates included.
    ops = json.loads((demo_run / f"{tt_memory_log.SCRIPT}_memory.json").read_text())["operations"]
    assert meta["profiler_index"].max() + 1 == len(ops)
    assert meta.height > len(ops) and memory.height == meta.height * 4
    assert meta.filter(pl.col("mlir_op") == "ttnn.deallocate").height > 50
    assert info["inputs_registry"]["total_weights"] == 10


def test_demo_json_disagreeing_with_the_log_is_reported(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / demo_run.name
    copy.mkdir()
    for source in demo_run.iterdir():
        (copy / source.name).write_bytes(source.read_bytes())
    memory_file = copy / f"{tt_memory_log.SCRIPT}_memory.json"
    document = json.loads(memory_file.read_text())
    document["operations"][10]["memory"]["DRAM"]["totalBytesAllocatedPerBank_MB"] += 1.0
    memory_file.write_text(json.dumps(document))
    run = registry.collect([copy])
    assert any("differs from the runtime log at op 10 (DRAM)" in w for w in run.warnings)
    assert run.metadata["tt_memory"]["source"] == "runtime log"


def test_demo_story(demo_run: Path) -> None:
    memory = registry.collect([demo_run]).tables["op_memory"]
    peaks = analysis.peaks(memory)
    dram = peaks.filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    assert dram["culprit_loc"] == tt_memory_log.PEAK_CULPRIT_LOC
    assert dram["next_loc"] == tt_memory_log.PEAK_NEXT_LOC
    assert 0.5 < dram["utilisation"] < 0.8 and dram["fragmentation"] > 0.3
    l1 = analysis.memory_curves(memory).filter(pl.col("buffer_type") == "L1")["allocated"]
    assert l1[0] == 0 and l1[-1] == 0 and l1.max() > 0.6 * 1.27 * MIB  # L1 rises and falls back
    regions = analysis.const_eval_regions(memory)
    assert regions.height == 5 and regions["const_eval_graph"][0] == "main_const_eval_0"


def test_demo_is_deterministic_and_scales(tmp_path: Path) -> None:
    first = tt_memory_log.write(tmp_path / "a")[0]
    second = tt_memory_log.write(tmp_path / "b")[0]
    for path in first.iterdir():
        assert path.read_bytes() == (second / path.name).read_bytes()
    bigger = tt_memory_log.write(tmp_path / "c", n_ops=2000, with_json=False)[0]
    assert [p.name for p in bigger.iterdir()] == [f"{tt_memory_log.SCRIPT}_profile.log"]
    ops = COLLECTOR.collect(list(bigger.iterdir()), no_progress).tables["op_meta"].height
    assert 1500 < ops < 3000
