"""Device memory (`op_memory`) of two runs on one op axis: alignment, peaks, where curves part, fragmentation.

Alignment: when both runs executed the same op_type sequence, op i of A faces op
i of B ("by op index"). Otherwise the sequences are aligned by op identity: a
difflib SequenceMatcher over the op_type sequences (autojunk off: repeated op
types are the norm, not noise) pairs the ops of its matching blocks; ops in
between are on one side only. Past MATCHER_LIMIT ops a side, where the matcher's
worst case is quadratic, ops pair on (op_type, occurrence of that type) instead.
Every aligned op gets a `position` on one shared axis; an op found on one side
only has a position too, with nothing facing it.

Peaks and culprits follow memory.peaks (the snapshot before op i; the culprit
op i-1 allocated it). Values are bytes per bank (what decides whether a buffer fits).
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

import polars as pl

from dashboard.analysis import memory

BY_INDEX = "by op index (identical op sequences)"
BY_MATCHER = "by op identity (SequenceMatcher on op types)"
BY_OCCURRENCE = "by op identity (op type and its occurrence count)"
MATCHER_LIMIT = 4_000  # measured: ~1.5 s at 4 k ops a side, ~24 s at 20 k (the demo's repetitive op types)
_ALIGN_SCHEMA = {"position": pl.Int64, "op_index_a": pl.Int64, "op_index_b": pl.Int64}


@dataclass(frozen=True)
class Alignment:
    pairs: pl.DataFrame  # position, op_index_a, op_index_b (a null side: the op exists on the other only)
    method: str
    matched: int
    only_a: int
    only_b: int


def op_sequence(op_memory: pl.DataFrame, rank: int = 0) -> pl.DataFrame:
    """op_index, op_type of one rank's ops, in order (one row per op, not per buffer type)."""
    return (op_memory.filter(pl.col("rank") == rank).select("op_index", "op_type")
            .unique("op_index", keep="first").sort("op_index"))


def _from_blocks(index_a: list[int], index_b: list[int], blocks: list[tuple[int, int, int]]) -> pl.DataFrame:
    pairs: list[tuple[int | None, int | None]] = []
    i = j = 0
    for start_a, start_b, size in blocks:  # the last block is the (len_a, len_b, 0) sentinel
        pairs += [(index_a[k], None) for k in range(i, start_a)]
        pairs += [(None, index_b[k]) for k in range(j, start_b)]
        pairs += [(index_a[start_a + k], index_b[start_b + k]) for k in range(size)]
        i, j = start_a + size, start_b + size
    return pl.DataFrame({"position": range(len(pairs)), "op_index_a": [p[0] for p in pairs],
                         "op_index_b": [p[1] for p in pairs]}, schema=_ALIGN_SCHEMA)


def _by_occurrence(ops_a: pl.DataFrame, ops_b: pl.DataFrame) -> pl.DataFrame:
    def numbered(ops: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return ops.with_columns(pl.int_range(pl.len()).over("op_type").alias("occurrence")).rename(
            {"op_index": f"op_index_{suffix}"})

    joined = numbered(ops_a, "a").join(numbered(ops_b, "b"), on=["op_type", "occurrence"], how="full",
                                       coalesce=True)
    # Shared axis: B's op index where B has the op, else A's (an approximate place for A-only ops).
    return joined.sort(pl.coalesce("op_index_b", "op_index_a"), "op_index_a", nulls_last=True).select(
        pl.int_range(pl.len()).cast(pl.Int64).alias("position"), "op_index_a", "op_index_b").cast(_ALIGN_SCHEMA)


def align_ops(ops_a: pl.DataFrame, ops_b: pl.DataFrame) -> Alignment:
    """Pair the ops of two runs (op_sequence frames) on one axis; see the module docstring."""
    types_a, types_b = ops_a.get_column("op_type").to_list(), ops_b.get_column("op_type").to_list()
    index_a, index_b = ops_a.get_column("op_index").to_list(), ops_b.get_column("op_index").to_list()
    if types_a == types_b:
        pairs = pl.DataFrame({"position": range(len(index_a)), "op_index_a": index_a, "op_index_b": index_b},
                             schema=_ALIGN_SCHEMA)
        method = BY_INDEX
    elif max(len(types_a), len(types_b)) <= MATCHER_LIMIT:
        matcher = SequenceMatcher(None, types_a, types_b, autojunk=False)
        pairs = _from_blocks(index_a, index_b, matcher.get_matching_blocks())
        method = BY_MATCHER
    else:
        pairs = _by_occurrence(ops_a, ops_b)
        method = BY_OCCURRENCE
    a_present, b_present = pl.col("op_index_a").is_not_null(), pl.col("op_index_b").is_not_null()
    counts = pairs.select((a_present & b_present).sum().alias("m"), (a_present & ~b_present).sum().alias("a"),
                          (~a_present & b_present).sum().alias("b")).row(0)
    return Alignment(pairs, method, int(counts[0]), int(counts[1]), int(counts[2]))


def aligned_curves(op_memory_a: pl.DataFrame, op_memory_b: pl.DataFrame, alignment: Alignment,
                   rank_a: int = 0, rank_b: int = 0) -> pl.DataFrame:
    """position, buffer_type, op_index/op_type/allocated/fragmentation of each side (null where absent).

    One row per (aligned position, buffer type either side has); allocated is bytes per bank.
    """
    def side(frame: pl.DataFrame, rank: int, suffix: str) -> pl.DataFrame:
        curves = memory.memory_curves(frame.filter(pl.col("rank") == rank))
        return curves.select(pl.col("op_index").alias(f"op_index_{suffix}"), "buffer_type",
                             pl.col("op_type").alias(f"op_type_{suffix}"),
                             pl.col("allocated").alias(f"allocated_{suffix}"),
                             pl.col("fragmentation").alias(f"fragmentation_{suffix}"))

    a, b = side(op_memory_a, rank_a, "a"), side(op_memory_b, rank_b, "b")
    types = pl.concat([a.select("buffer_type"), b.select("buffer_type")]).unique()
    grid = alignment.pairs.join(types, how="cross")
    return (grid.join(a, on=["op_index_a", "buffer_type"], how="left")
            .join(b, on=["op_index_b", "buffer_type"], how="left")
            .sort("buffer_type", "position"))


def first_divergence(curves: pl.DataFrame) -> dict[str, int | str | None] | None:
    """The first aligned position where the curves part: an op on one side only, or allocated bytes
    that differ in some buffer type. None when the curves never part."""
    parted = curves.filter(
        pl.col("op_index_a").is_null() | pl.col("op_index_b").is_null()
        | (pl.col("allocated_a") != pl.col("allocated_b")).fill_null(False)
        | (pl.col("allocated_a").is_null() != pl.col("allocated_b").is_null()))
    if parted.height == 0:
        return None
    first = parted.sort("position", "buffer_type").row(0, named=True)
    return {key: first[key] for key in ("position", "buffer_type", "op_index_a", "op_index_b", "op_type_a",
                                        "op_type_b", "allocated_a", "allocated_b")}


def peak_comparison(op_memory_a: pl.DataFrame, op_memory_b: pl.DataFrame, rank_a: int = 0,
                    rank_b: int = 0) -> pl.DataFrame:
    """Per buffer type on either side: peak bytes per bank of A and B, B − A, each side's peak and culprit op,
    and fragmentation (at the peak, and the largest over the run) side by side."""
    def side(frame: pl.DataFrame, rank: int, suffix: str) -> pl.DataFrame:
        mine = frame.filter(pl.col("rank") == rank)
        found = memory.peaks(mine).select(
            "buffer_type", pl.col("allocated_per_bank").alias(f"peak_{suffix}_bytes_per_bank"),
            pl.col("capacity_per_bank").alias(f"capacity_{suffix}_bytes_per_bank"),
            pl.col("peak_op_index").alias(f"peak_op_index_{suffix}"),
            pl.col("culprit_op_index").alias(f"culprit_op_index_{suffix}"),
            pl.col("culprit_op_type").alias(f"culprit_op_type_{suffix}"),
            pl.col("fragmentation").alias(f"fragmentation_at_peak_{suffix}"))
        worst = mine.group_by("buffer_type").agg(memory.fragmentation().max().alias(f"fragmentation_max_{suffix}"))
        return found.join(worst, on="buffer_type", how="left")

    joined = side(op_memory_a, rank_a, "a").join(side(op_memory_b, rank_b, "b"), on="buffer_type", how="full",
                                                 coalesce=True)
    order = pl.col("buffer_type").replace_strict({t: i for i, t in enumerate(memory.BUFFER_ORDER)},
                                                 default=len(memory.BUFFER_ORDER), return_dtype=pl.Int32)
    return joined.with_columns(
        (pl.col("peak_b_bytes_per_bank") - pl.col("peak_a_bytes_per_bank")).alias("delta_bytes_per_bank"),
    ).sort(order, "buffer_type")


def alignment_stretches(pairs: pl.DataFrame) -> pl.DataFrame:
    """Consecutive aligned positions of one kind (both / only in A / only in B) as one row each:
    first_position, last_position, presence, first/last op index of each side (null where absent)."""
    a, b = pl.col("op_index_a").is_not_null(), pl.col("op_index_b").is_not_null()
    presence = pl.when(a & b).then(pl.lit("both")).when(a).then(pl.lit("only in A")).otherwise(pl.lit("only in B"))
    marked = pairs.with_columns(presence.alias("presence"))
    stretch = (pl.col("presence") != pl.col("presence").shift(1)).fill_null(True).cum_sum()
    return marked.group_by(stretch.alias("stretch"), maintain_order=True).agg(
        pl.col("position").first().alias("first_position"), pl.col("position").last().alias("last_position"),
        pl.col("presence").first(), pl.col("op_index_a").min().alias("first_op_a"),
        pl.col("op_index_a").max().alias("last_op_a"), pl.col("op_index_b").min().alias("first_op_b"),
        pl.col("op_index_b").max().alias("last_op_b"),
    ).drop("stretch")
