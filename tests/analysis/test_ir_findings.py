"""Passes that grew the IR most: exact growth per pass, and the finding with its link."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dashboard.analysis.ir_growth import IR_GROWTH_MIN_OPS, ir_findings, pass_growth, top_growth
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.collectors.triton_ir_fixtures import compile_log


def steps(rows: list[tuple[int, int, str, str, str | None, str, int, int]]) -> pl.DataFrame:
    """(compile, step, pass_name, anchor, symbol, kind, lines, ops) rows of ir_steps, stage ttgir, kernel k."""
    return pl.DataFrame(
        rows, schema={"compile": pl.Int64, "step": pl.Int32, "pass_name": pl.String, "anchor": pl.String,
                      "symbol": pl.String, "kind": pl.String, "lines": pl.Int64, "ops": pl.Int64}, orient="row",
    ).with_columns(pl.lit("k").alias("kernel"), pl.lit("ttgir").alias("stage"))


def test_growth_follows_before_dumps_and_after_dumps() -> None:
    frame = steps([
        (0, 0, "A", "module", None, "before", 20, 10),
        (0, 1, "B", "module", None, "before", 50, 40),   # A ran: +30 ops, +30 lines
        (0, 2, "Pipe internal", "module", None, "internal", 99, 99),  # not a pass boundary
        (0, 3, "C", "module", None, "before", 45, 35),   # B ran: -5
        (0, 4, "C", "module", None, "after", 95, 80),    # C ran (paired with its Before): +45
        (1, 0, "A", "module", None, "before", 10, 5),
        (1, 1, "B", "function", "k", "before", 4, 3),   # other unit between: A's pair is not attributed
        (1, 2, "C", "module", None, "before", 30, 25),
    ])
    growth = pass_growth(frame)
    assert growth.select("compile", "pass_name", "from_step", "step", "ops_growth", "lines_growth").rows() == [
        (0, "C", 3, 4, 45, 50), (0, "A", 0, 1, 30, 30), (0, "B", 1, 3, -5, -5)]
    assert top_growth(growth).select("compile", "pass_name", "ops_before", "ops_after").rows() == [(0, "C", 35, 80)]


def test_finding_names_the_pass_with_its_numbers_and_link() -> None:
    frame = steps([(0, 0, "A", "module", None, "before", 20, 10),
                   (0, 1, "B", "module", None, "before", 50, 40)])
    [finding] = ir_findings("r1", frame)
    assert finding.title == "A grew k (compile 0) from 10 to 40 ops (+30)"
    assert finding.share == 30 / 40
    assert finding.severity == "info"  # compile work, no runtime at stake: never high
    assert finding.at_stake_ops == 30 and finding.at_stake_text == "30 IR ops"
    assert finding.to_json()["at_stake_ops"] == 30 and "at_stake_bytes" not in finding.to_json()
    assert finding.url == "/compiler?run=r1&compile=0&step=1&cmp=0"
    assert finding.evidence["ops added"] == 30 and finding.evidence["lines added"] == 30


def test_a_conversion_to_the_next_stage_is_never_the_finding() -> None:
    frame = steps([(0, 0, "A", "module", None, "before", 20, 10),
                   (0, 1, "Lower", "module", None, "before", 50, 40),  # A ran in ttgir: +30
                   (0, 2, "B", "module", None, "before", 900, 800)])  # Lower took it to LLVM: +760
    frame = frame.with_columns(pl.when(pl.col("step") == 2).then(pl.lit("llvm-mlir")).otherwise("stage")
                               .alias("stage"))
    growth = pass_growth(frame)
    assert growth.select("pass_name", "ops_growth", "same_stage").rows() == [("Lower", 760, False),
                                                                           ("A", 30, True)]
    assert [finding.title for finding in ir_findings("r1", frame)] == ["A grew k (compile 0) from 10 to 40 ops (+30)"]


def test_an_unreadable_op_count_is_not_growth() -> None:
    frame = steps([(0, 0, "A", "module", None, "after", 105, 75),
                   (0, 1, "Slot index numbering", "module", None, "after", 105, 0),  # counter could not read it
                   (0, 2, "Merge stack slots", "module", None, "after", 105, 75)])
    assert pass_growth(frame).height == 0
    assert ir_findings("r1", frame) == []


def test_small_growth_is_no_finding() -> None:
    below = steps([(0, 0, "A", "module", None, "before", 20, 100),
                   (0, 1, "B", "module", None, "before", 50, 100 + IR_GROWTH_MIN_OPS)])  # 10 of 110: under 25 %
    assert pass_growth(below)["ops_growth"].to_list() == [IR_GROWTH_MIN_OPS]
    assert ir_findings("r1", below) == []
    few = steps([(0, 0, "A", "module", None, "before", 2, 2), (0, 1, "B", "module", None, "before", 9, 9)])
    assert ir_findings("r1", few) == []  # +7 ops: 78 % but under IR_GROWTH_MIN_OPS


def test_real_log_growth_per_pass(tmp_path: Path) -> None:
    log = tmp_path / "dump.txt"
    log.write_text(compile_log("k", 64))
    store = RunStore(tmp_path / "store")
    run = store.open(ingest_paths(store, [log]))
    growth = pass_growth(run.frame("ir_steps"))
    # module-level Before dumps: 0 Inliner (8 ops), [1 function dump], 2 CSE 7, 3 Convert 7, 4 Pipeline 8,
    # [5 internal], 6 Allocate 8, 7 ToLLVM 10, 8 llvm-mlir 4. Step 0 -> 2 has the function dump between.
    assert growth.select("pass_name", "from_step", "step", "ops_growth", "same_stage").rows() == [
        ("AllocateSharedMemoryNv", 6, 7, 2, True), ("ConvertTritonToTritonGPU", 3, 4, 1, False),
        ("CSEPass", 2, 3, 0, True), ("TritonGPUPipeline", 4, 6, 0, True), ("ConvertTritonGPUToLLVM", 7, 8, -6, False)]
    assert ir_findings(run.id, run.frame("ir_steps")) == []  # +2 ops is under the thresholds
