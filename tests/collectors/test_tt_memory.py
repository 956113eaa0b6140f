"""The Tenstorrent memory collector on small hand-made runtime logs (every number checked by hand)."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import memory as analysis
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress, probe_file
from dashboard.collectors.tt.collector import COLLECTOR
from dashboard.demo.tt_memory_sim import memory_line, runtime_line

MIB = 1024 * 1024
TENSOR = ("tensor<1x1x32x64xf32, #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 32 + d1 * 32 + d2, d3), <1x1>, "
          "memref<1x2x!ttcore.tile<32x32, f32>, #ttnn.buffer_type<dram>>, <interleaved>>>")
L1_TENSOR = TENSOR.replace("buffer_type<dram>>, <interleaved>", "buffer_type<l1>>, <height_sharded>")


class Log:
    """Builds a runtime log: each `op` writes its op line and the snapshot taken before it."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def other(self, line: str) -> Log:
        self.lines.append(line)
        return self

    def program(self, name: str, start: bool = True) -> Log:
        word = "Starting" if start else "Finished"
        self.lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"{word} execution of program: {name}"))
        return self

    def op(self, text: str, op_type: str, dram: tuple[float, float], l1: float = 0.0,
           types: tuple[str, ...] = ("DRAM", "L1", "L1_SMALL", "TRACE")) -> Log:
        """dram = (allocated, largest free) MiB per bank of 1000 MiB x 12 banks; L1 1.25 MiB x 64 banks."""
        self.lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Executing operation: {text}"))
        self.lines.append(runtime_line("Always", "INFO", f"Device memory state before operation {op_type}"))
        views = {"DRAM": (12, 1000.0, dram[0], 1000.0 - dram[0], dram[1]),
                 "L1": (64, 1.25, l1, 1.25 - l1, 1.25 - l1),
                 "L1_SMALL": (64, 0.0625, 0.0, 0.0625, 0.0625),
                 "TRACE": (12, 0.0, 0.0, 0.0, 0.0)}
        self.lines += [memory_line(bt, *views[bt]) for bt in types]
        return self

    def write(self, folder: Path, name: str = "model_profile.log") -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def ttnn(result: str | None, name: str, operands: str, loc: str, out: str = TENSOR) -> str:
    head = f'{result} = "{name}"({operands})' if result else f'"{name}"({operands})'
    return f'{head} : ({TENSOR}) -> {out} loc("{loc}")'


def story() -> Log:
    """get_device, a const-eval sub-program, empty, multiply (the DRAM peak), mean, deallocate, add."""
    log = Log().other("Loading model ...").other(
        "2026-01-22 14:39:58.101 | info     |          Device | Opening user mode device driver (tt_cluster.cpp:211)")
    log.program("main")
    log.op('%0 = "ttnn.get_device"() <{mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc(unknown)',
           "GetDeviceOp", (1.0, 999.0))                                                             # op 0
    log.op(f"%1:1 = ttcore.load_cached(@main_const_eval_0, [%arg1]) : ({TENSOR}) -> ({TENSOR}) loc(unknown)",
           "LoadCachedOp", (1.0, 999.0))                                                            # op 1
    log.other(runtime_line("Always", "DEBUG", "Running LoadCachedOp for function main_const_eval_0 with hash: 7"))
    log.program("main_const_eval_0")
    log.op(ttnn("%0", "ttnn.to_layout", "%arg0", "w.tile"), "ToLayoutOp", (1.0, 999.0))                       # op 2
    log.program("main_const_eval_0", start=False)
    log.op(ttnn("%2", "ttnn.empty", "%0", "empty.1"), "EmptyOp", (11.0, 989.0))                     # op 3
    log.op(ttnn("%3", "ttnn.multiply", "%2, %2", "multiply.7"), "EltwiseBinaryOp", (111.0, 889.0), l1=0.25)  # 4
    log.op(ttnn("%4", "ttnn.mean", "%3", "reduce.8_mean", L1_TENSOR), "ReductionOp", (411.0, 289.0), l1=0.25)  # 5
    log.op('"ttnn.deallocate"(%3) <{force = false}> : (' + TENSOR + ') -> () loc("reduce.8_mean")',
           "DeallocateOp", (411.0, 289.0), l1=0.75)                                                 # op 6
    log.op(ttnn("%5", "ttnn.add", "%2, %4", "add.9"), "EltwiseBinaryOp", (111.0, 589.0), l1=0.75)    # op 7
    log.program("main", start=False)
    return log


@pytest.fixture
def story_tables(tmp_path: Path) -> dict[str, pl.DataFrame]:
    return COLLECTOR.collect([story().write(tmp_path / "run")], no_progress).tables


def test_ops_programs_and_units(story_tables: dict[str, pl.DataFrame]) -> None:
    memory, meta = story_tables["op_memory"], story_tables["op_meta"]
    assert meta["op_index"].to_list() == list(range(8))
    assert meta["mlir_op"].to_list() == ["ttnn.get_device", "ttcore.load_cached", "ttnn.to_layout", "ttnn.empty",
                                         "ttnn.multiply", "ttnn.mean", "ttnn.deallocate", "ttnn.add"]
    assert meta["program"].to_list() == ["main", "main", "main_const_eval_0", *["main"] * 5]
    assert meta["const_eval_graph"].to_list()[1:3] == [None, "main_const_eval_0"]
    assert meta["is_weight_op"].to_list()[1:3] == [False, True]
    # deallocate / get_device are kept but carry no profiler (JSON) index.
    assert meta["profiler_index"].to_list() == [None, 0, 1, 2, 3, 4, None, 5]
    dram = memory.filter((pl.col("buffer_type") == "DRAM") & (pl.col("op_index") == 5)).row(0, named=True)
    assert dram["banks"] == 12
    assert dram["allocated_per_bank"] == 411 * MIB
    assert dram["allocated"] == 411 * MIB * 12
    assert dram["largest_free_per_bank"] == 289 * MIB
    assert dram["total"] == 1000 * MIB * 12
    assert memory.height == 8 * 4
    row = meta.filter(pl.col("op_index") == 5).row(0, named=True)
    assert row["result"] == "%4" and row["inputs"] == ["%3"] and row["loc"] == "reduce.8_mean"
    assert row["input_shapes"] == ["1x1x32x64"] and row["output_dtypes"] == ["f32"]
    assert row["buffer_types"] == ["L1"] and row["layouts"] == ["tile/height_sharded"]
    assert meta.filter(pl.col("op_index") == 1)["loc"][0] == "@main_const_eval_0"  # load_cached has no loc


def test_peak_is_blamed_on_the_op_that_allocated(story_tables: dict[str, pl.DataFrame]) -> None:
    peaks = analysis.peaks(story_tables["op_memory"])
    dram = peaks.filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    # 411 MiB is first seen before op 5 (mean) and again before op 6: the first counts,
    # and it was allocated by op 4 (multiply, +300 MiB), not by the mean about to run.
    assert dram["peak_op_index"] == 5 and dram["next_mlir_op"] == "ttnn.mean"
    assert dram["culprit_op_index"] == 4 and dram["culprit_mlir_op"] == "ttnn.multiply"
    assert dram["culprit_loc"] == "multiply.7"
    assert dram["culprit_delta_per_bank"] == 300 * MIB
    assert dram["fragmentation"] == pytest.approx(1 - 289 / 589)
    assert dram["utilisation"] == pytest.approx(0.411)
    l1 = peaks.filter(pl.col("buffer_type") == "L1").row(0, named=True)
    assert (l1["peak_op_index"], l1["culprit_mlir_op"]) == (6, "ttnn.mean")


def test_deltas_separate_an_op_from_the_frees_after_it(story_tables: dict[str, pl.DataFrame]) -> None:
    table = analysis.op_table(story_tables["op_memory"], story_tables["op_meta"])
    by_op = {row["op_index"]: row for row in table.iter_rows(named=True)}
    assert 6 not in by_op and 0 not in by_op  # housekeeping hidden by default
    assert by_op[4]["DRAM_delta"] == 300 * MIB
    assert by_op[5]["DRAM_delta"] == 0  # the mean freed nothing; the deallocate did
    assert by_op[7]["DRAM_delta"] is None  # last op: no after-snapshot
    full = analysis.op_table(story_tables["op_memory"], show_housekeeping=True)
    assert full.filter(pl.col("op_index") == 6)["DRAM_delta"][0] == -300 * MIB


def test_ansi_other_producers_and_interleaved_lines(tmp_path: Path) -> None:
    log = story()
    # A tt-metal warning between an op line and its memory block must not drop the op.
    log.lines.insert(log.lines.index(next(x for x in log.lines if "ttnn.empty" in x)) + 1,
                     "2026-01-22 14:40:00.000 | warning  |              Op | slow path (op.cpp:1)")
    log.other("Got output shape: torch.Size([1, 3])")
    tables = COLLECTOR.collect([log.write(tmp_path)], no_progress).tables
    assert tables["op_meta"].height == 8
    assert "\x1b" not in "".join(tables["op_memory"]["op_type"].to_list())


def test_mpi_rank_prefixes_give_separate_ranks(tmp_path: Path) -> None:
    a, b = story().lines, story().lines
    lines = [f"[1,{rank}]<stdout>: {line}" for pair in zip(a, b, strict=True)
             for rank, line in enumerate(pair)]
    path = tmp_path / "mpi.log"
    path.write_text("\n".join(lines) + "\n")
    collected = COLLECTOR.collect([path], no_progress)
    meta = collected.tables["op_meta"]
    assert meta.group_by("rank").len().sort("rank").rows() == [(0, 8), (1, 8)]
    assert collected.metadata["mpi_hosts"] == {"1,0": 0, "1,1": 1}
    peaks = analysis.peaks(collected.tables["op_memory"]).filter(pl.col("buffer_type") == "DRAM")
    assert peaks["culprit_mlir_op"].to_list() == ["ttnn.multiply", "ttnn.multiply"]


def test_out_of_memory_line_is_reported(tmp_path: Path) -> None:
    log = story().other(runtime_line("Always", "ERROR", "Out of Memory: Not enough space to allocate 2147483648 B "
                                                        "DRAM buffer across 12 banks"))
    collected = COLLECTOR.collect([log.write(tmp_path)], no_progress)
    oom = collected.metadata["out_of_memory"][0]
    assert (oom["op_index"], oom["bytes"], oom["buffer_type"], oom["banks"]) == (7, 2147483648, "DRAM", 12)
    assert any("out of DRAM memory in op 7" in w for w in collected.warnings)


def test_missing_buffer_type_is_tolerated(tmp_path: Path) -> None:
    log = story()
    log.op(ttnn("%6", "ttnn.add", "%5, %5", "add.10"), "EltwiseBinaryOp", (120.0, 580.0), types=("DRAM", "L1"))
    log.op(ttnn("%7", "ttnn.add", "%6, %6", "add.11"), "EltwiseBinaryOp", (130.0, 570.0))
    collected = COLLECTOR.collect([log.write(tmp_path)], no_progress)
    memory = collected.tables["op_memory"]
    assert sorted(memory.filter(pl.col("op_index") == 8)["buffer_type"].to_list()) == ["DRAM", "L1"]
    assert any("lack some buffer types" in w for w in collected.warnings)


def test_zero_size_trace_region_has_zero_fragmentation(story_tables: dict[str, pl.DataFrame]) -> None:
    curves = analysis.memory_curves(story_tables["op_memory"])
    trace = curves.filter(pl.col("buffer_type") == "TRACE")
    assert trace["capacity"].max() == 0
    assert trace["fragmentation"].to_list() == [0.0] * 8
    assert trace["utilisation"].to_list() == [0.0] * 8


@pytest.mark.parametrize(("mangle", "problem"), [
    (lambda lines: [*lines[:-1], lines[-1][:-40]], "truncated or malformed memory line"),
    (lambda lines: lines[:-3], "ends inside the memory block of op 7"),
    (lambda lines: lines[:-4], "ends inside the memory block of op 7"),
    (lambda lines: [x for x in lines if "memory state" not in x], "no memory lines"),
    (lambda lines: [x for x in lines if "memory state" not in x and "Executing" not in x] +
     [runtime_line("Always", "INFO", "Device memory state before submit")], "program-level memory state headers"),
])
def test_bad_logs_raise_clear_errors(tmp_path: Path, mangle, problem: str) -> None:
    lines = [x for x in story().lines if "Finished execution of program: main" not in x]
    path = tmp_path / "bad.log"
    path.write_text("\n".join(mangle(lines)))
    with pytest.raises(IngestError, match=problem) as caught:
        COLLECTOR.collect([path], no_progress)
    assert caught.value.path == str(path)


def test_empty_and_unrelated_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("   \n")
    with pytest.raises(IngestError, match="empty"):
        COLLECTOR.collect([empty], no_progress)
    for text in ('{"traceEvents": []}', "[1, 2, 3]", "hello world\n", '{"entries": 1}'):
        other = tmp_path / "other.txt"
        other.write_text(text)
        assert not COLLECTOR.sniff(probe_file(other))


def test_sniff_by_content_and_past_a_long_preamble(tmp_path: Path) -> None:
    renamed = story().write(tmp_path, "whatever.txt")
    assert COLLECTOR.sniff(probe_file(renamed))
    log = Log().other("2026-01-22 14:40:03.982 (   6.812s) [  7F3A2C1D5740]  module_builder.cc:1087  1| "
                      "MLIR Module shlo_frontend:")
    log.lines += ["  %0 = stablehlo.add %arg0, %arg0 : tensor<1024xf32>" + " " * 200] * 600  # ~150 KB of IR
    log.lines += story().lines
    deep = log.write(tmp_path / "deep")
    assert COLLECTOR.sniff(probe_file(deep))
    assert COLLECTOR.collect([deep], no_progress).tables["op_meta"].height == 8


def test_gzip_log_and_registry_folder(tmp_path: Path) -> None:
    folder = tmp_path / "model_20260122_143957"
    plain = story().write(folder)
    packed = folder / "model_profile.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    run = registry.collect([folder])
    assert run.collectors == ["tt_memory"]
    assert run.tables["op_meta"].height == 8
    assert run.metadata["tt_memory"]["script"] == "model"
    assert run.metadata["tt_memory"]["started"] == "2026-01-22T14:39:57"


def test_headers_without_op_lines_and_op_lines_without_memory(tmp_path: Path) -> None:
    quiet = Log()
    for line in story().lines:
        if "Executing operation" not in line:
            quiet.other(line)
    for text in ('%9 = "ttnn.add"(%5) : () -> () loc(unknown)', '%10 = "ttnn.add"(%9) : () -> () loc(unknown)'):
        quiet.other(runtime_line("RuntimeTTNN", "DEBUG", f"Executing operation: {text}"))
    quiet.op(ttnn("%11", "ttnn.add", "%10", "add.11"), "EltwiseBinaryOp", (111.0, 589.0))
    collected = COLLECTOR.collect([quiet.write(tmp_path)], no_progress)
    meta = collected.tables["op_meta"]
    # Logger below DEBUG: snapshots still count, named by their OpType only.
    assert meta["mlir_op"].to_list()[:8] == [None] * 8 and meta["mlir_op"][8] == "ttnn.add"
    assert collected.tables["op_memory"].filter(pl.col("op_index") == 6)["op_type"][0] == "DeallocateOp"
    assert meta["profiler_index"].to_list() == [None] * 8 + [0]
    assert any("2 'Executing operation' lines had no memory block" in w for w in collected.warnings)


def test_a_fatal_out_of_memory_printed_twice_is_counted_once(tmp_path: Path) -> None:
    # tt-metal's TT_FATAL prints the message; the Python RuntimeError carrying it up prints it again.
    message = ("Out of Memory: Not enough space to allocate 2147483648 B DRAM buffer across 12 banks, where each "
               "bank needs to store 178956800 B, but bank size is 1073741824 B (allocated: 1048576 B, free: "
               "1072693248 B, largest free block: 1072693248 B)")
    log = story().other(runtime_line("Always", "FATAL", message)).other(
        "RuntimeError: TT_FATAL @ /tt-metal/tt_metal/impl/allocator/bank_manager.cpp:439: false").other(
        "info:").other(message)
    collected = COLLECTOR.collect([log.write(tmp_path)], no_progress)
    (oom,) = collected.metadata["out_of_memory"]
    assert (oom["op_index"], oom["bytes"], oom["buffer_type"], oom["banks"], oom["repeats"]) == (
        7, 2147483648, "DRAM", 12, 2)
    found = [w for w in collected.warnings if "out of DRAM memory" in w]
    assert found == [f"{tmp_path / 'model_profile.log'}: out of DRAM memory in op 7 (rank 0): 2,147,483,648 B "
                     "across 12 banks could not be allocated (reported 2 times)"]


def _submit(log: Log, moment: str, dram: float) -> Log:
    """One program-level block: `Device memory state <moment>` and its four MemoryView lines."""
    log.other(runtime_line("Always", "INFO", f"Device memory state {moment}"))
    views = {"DRAM": (12, 1000.0, dram, 1000.0 - dram, 1000.0 - dram), "L1": (64, 1.25, 0.0, 1.25, 1.25),
             "L1_SMALL": (64, 0.0625, 0.0, 0.0625, 0.0625), "TRACE": (12, 0.0, 0.0, 0.0, 0.0)}
    log.lines += [memory_line(bt, *views[bt]) for bt in views]
    return log


def test_a_program_level_log_is_a_per_submit_curve(tmp_path: Path) -> None:
    log = Log().other("Loading model ...")
    for dram_before, dram_after in ((1.0, 11.0), (11.0, 211.0), (211.0, 12.0)):
        log.program("main")
        _submit(log, "before submit", dram_before)
        _submit(log, "after submit", dram_after)
        log.program("main", start=False)
    path = log.write(tmp_path)
    collected = registry.collect([path])
    assert collected.collectors == ["tt_memory"]
    memory = collected.tables["op_memory"]
    dram = memory.filter(pl.col("buffer_type") == "DRAM").sort("op_index")
    assert dram["op_index"].to_list() == list(range(6))
    assert dram["op_type"].to_list() == ["before submit", "after submit"] * 3
    assert dram["allocated_per_bank"].to_list() == [round(v * MIB) for v in (1.0, 11.0, 11.0, 211.0, 211.0, 12.0)]
    assert dram["allocated"].to_list() == [12 * round(v * MIB) for v in (1.0, 11.0, 11.0, 211.0, 211.0, 12.0)]
    assert set(dram["program"]) == {"main"} and dram["mlir_op"].null_count() == 6
    assert memory.height == 24
    assert collected.metadata["tt_memory"]["granularity"] == "program"
    assert collected.metadata["tt_memory"]["submits"] == 3
    assert f"{path}: program-level memory states only (before and after each submit): the curve is per submit; " \
           "per-op detail is absent (run with TT_RUNTIME_MEMORY_LOG_LEVEL=operation for it)" in collected.warnings
    peaks = analysis.peaks(memory).filter(pl.col("buffer_type") == "DRAM")
    assert peaks["allocated_per_bank"].to_list() == [round(211.0 * MIB)]


def test_the_memory_page_says_per_op_detail_is_absent(tmp_path: Path) -> None:
    from dashboard.ingest.pipeline import ingest_paths
    from dashboard.layouts.memory import granularity_note
    from dashboard.store import RunStore

    log = Log()
    for before, after in ((1.0, 11.0), (11.0, 5.0)):
        _submit(log, "before submit", before)
        _submit(log, "after submit", after)
    store = RunStore(tmp_path / "data")
    alert = granularity_note(store.open(ingest_paths(store, [log.write(tmp_path / "in")])))
    assert alert is not None and "per-op detail is absent" in alert.children
    assert granularity_note(store.open(ingest_paths(store, [story().write(tmp_path / "ops")]))) is None
