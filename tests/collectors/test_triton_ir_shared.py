"""The triton_ir collector on the real Triton outputs in ../shared (CI-only; skipped without it).

Counts are the ones ../shared/samples/triton_ir/README.md states.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry

pytestmark = pytest.mark.shared


def _sample(shared_dir: Path, name: str) -> Path:
    return shared_dir / "samples" / "triton_ir" / name


def test_add_kernel_dump(shared_dir: Path) -> None:
    run = registry.collect([_sample(shared_dir, "add_kernel.mlir_dump.txt.gz")])
    steps = run.tables["ir_steps"]
    assert run.tables["ir_kernels"]["kernel"].to_list() == ["add_kernel"]
    assert steps.height == 78  # 76 "IR Dump Before" + 2 SoftwarePipeliner snapshots
    assert steps.filter(pl.col("kind") == "internal").height == 2
    assert steps.filter(pl.col("anchor") == "function")["pass_name"].to_list().count("CanonicalizerPass") == 1
    assert set(steps["target"]) == {"cuda:90"}


def test_two_kernels_in_one_log(shared_dir: Path) -> None:
    run = registry.collect([_sample(shared_dir, "matmul_softmax.mlir_dump.txt.gz")])
    kernels = run.tables["ir_kernels"].sort("compile")
    assert kernels["kernel"].to_list() == ["matmul_kernel", "softmax_kernel"]
    assert kernels.row(0, named=True)["num_warps"] == 8 and kernels.row(0, named=True)["num_stages"] == 3
    steps = run.tables["ir_steps"]
    assert steps.height == 166
    assert steps.filter(pl.col("kind") == "internal").height == 4


def test_kernel_filter_log(shared_dir: Path) -> None:
    run = registry.collect([_sample(shared_dir, "softmax_only.mlir_dump.txt.gz")])
    steps = run.tables["ir_steps"]
    assert steps.height == 80
    # Only softmax_kernel's pass dumps; the pipeliner's own snapshots ignore the filter.
    assert steps.filter(pl.col("kind") != "internal")["kernel"].unique().to_list() == ["softmax_kernel"]


def test_llvm_ir_dump(shared_dir: Path) -> None:
    run = registry.collect([_sample(shared_dir, "add_kernel.llvm_ir_dump.txt.gz")])
    assert run.tables["ir_steps"].height == 193
    assert run.tables["ir_kernels"]["kernel"].to_list() == ["add_kernel"]


def test_cache_and_kernel_dump_folders(shared_dir: Path) -> None:
    cache = registry.collect([_sample(shared_dir, "cache")])
    kernel = cache.tables["ir_kernels"].row(0, named=True)
    assert (kernel["kernel"], kernel["shared"], kernel["num_warps"]) == ("matmul_kernel", 32768, 8)
    assert cache.tables["ir_steps"]["stage"].to_list() == ["source", "ttir", "ttgir", "llir", "ptx", "cubin"]
    dump = registry.collect([_sample(shared_dir, "kernel_dump")])
    assert sorted(dump.tables["ir_kernels"]["kernel"].to_list()) == ["matmul_kernel", "softmax_kernel"]
    for _, part in dump.tables["ir_steps"].group_by("compile"):
        assert part["stage"].to_list() == ["ttir", "ttgir", "llir", "ptx", "sass", "cubin"]
    assert not dump.warnings
