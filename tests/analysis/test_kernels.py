"""Kernel summaries on small frames whose answers are worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis import kernels as ka
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.kernel_names import MAX_LABEL, kernel_labels, short_kernel_name, split_kernel_name
from dashboard.schema import conform, empty

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_kernel__5x_cublas"
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")


def kernels_frame(rows: list[tuple]) -> pl.DataFrame:
    """rows: (rank, name, start_ns, end_ns, op, layer)."""
    frame = pl.DataFrame(rows, schema=["rank", "name", "start_ns", "end_ns", "op", "layer"], orient="row")
    frame = frame.with_columns(pl.lit(128).alias("grid_x"), pl.lit(1).alias("grid_y"), pl.lit(1).alias("grid_z"),
                               pl.lit(256).alias("block_x"), pl.lit(1).alias("block_y"), pl.lit(1).alias("block_z"),
                               pl.lit(32).alias("registers"), pl.lit(0).alias("shared_memory"))
    return ka.prepare_kernels(conform("kernels", frame))


@pytest.fixture
def three_gemms_two_adds() -> pl.DataFrame:
    # GEMM durations 10, 20, 60 ns; ADD durations 5, 5. Rank 1 runs one more GEMM of 100 ns.
    return kernels_frame([
        (0, GEMM, 0, 10, "aten::mm", "fc1"),
        (0, ADD, 10, 15, "aten::add", "fc1"),
        (0, GEMM, 20, 40, "aten::mm", "fc2"),
        (0, ADD, 40, 45, "aten::add", None),
        (0, GEMM, 50, 110, "aten::mm", "fc2"),
        (1, GEMM, 0, 100, "aten::mm", "fc1"),
    ])


def test_summary_totals_mean_median_p95(three_gemms_two_adds: pl.DataFrame) -> None:
    rank0 = ka.filter_kernels(three_gemms_two_adds, rank=0)
    summary = ka.kernel_summary(rank0)
    gemm = summary.row(0, named=True)
    assert gemm["group"] == GEMM and gemm["key"] == kernel_key(GEMM)
    assert gemm["count"] == 3 and gemm["total_ns"] == 90
    assert gemm["mean_ns"] == pytest.approx(30.0)
    assert gemm["median_ns"] == 20
    # linear p95 of [10, 20, 60]: position 0.95 * 2 = 1.9 -> 20 + 0.9 * 40 = 56
    assert gemm["p95_ns"] == pytest.approx(56.0)
    assert (gemm["min_ns"], gemm["max_ns"]) == (10, 60)
    assert gemm["share"] == pytest.approx(90 / 100)
    assert gemm["grid"] == "128×1×1" and gemm["block"] == "256×1×1" and gemm["registers"] == 32
    add = summary.row(1, named=True)
    assert add["count"] == 2 and add["total_ns"] == 10 and add["share"] == pytest.approx(0.1)
    assert add["label"] == "vectorized_elementwise_kernel‹CUDAFunctor_add›"


def test_all_ranks_sum_and_rank_spread(three_gemms_two_adds: pl.DataFrame) -> None:
    frame = ka.filter_kernels(three_gemms_two_adds)
    summary = ka.kernel_summary(frame)
    assert summary.filter(pl.col("group") == GEMM).item(0, "total_ns") == 190
    spread = ka.rank_spread(frame).sort("group")
    gemm = spread.filter(pl.col("group") == GEMM).row(0, named=True)
    assert gemm["ranks"] == [0, 1] and gemm["rank_totals_ns"] == [90, 100]
    assert (gemm["rank_min_ns"], gemm["rank_mean_ns"], gemm["rank_max_ns"]) == (90, 95.0, 100)
    add = spread.filter(pl.col("group") == ADD).row(0, named=True)
    assert add["rank_totals_ns"] == [10, 0]  # a rank without the kernel counts as 0, not missing


def test_window_overlap_counts_and_clips_totals(three_gemms_two_adds: pl.DataFrame) -> None:
    # Window [30, 60): the GEMM 20-40 overlaps by 10, ADD 40-45 fully inside (5), GEMM 50-110 by 10.
    frame = ka.filter_kernels(three_gemms_two_adds, rank=0, window=(30, 60))
    summary = ka.kernel_summary(frame)
    gemm = summary.filter(pl.col("group") == GEMM).row(0, named=True)
    assert gemm["count"] == 2  # overlapping kernels count; the one at 0-10 does not
    assert gemm["total_ns"] == 20  # time clipped to the window
    assert gemm["mean_ns"] == pytest.approx(40.0)  # per-launch stats use whole durations (20, 60)
    assert ka.gpu_time_ns(frame) == 25
    assert summary.get_column("share").sum() == pytest.approx(1.0)
    # A kernel ending exactly at the window start does not overlap.
    assert ka.filter_kernels(three_gemms_two_adds, rank=0, window=(110, 200)).height == 0


def test_group_by_op_and_layer(three_gemms_two_adds: pl.DataFrame) -> None:
    frame = ka.filter_kernels(three_gemms_two_adds, rank=0)
    by_layer = ka.kernel_summary(frame, "layer")
    assert dict(zip(by_layer["group"], by_layer["total_ns"], strict=True)) == {
        "fc2": 80, "fc1": 15, ka.UNATTRIBUTED: 5}
    assert by_layer.filter(pl.col("group") == "fc1").item(0, "kernels") == 2
    assert by_layer.get_column("grid").null_count() == by_layer.height  # launch shapes only per kernel
    pairs = ka.group_kernel_keys(frame, "layer")
    fc1 = kernel_key("fc1")
    assert ka.keys_for_groups(pairs, [fc1]) == sorted([kernel_key(GEMM), kernel_key(ADD)])
    assert ka.groups_touching(pairs, [kernel_key(ADD)]) == sorted([fc1, kernel_key(ka.UNATTRIBUTED)])
    by_op = ka.kernel_summary(frame, "op")
    assert by_op.get_column("group").to_list() == ["aten::mm", "aten::add"]


def test_unknown_grouping_is_an_error(three_gemms_two_adds: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="unknown grouping"):
        ka.kernel_summary(ka.filter_kernels(three_gemms_two_adds), "stream")  # type: ignore[arg-type]


def test_empty_frame_gives_empty_summary() -> None:
    frame = ka.filter_kernels(ka.prepare_kernels(empty("kernels")))
    assert ka.kernel_summary(frame).height == 0
    assert ka.gpu_time_ns(frame) == 0


def test_short_names_strip_void_templates_and_parameters() -> None:
    assert short_kernel_name(ADD) == "vectorized_elementwise_kernel‹CUDAFunctor_add›"
    assert short_kernel_name("void foo::bar_kernel(float*, int)") == "bar_kernel"
    base, hints = split_kernel_name(
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)")
    assert base == "vectorized_layer_norm_kernel" and hints == ["BFloat16", "float"]
    assert len(short_kernel_name("x" * 300)) <= MAX_LABEL


def test_labels_are_unique_and_show_what_differs() -> None:
    gemm_b = GEMM.replace("128x256x64", "256x128x64")
    mul = ADD.replace("CUDAFunctor_add", "MulFunctor")
    labels = kernel_labels([GEMM, gemm_b, ADD, mul, ADD])
    assert len(labels) == 4 and len(set(labels.values())) == 4
    assert "128x256" in labels[GEMM] and "256x128" in labels[gemm_b]
    assert "MulFunctor" in labels[mul]
