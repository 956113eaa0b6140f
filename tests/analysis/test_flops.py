"""FLOP formulas (torch.utils.flop_counter conventions), checked by hand."""

from __future__ import annotations

import json

import polars as pl
import pytest

from dashboard.collectors.kineto.flops import (
    FLOP_OP_NAMES,
    conv_flops,
    flops_from_shapes,
    linear_flops,
    matmul_flops,
    op_flops,
    sdpa_backward_flops,
    sdpa_flops,
)


@pytest.mark.parametrize(
    ("name", "dims", "expected"),
    [
        ("aten::mm", [[64, 32], [32, 16]], 2 * 64 * 16 * 32),
        ("aten::addmm", [[16], [64, 32], [32, 16]], 2 * 64 * 16 * 32),  # bias add not counted
        ("aten::bmm", [[4, 8, 5], [4, 5, 3]], 2 * 4 * 8 * 3 * 5),
        ("aten::baddbmm", [[4, 8, 3], [4, 8, 5], [4, 5, 3], [], []], 2 * 4 * 8 * 3 * 5),
        ("aten::linear", [[2, 10, 32], [16, 32], [16]], 2 * 20 * 32 * 16),
        ("linear", [[7, 32], [16, 32], []], 2 * 7 * 32 * 16),
        ("aten::matmul", [[3, 1, 8, 5], [6, 5, 2]], 2 * 18 * 8 * 2 * 5),  # broadcast batch 3x6
        ("aten::matmul", [[5], [5]], 10),
        ("aten::matmul", [[8, 5], [5]], 2 * 8 * 5),
        ("aten::matmul", [[5], [5, 3]], 2 * 5 * 3),
        ("aten::scaled_dot_product_attention", [[2, 4, 128, 64]] * 3, 2 * 2 * 4 * 128 * 128 * 64 * 2),
        ("aten::_scaled_dot_product_flash_attention", [[1, 2, 16, 8], [1, 2, 32, 8], [1, 2, 32, 4]],
         2 * 2 * 16 * 32 * 8 + 2 * 2 * 16 * 32 * 4),
    ],
)
def test_matmul_family(name: str, dims: list, expected: int) -> None:
    assert op_flops(name, dims) == expected


@pytest.mark.parametrize(
    ("name", "dims"),
    [
        ("aten::mm", [[64, 32], [31, 16]]),  # inner dimensions disagree
        ("aten::mm", [[64, 32]]),  # a shape is missing
        ("aten::mm", [[], [32, 16]]),  # a non-tensor where a tensor belongs
        ("aten::bmm", [[4, 8, 5], [3, 5, 3]]),
        ("aten::matmul", [[3, 8, 5], [4, 5, 2]]),  # batch dims do not broadcast
        ("aten::relu", [[64, 32]]),  # no formula
        ("aten::mm", "not a list"),
        ("aten::mm", [[64, "x"], [32, 16]]),
    ],
)
def test_unknown_is_none_never_zero(name: str, dims) -> None:
    assert op_flops(name, dims) is None


def test_convolution_needs_stride_padding_dilation() -> None:
    x, w = [8, 3, 32, 32], [16, 3, 3, 3]
    # stride 1, padding 1: output 32x32
    expected = 2 * 8 * 16 * 3 * 9 * 32 * 32
    concrete = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"]
    assert op_flops("aten::conv2d", [x, w, [16], [], [], [], []], concrete) == expected
    # stride 2, padding 0: output 15x15
    concrete = ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]
    assert op_flops("aten::convolution", [x, w, [], [], [], [], [], [], []], concrete) == 2 * 8 * 16 * 3 * 9 * 15 * 15
    assert op_flops("aten::conv2d", [x, w, [16], [], [], [], []], ["", "", "", "", "'same'", "[1, 1]", "1"]) == expected
    assert op_flops("aten::conv2d", [x, w, [16], [], [], [], []]) is None  # legacy: no Concrete Inputs
    # grouped: the weight carries in_channels / groups
    assert conv_flops([1, 8, 10, 10], [8, 2, 3, 3], False, [1], [0], [1]) == 2 * 8 * 2 * 9 * 8 * 8


def test_transposed_convolution_counts_over_the_input() -> None:
    x, w = [2, 16, 8, 8], [16, 4, 4, 4]
    assert op_flops("aten::conv_transpose2d", [x, w]) == 2 * 2 * 16 * 4 * 16 * 64
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]
    assert op_flops("aten::_convolution", [x, w, [], [], [], [], [], [], []], concrete) == 2 * 2 * 16 * 4 * 16 * 64


def test_attention_backward_is_two_and_a_half_forwards_for_square_heads() -> None:
    q = [2, 4, 64, 32]
    assert sdpa_backward_flops(q, q, q, q) == pytest.approx(2.5 * sdpa_flops(q, q, q))
    grad_dims = [q, q, q, q, q, [2, 4, 64]]
    assert op_flops("aten::_scaled_dot_product_flash_attention_backward", grad_dims) == sdpa_backward_flops(q, q, q, q)


def test_helpers_reject_bad_shapes() -> None:
    assert linear_flops([4, 32], [16, 31]) is None
    assert matmul_flops([], [3]) is None
    assert conv_flops([1, 3, 2, 2], [4, 3, 5, 5], False, [1], [0], [1]) is None  # kernel larger than input
    assert "aten::mm" in FLOP_OP_NAMES and "mm" in FLOP_OP_NAMES


def test_flops_from_shapes_on_a_frame_prefers_a_measured_value() -> None:
    frame = pl.DataFrame(
        {
            "name": ["aten::mm", "aten::mm", "aten::relu", "aten::mm", "aten::addmm"],
            "input_dims": [json.dumps([[4, 3], [3, 2]])] * 2 + [json.dumps([[4]]), None, "{oops"],
            "concrete_inputs": [None] * 5,
            "flops": [None, 99.0, None, None, None],
        },
        schema_overrides={"flops": pl.Float64},
    )
    assert flops_from_shapes(frame).to_list() == [48.0, 99.0, None, None, None]
