"""The naming rule on real demangled names (../shared/samples): a 2021 PyTorch (ResNet-50 on a V100) against a
2023 one (the HTA DDP trace). The same kernels under old and new naming get one short name and pair up on
/compare; every label is short, unique and at most two chart lines."""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import kernels as ka
from dashboard.analysis.compare import ONLY_A, ONLY_B, kernel_comparison
from dashboard.analysis.compare_kernels import SAME_REGISTERS, match_renamed, merge_renamed
from dashboard.analysis.kernel_names import LINE_WIDTH, MAX_LABEL, kernel_labels, label_lines, short_kernel_name
from dashboard.collectors.kineto.collector import COLLECTOR

pytestmark = pytest.mark.shared

OLD = "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"  # PyTorch 1.9 era naming
NEW = "hta_trace_filter_sampled_rank-0.json.gz"  # PyTorch 2.x naming


@functools.cache
def _kernels(path: Path) -> pl.DataFrame:
    return COLLECTOR.collect([path], lambda fraction, message: None).tables["kernels"]


def kernels(shared_dir: Path, name: str) -> pl.DataFrame:
    return _kernels(shared_dir / "samples" / "kineto" / name)


def threshold(frame: pl.DataFrame, prefix: str) -> str:
    names = frame.filter(pl.col("name").str.contains("threshold_kernel_impl")
                         & pl.col("name").str.starts_with(prefix)).get_column("name").unique().to_list()
    assert len(names) == 1, names
    return names[0]


def test_old_and_new_naming_of_one_kernel_share_a_short_name(shared_dir: Path) -> None:
    old = threshold(kernels(shared_dir, OLD), "void at::native::vectorized_elementwise_kernel")
    new = threshold(kernels(shared_dir, NEW), "void at::native::vectorized_elementwise_kernel")
    assert old != new and "BinaryFunctor" in new and "BinaryFunctor" not in old  # PyTorch wrapped the functor
    assert short_kernel_name(old) == short_kernel_name(new) == "vectorized_elementwise_kernel‹threshold_kernel_impl›"
    # The non-vectorized launcher of the same functor is another kernel, and says so.
    unrolled = threshold(kernels(shared_dir, NEW), "void at::native::elementwise_kernel")
    assert short_kernel_name(unrolled) == "elementwise_kernel‹threshold_kernel_impl›"


def test_compare_pairs_the_renamed_kernel_by_short_name_and_launch(shared_dir: Path) -> None:
    old_kernels, new_kernels = kernels(shared_dir, OLD), kernels(shared_dir, NEW)
    summary_a = ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(old_kernels)))
    summary_b = ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(new_kernels)))
    comparison = kernel_comparison(summary_a, summary_b)
    old = threshold(old_kernels, "void at::native::vectorized_elementwise_kernel")
    new = threshold(new_kernels, "void at::native::vectorized_elementwise_kernel")
    assert comparison.filter(pl.col("group").is_in([old, new])).get_column("presence").sort().to_list() == [
        ONLY_A, ONLY_B]
    matches = match_renamed(comparison)
    pair = matches.filter(pl.col("group_a") == old).row(0, named=True)
    # Block 64 -> 128 threads between the versions, the grid follows the batch; the registers (19) agree.
    assert pair["group_b"] == new and pair["match"] == SAME_REGISTERS
    assert pair["launch_a"].startswith("grid ") and pair["launch_a"].endswith(" · block 64×1×1 · 19 registers")
    assert pair["launch_b"].startswith("grid ") and pair["launch_b"].endswith(" · block 128×1×1 · 19 registers")
    merged = merge_renamed(comparison, matches)
    row = merged.filter(pl.col("group") == new).row(0, named=True)
    assert row["renamed_from"] == old
    assert row["label"] == "vectorized_elementwise_kernel‹threshold_kernel_impl› (renamed)"
    assert row["total_a_ns"] > 0 and row["total_b_ns"] > 0
    # No pair is a guess: every matched short name is held by one unmatched kernel on each side.
    assert matches.get_column("group_a").n_unique() == matches.height == matches.get_column("group_b").n_unique()


@pytest.mark.parametrize("sample", [OLD, NEW])
def test_every_real_label_is_short_unique_and_two_lines_at_most(shared_dir: Path, sample: str) -> None:
    names = kernels(shared_dir, sample).get_column("name").unique().to_list()
    labels = kernel_labels(names)
    assert len(set(labels.values())) == len(names)
    for name, label in labels.items():
        assert len(label) <= MAX_LABEL, label
        assert not label.startswith("void ") and "at::" not in label and "::{lambda" not in label, (name, label)
        lines = label_lines(label).split("<br>")
        assert len(lines) <= 2 and all(len(line) <= LINE_WIDTH for line in lines), label


def test_labels_add_only_what_tells_same_named_kernels_apart(shared_dir: Path) -> None:
    labels = kernel_labels(kernels(shared_dir, NEW).get_column("name").unique().to_list())
    shown = set(labels.values())
    # One kernel of its name: the bare function name, no template arguments.
    assert "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t" in shown and "linearize_index_kernel" in shown
    # Several: what differs (the element type of one functor; a launcher's vector width; cub's argument).
    assert {"vectorized_elementwise_kernel‹CUDAFunctor_add, float›",
            "vectorized_elementwise_kernel‹CUDAFunctor_add, double›"} <= shown
    assert {"gemvNSP_kernel‹16›", "gemvNSP_kernel‹32›"} <= shown
    # CUTLASS's generic Kernel<...> is named by the kernel it runs.
    assert any(label.startswith("cutlass_80_tensorop_s1688gemm_") for label in shown)
