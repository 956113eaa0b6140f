"""FLOPs of an operation from its input shapes (PyTorch profiler `Input Dims`).

The formulas are those of `torch.utils.flop_counter`: a multiply-add counts
as 2 FLOPs, bias adds and softmax are not counted. An operation whose shapes
(or, for a convolution, stride / padding / dilation) are not all known gets
None, never 0: unknown is not free.

`flops_from_shapes` applies the formulas to a frame of operations; it calls
the Python formulas once per distinct (name, shapes, concrete inputs), not
once per row, so a trace with a million matmuls of a few shapes costs a few
calls.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

Shape = list[int]

_LIST_OF_INTS = re.compile(r"^\[\s*(-?\d+(\s*,\s*-?\d+)*)?\s*\]$")


def mm_flops(a: Shape, b: Shape) -> float | None:
    """[m, k] @ [k, n]: 2·m·n·k."""
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        return None
    return 2.0 * a[0] * b[1] * a[1]


def bmm_flops(a: Shape, b: Shape) -> float | None:
    """[B, m, k] @ [B, k, n]: 2·B·m·n·k."""
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        return None
    return 2.0 * a[0] * a[1] * b[2] * a[2]


def _broadcast(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    out = []
    for index in range(1, max(len(a), len(b)) + 1):
        x = a[-index] if index <= len(a) else 1
        y = b[-index] if index <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out[::-1]


def matmul_flops(a: Shape, b: Shape) -> float | None:
    """torch.matmul with its 1-D and broadcast-batch cases."""
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return 2.0 * a[0] if a[0] == b[0] else None
    m, k = (1, a[0]) if len(a) == 1 else (a[-2], a[-1])
    k2, n = (b[0], 1) if len(b) == 1 else (b[-2], b[-1])
    if k != k2:
        return None
    batch = _broadcast(a[:-2], b[:-2])
    if batch is None:
        return None
    return 2.0 * math.prod(batch) * m * n * k


def linear_flops(x: Shape, weight: Shape) -> float | None:
    """x[..., in] @ weight[out, in]ᵀ: 2·rows·in·out."""
    if not x or len(weight) != 2 or x[-1] != weight[1]:
        return None
    return 2.0 * math.prod(x[:-1]) * weight[1] * weight[0]


def conv_flops(
    x: Shape,
    weight: Shape,
    transposed: bool,
    stride: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilation: Sequence[int] | None,
) -> float | None:
    """batch · c_out · c_in/groups · prod(kernel) · prod(out spatial) · 2.

    A transposed convolution counts over the input's spatial size (as
    flop_counter does), so it needs no stride; a plain one needs stride,
    padding and dilation to know its output size.
    """
    spatial = len(weight) - 2
    if spatial < 1 or len(x) != len(weight):
        return None
    c_out, c_in, *kernel = weight
    if transposed:
        counted = x[2:]
    else:
        if stride is None or padding is None or dilation is None:
            return None
        stride, padding, dilation = (_expand(v, spatial) for v in (stride, padding, dilation))
        if stride is None or padding is None or dilation is None:
            return None
        counted = [
            (size + 2 * pad - dil * (k - 1) - 1) // st + 1
            for size, k, st, pad, dil in zip(x[2:], kernel, stride, padding, dilation, strict=True)
        ]
        if any(size <= 0 for size in counted):
            return None
    return 2.0 * x[0] * c_out * c_in * math.prod(kernel) * math.prod(counted)


def _expand(values: Sequence[int] | None, spatial: int) -> list[int] | None:
    if values is None or len(values) not in (1, spatial):
        return None
    return list(values) * spatial if len(values) == 1 else list(values)


def sdpa_flops(query: Shape, key: Shape, value: Shape) -> float | None:
    """Attention forward: q·kᵀ and scores·v, both batched over batch × heads."""
    if len(query) != 4 or len(key) != 4 or len(value) != 4:
        return None
    b, h, s_q, d_q = query
    s_k, d_v = key[2], value[3]
    return 2.0 * b * h * s_q * s_k * d_q + 2.0 * b * h * s_q * s_k * d_v


def sdpa_backward_flops(grad_out: Shape, query: Shape, key: Shape, value: Shape) -> float | None:
    """Attention backward: recomputed scores plus the four gradient products."""
    if any(len(shape) != 4 for shape in (grad_out, query, key, value)):
        return None
    b, h, s_q, d_q = query
    s_k, d_v = key[2], value[3]
    bh = b * h
    return 2.0 * bh * (s_q * d_q * s_k + s_q * d_v * s_k + s_k * s_q * d_v + s_q * s_k * d_q + d_q * s_q * s_k)


def _conv_from_args(dims: list[Any], concrete: list[Any], layout: str) -> float | None:
    x, weight = dims[0], dims[1]
    if layout == "transpose":
        return conv_flops(x, weight, True, None, None, None)
    if layout == "convolution":  # (input, weight, bias, stride, padding, dilation, transposed, ...)
        transposed = _concrete_bool(concrete, 6)
        if transposed is None:
            return None
    else:  # conv1d/2d/3d: (input, weight, bias, stride, padding, dilation, groups)
        transposed = False
    padding_text = _concrete_text(concrete, 4)
    if padding_text == "same":
        # padding="same" keeps the input's spatial size (PyTorch allows it only
        # with stride 1), which is exactly what the transposed count uses.
        return conv_flops(x, weight, True, None, None, None)
    padding = [0] if padding_text == "valid" else _concrete_ints(concrete, 4)
    return conv_flops(x, weight, transposed, _concrete_ints(concrete, 3), padding, _concrete_ints(concrete, 5))


def _concrete_text(concrete: list[Any], index: int) -> str | None:
    if index >= len(concrete) or not isinstance(concrete[index], str):
        return None
    return concrete[index].strip().strip("'\"")


def _concrete_ints(concrete: list[Any], index: int) -> list[int] | None:
    text = _concrete_text(concrete, index)
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return [int(text)]
    if not _LIST_OF_INTS.match(text):
        return None
    inner = text.strip("[] ")
    return [int(part) for part in inner.split(",")] if inner else None


def _concrete_bool(concrete: list[Any], index: int) -> bool | None:
    text = _concrete_text(concrete, index)
    return {"True": True, "False": False, "1": True, "0": False}.get(text or "")


_Formula = Callable[[list[Any], list[Any]], float | None]

_FORMULAS: dict[str, tuple[int, _Formula]] = {
    # name: (tensor inputs needed, formula over (input dims, concrete inputs))
    "mm": (2, lambda d, c: mm_flops(d[0], d[1])),
    "addmm": (3, lambda d, c: mm_flops(d[1], d[2])),
    "bmm": (2, lambda d, c: bmm_flops(d[0], d[1])),
    "baddbmm": (3, lambda d, c: bmm_flops(d[1], d[2])),
    "matmul": (2, lambda d, c: matmul_flops(d[0], d[1])),
    "linear": (2, lambda d, c: linear_flops(d[0], d[1])),
    "convolution": (2, lambda d, c: _conv_from_args(d, c, "convolution")),
    "_convolution": (2, lambda d, c: _conv_from_args(d, c, "convolution")),
    "conv1d": (2, lambda d, c: _conv_from_args(d, c, "conv")),
    "conv2d": (2, lambda d, c: _conv_from_args(d, c, "conv")),
    "conv3d": (2, lambda d, c: _conv_from_args(d, c, "conv")),
    "conv_transpose1d": (2, lambda d, c: _conv_from_args(d, c, "transpose")),
    "conv_transpose2d": (2, lambda d, c: _conv_from_args(d, c, "transpose")),
    "conv_transpose3d": (2, lambda d, c: _conv_from_args(d, c, "transpose")),
    "scaled_dot_product_attention": (3, lambda d, c: sdpa_flops(d[0], d[1], d[2])),
    "_scaled_dot_product_flash_attention": (3, lambda d, c: sdpa_flops(d[0], d[1], d[2])),
    "_scaled_dot_product_efficient_attention": (3, lambda d, c: sdpa_flops(d[0], d[1], d[2])),
    "_scaled_dot_product_cudnn_attention": (3, lambda d, c: sdpa_flops(d[0], d[1], d[2])),
    "_scaled_dot_product_flash_attention_backward": (
        4,
        lambda d, c: sdpa_backward_flops(d[0], d[1], d[2], d[3]),
    ),
    "_scaled_dot_product_efficient_attention_backward": (
        4,
        lambda d, c: sdpa_backward_flops(d[0], d[1], d[2], d[3]),
    ),
    "_scaled_dot_product_cudnn_attention_backward": (
        4,
        lambda d, c: sdpa_backward_flops(d[0], d[1], d[2], d[3]),
    ),
}

# Profiler names carry the `aten::` namespace; accept the bare name too.
FLOP_OP_NAMES: frozenset[str] = frozenset(_FORMULAS) | frozenset(f"aten::{name}" for name in _FORMULAS)


def _is_shape(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def op_flops(name: str, input_dims: list[Any], concrete_inputs: list[Any] | None = None) -> float | None:
    """FLOPs of one operation, or None when the name or the shapes do not allow it."""
    entry = _FORMULAS.get(name.removeprefix("aten::"))
    if entry is None or not isinstance(input_dims, list):
        return None
    needed, formula = entry
    if len(input_dims) < needed or not all(_is_shape(shape) and shape for shape in input_dims[:needed]):
        return None
    try:
        value = formula(input_dims, concrete_inputs if isinstance(concrete_inputs, list) else [])
    except (TypeError, ValueError, IndexError):
        return None
    return value if value is not None and value >= 0 else None


def _parse(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def flops_from_shapes(frame: pl.DataFrame) -> pl.Series:
    """FLOPs per row of a frame with `name`, `input_dims` and `concrete_inputs` (JSON text).

    Rows with a `flops` column value keep it (the producer measured it);
    every other row is computed from its shapes, or null.
    """
    keys = ["name", "input_dims", "concrete_inputs"]
    # Only ops with a formula and shapes can be computed (a few of a million ranges), so only they go
    # through the join; the rest stay null without a join of every row on three text keys.
    shaped = frame.select(
        pl.col("name").is_in(list(FLOP_OP_NAMES)) & pl.col("input_dims").is_not_null()
    ).to_series().arg_true()
    candidates = frame.select(keys)[shaped]
    distinct = candidates.unique()
    computed = [
        op_flops(name, _parse(dims), _parse(concrete))
        for name, dims, concrete in distinct.iter_rows()
    ]
    lookup = distinct.with_columns(pl.Series("computed", computed, dtype=pl.Float64))
    found = candidates.join(lookup, on=keys, how="left", nulls_equal=True, maintain_order="left")
    result = pl.Series("computed", [None], dtype=pl.Float64).new_from_index(0, frame.height)
    if shaped.len():
        result = result.scatter(shaped, found.get_column("computed"))
    if "flops" in frame.columns:
        result = frame.get_column("flops").fill_null(result)
    return result.alias("flops")
