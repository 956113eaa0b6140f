"""The demo's compiler run without Triton: the generated log ingests like a real one."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.demo import triton_compile


def test_generated_demo_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHBOARD_DEMO_TRITON", "0")
    paths = triton_compile.write(tmp_path / "demo")
    assert [p.name for p in paths] == ["triton_mlir_dump.txt", "demo_kernels.py"]
    assert paths[0].read_text() == triton_compile.write(tmp_path / "again")[0].read_text().replace(
        str(tmp_path / "again"), str(tmp_path / "demo"))  # deterministic
    run = registry.collect(paths)
    kernels = run.tables["ir_kernels"]
    assert kernels["kernel"].to_list() == ["add_kernel", "add_kernel"]
    assert kernels["python_file"].to_list() == [str(paths[1])] * 2
    steps = run.tables["ir_steps"]
    assert steps["stage"].unique(maintain_order=True).to_list() == ["ttir", "ttgir", "llvm-mlir"]
    assert steps.filter(pl.col("kind") == "internal").height == 2
    # every location names a line of add_kernel in the demo's kernel file
    source = paths[1].read_text().split("\n")
    lines = set(run.tables["ir_locs"]["line"].to_list())
    assert lines and all("add_kernel" in source[n - 1] or source[n - 1].startswith("    ") for n in lines)
