"""Two compiles compared pass by pass, on logs written here with hand-computed expectations."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis.compare_compiler import (
    BOTH,
    DIFFERS,
    ONLY_A,
    ONLY_B,
    SAME,
    compare_compiles,
    default_compiles,
)
from dashboard.cli.compare_report import build_report
from dashboard.cli.compare_text import format_report
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import Run, RunStore
from tests.collectors.triton_ir_fixtures import compile_log, with_extra_pass

PASSES = ["InlinerPass", "CanonicalizerPass", "CSEPass", "ConvertTritonToTritonGPU", "TritonGPUPipeline",
          "SoftwarePipeliner LowerLoops", "AllocateSharedMemoryNv", "ConvertTritonGPUToLLVM", "CanonicalizerPass"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("compare-compiler")
    store = RunStore(root / "data")
    logs = {"block1024": compile_log("add_kernel", 1024), "block2048": compile_log("add_kernel", 2048),
            "extra": with_extra_pass("add_kernel", 1024),
            "two": compile_log("other_kernel", 64) + compile_log("add_kernel", 1024) + compile_log("add_kernel", 2048)}
    out = {}
    for name, text in logs.items():
        (root / f"{name}.txt").write_text(text)
        out[name] = store.open(ingest_paths(store, [root / f"{name}.txt"], name=name))
    return out


def test_block_sizes_differ_from_the_first_pass(runs) -> None:
    comparison = compare_compiles(runs["block1024"], runs["block2048"])
    assert comparison is not None
    aligned = comparison.aligned
    assert aligned["pass_name"].to_list() == PASSES and set(aligned["presence"]) == {BOTH}
    assert aligned["step_a"].to_list() == aligned["step_b"].to_list() == list(range(9))
    # Every TTIR / TTGIR body holds tensor<BLOCKxi32>; the LLVM-dialect body has no block size.
    assert aligned["ir"].to_list() == [DIFFERS] * 8 + [SAME]
    assert comparison.first == {"position": 0, "pass_name": "InlinerPass", "stage": "ttir", "kind": "before",
                                "step_a": 0, "step_b": 0}
    # The diff of that pass: the three lines naming the block size (make_range, addi, reduce) change.
    assert comparison.position == 0 and comparison.diff is not None
    assert (comparison.diff.removed, comparison.diff.added) == (3, 3)
    assert "-    %e = arith.addi %r, %r : tensor<1024xi32> loc(#loc3)" in comparison.diff.unified
    assert "+    %e = arith.addi %r, %r : tensor<2048xi32> loc(#loc3)" in comparison.diff.unified
    summary = comparison.summary()
    assert (summary["steps_a"], summary["steps_b"], summary["only_a"], summary["only_b"]) == (9, 9, [], [])
    assert summary["differing"] == 8
    # The same metadata on both sides: 4 warps, 3 stages, 17408 shared bytes, 128 TMEM columns.
    assert summary["metadata"]["shared"] == {"a": 17408, "b": 17408, "delta": 0}
    assert summary["metadata"]["num_warps"] == {"a": 4, "b": 4, "delta": 0}
    assert summary["metadata"]["tmem_size"]["delta"] == 0
    assert summary["diff"]["lines_a"] == summary["diff"]["lines_b"] == 19


def test_a_chosen_pass_is_diffed(runs) -> None:
    comparison = compare_compiles(runs["block1024"], runs["block2048"], wanted_position=8)
    assert comparison.position == 8 and (comparison.diff.removed, comparison.diff.added) == (0, 0)
    # A position one side lacks, or nonsense, falls back to the first difference.
    assert compare_compiles(runs["block1024"], runs["block2048"], wanted_position="x").position == 0


def test_an_extra_pass_is_on_one_side_only(runs) -> None:
    comparison = compare_compiles(runs["block1024"], runs["extra"])
    aligned = comparison.aligned
    assert comparison.summary()["only_b"] == ["LoopUnrollPass"] and comparison.summary()["only_a"] == []
    assert (comparison.steps_a, comparison.steps_b, aligned.height) == (9, 10, 10)
    extra = aligned.filter(pl.col("presence") == ONLY_B).row(0, named=True)
    assert (extra["position"], extra["step_a"], extra["step_b"], extra["ir"]) == (3, None, 3, None)
    # The passes after it are aligned one step later in B, and every body is the same.
    converted = aligned.filter(pl.col("pass_name") == "ConvertTritonToTritonGPU").row(0, named=True)
    assert (converted["step_a"], converted["step_b"]) == (3, 4)
    assert set(aligned.filter(pl.col("presence") == BOTH)["ir"]) == {SAME}
    assert comparison.first is None and comparison.position == 0
    reverse = compare_compiles(runs["extra"], runs["block1024"])
    assert reverse.names(ONLY_A) == ["LoopUnrollPass"] and reverse.names(ONLY_B) == []


def test_two_compiles_of_one_run(runs) -> None:
    two = runs["two"]
    # Default: the first two compiles of one kernel name (other_kernel is compiled once).
    assert default_compiles(two.frame("ir_kernels"), two.frame("ir_kernels"), same_run=True) == (1, 2)
    comparison = compare_compiles(two, two)
    assert (comparison.compile_a, comparison.compile_b) == (1, 2)
    assert comparison.first["pass_name"] == "InlinerPass"
    # Chosen in the URL: compile 0 (other_kernel) against compile 1; a missing compile falls back.
    chosen = compare_compiles(two, two, "0", "1")
    assert (chosen.compile_a, chosen.compile_b) == (0, 1)
    assert chosen.summary()["kernel_a"] == "other_kernel" and chosen.summary()["kernel_b"] == "add_kernel"
    assert (compare_compiles(two, two, "9", None).compile_a) == 1


def test_across_runs_the_first_compile_of_a_shared_kernel_name(runs) -> None:
    comparison = compare_compiles(runs["two"], runs["block2048"])
    assert (comparison.compile_a, comparison.compile_b) == (1, 0)
    assert comparison.first["pass_name"] == "InlinerPass"


def test_report_and_text_have_a_compiler_section(runs) -> None:
    report = build_report(runs["block1024"], runs["extra"])
    assert report["shared_evidence"] == ["compiler"]
    section = report["compiler"]
    assert section["only_b"] == ["LoopUnrollPass"] and section["first_difference"] is None
    text = format_report(report)
    assert "only in B: LoopUnrollPass" in text and "the IR never differs" in text
    text = format_report(build_report(runs["block1024"], runs["block2048"]))
    assert "first differing pass: InlinerPass (ttir, before) at step 0 of A, 0 of B" in text


def test_a_side_without_compiles(tmp_path: Path, runs) -> None:
    assert compare_compiles(runs["block1024"], _empty_run(tmp_path)) is None


def _empty_run(tmp_path: Path) -> Run:
    from tests.support.kernel_tables import kernel_tables

    store = RunStore(tmp_path / "data")
    return store.open(store.write("kernels-only", kernel_tables()))


def test_a_lone_compile_run_compares_with_itself(tmp_path: Path) -> None:
    from dashboard.analysis.compare import Side
    from dashboard.views.compare_sides import choose_sides, compare_view

    store = RunStore(tmp_path / "data")
    (tmp_path / "two.txt").write_text(compile_log("add_kernel", 1024) + compile_log("add_kernel", 2048))
    run = store.open(ingest_paths(store, [tmp_path / "two.txt"], name="two"))
    sides = choose_sides(store, run, None, None, None)
    assert sides == (Side(run.id, None), Side(run.id, None))
    view = compare_view(store, *sides)  # the kernel view of two compiler-only sides is empty, not an error
    assert view.comparison.is_empty()
    comparison = compare_compiles(run, run)
    assert (comparison.compile_a, comparison.compile_b) == (0, 1) and comparison.first["pass_name"] == "InlinerPass"
