"""A real Triton 3.6 MLIR dump from the project's H200 run: every header kept (issue 30, shape 6)."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl

from dashboard.analysis.compiler import step_label
from dashboard.collectors.base import no_progress
from dashboard.collectors.triton_ir import COLLECTOR

DUMP = Path(__file__).parent.parent / "data" / "gpu" / "triton_mlir_dump.txt.gz"


def test_every_header_of_the_real_dump_is_a_step() -> None:
    text = gzip.decompress(DUMP.read_bytes()).decode()
    headers = [line for line in text.splitlines() if line.startswith("// -----// ") and "IR Dump" in line]
    assert len(headers) == 74  # counted independently of the collector: 72 `IR Dump Before` + 2 internal
    collected = COLLECTOR.collect([DUMP], no_progress)
    steps = collected.tables["ir_steps"]
    assert steps.height == 74 and collected.tables["ir_kernels"].height == 1
    assert steps.group_by("kind").len().sort("kind").rows() == [("before", 72), ("internal", 2)]
    internal = steps.filter(pl.col("kind") == "internal")
    assert internal["pass_name"].to_list() == ["SoftwarePipeliner LowerLoops", "SoftwarePipeliner ExpandLoops"]
    functions = steps.filter(pl.col("anchor") == "function").sort("step")
    assert functions["symbol"].to_list() == [
        "triton.language.standard.zeros____(0, 0)cconstexpr_128__(0, 1)cconstexpr_128__(1,)cconstexpr_fp32_",
        "triton.language.standard.cdiv__i32__(1,)cconstexpr_64_", "matmul_kernel", "matmul_kernel"]
    # Shown under the compile that ran them: same compile, kernel and target as the module passes.
    assert set(functions["compile"]) == {0} and set(functions["kernel"]) == {"matmul_kernel"}
    assert set(functions["target"]) == {"cuda:90"}
    label = step_label(functions.row(1, named=True))
    assert label.endswith("on @triton.language.standard.cdiv__i32__(1,)cconstexpr_64_ ✱")
