"""The one rule for an op's inputs as `ranges` stores them (`input_shapes`, `input_dtypes`), whatever the source.

One item per input, as text without the list's outer brackets, the profiler's ", " between items:
`[64, 3, 224, 224], [64], []` and `float, Scalar`. Kineto traces (`kineto.shapes`), Nsight Systems
exports of `torch.autograd.profiler.emit_nvtx(record_shapes=True)` (`nvtx_input_shapes`) and live
capture's module ranges (`capture.ranges`) write them so. A text longer than MAX_INPUT_CHARS characters
(an optimizer's foreach op over every parameter reaches tens of thousands) is cut there, ending in
CUT_MARK, and counted in a warning by the collector.
"""

from __future__ import annotations

import polars as pl

MAX_INPUT_CHARS = 8_192
CUT_MARK = "…"
# emit_nvtx's range text (torch/csrc/profiler/util.cpp, getNvtxStr): `NAME[, seq = N][, op_id = M]
# [, sizes = [[2, 3], []]][, input_op_ids = [(5,0), ...]]`; the sizes list ends at the `]` before either.
_NVTX_SIZES = r", sizes = \[(.*?)\](?:, input_op_ids = \[|$)"


def cut(text: pl.Expr) -> pl.Expr:
    """`text` cut to MAX_INPUT_CHARS characters, ending in CUT_MARK where it was longer."""
    return (pl.when(text.str.len_chars() > MAX_INPUT_CHARS)
            .then(text.str.slice(0, MAX_INPUT_CHARS - 1) + CUT_MARK).otherwise(text))


def cut_text(text: str) -> str:
    """`cut` for one text."""
    return text if len(text) <= MAX_INPUT_CHARS else text[:MAX_INPUT_CHARS - 1] + CUT_MARK


def nvtx_input_shapes(names: pl.Series) -> tuple[pl.Series, int, int]:
    """(input_shapes from emit_nvtx range texts, as categorical text; ranges cut; the longest's length).

    emit_nvtx writes no dtypes: those stay null. Tensor lists come flattened (one item per tensor), as
    emit_nvtx records them.
    """
    empty = pl.Series("input_shapes", [None], dtype=pl.Categorical).new_from_index(0, names.len())
    if names.len() == 0 or not names.str.contains(", sizes = [", literal=True).any():
        return empty, 0, 0
    shapes = names.str.extract(_NVTX_SIZES, 1)
    lengths = shapes.str.len_chars()
    long = int((lengths > MAX_INPUT_CHARS).sum())
    texts = shapes.to_frame("shapes").select(cut(pl.col("shapes"))).to_series()
    return texts.cast(pl.Categorical).alias("input_shapes"), long, int(lengths.max() or 0)
