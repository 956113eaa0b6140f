"""Kernel time of two runs, or two ranks of one run, side by side.

The baseline (A) and the compared side (B) are each summarised per kernel
name (`kernels.kernel_summary`); the comparison is a full outer join of the
two on the name, so kernels that exist on one side only are kept and said
to be so. Deltas are B - A: positive means B spends more time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from dashboard.analysis.kernel_names import kernel_labels

ONLY_A, ONLY_B, BOTH = "only in A", "only in B", "both"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run and a rank (None = all ranks)."""

    run_id: str
    rank: int | None

    @property
    def label(self) -> str:
        return f"{self.run_id} · {'all ranks' if self.rank is None else f'rank {self.rank}'}"


@dataclass(frozen=True)
class Totals:
    """Whole-side figures: kernel time, launches and how many kernels each side has."""

    total_a_ns: int
    total_b_ns: int
    launches_a: int
    launches_b: int
    both: int
    only_a: int
    only_b: int

    @property
    def change(self) -> float | None:
        """(B - A) / A of total kernel time; None when A has none."""
        return (self.total_b_ns - self.total_a_ns) / self.total_a_ns if self.total_a_ns else None


def kernel_comparison(baseline: pl.DataFrame, other: pl.DataFrame) -> pl.DataFrame:
    """One row per kernel name on either side, largest |B - A| first.

    `baseline` and `other` are `kernel_summary` frames grouped by name.
    Columns: group, key, label, count_a, count_b, total_a_ns, total_b_ns,
    mean_a_ns, mean_b_ns, delta_ns (B - A, a missing side counting 0), ratio
    (B / A, null where A has none), presence (both / only in A / only in B), and each
    side's commonest launch: grid_a, block_a, registers_a, grid_b, block_b, registers_b
    (null where a side lacks the kernel or its summary has no launch shapes).
    """
    def side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return frame.select("group", "key", "label", pl.col("count").cast(pl.Int64).alias(f"count_{suffix}"),
                            pl.col("total_ns").cast(pl.Int64).alias(f"total_{suffix}_ns"),
                            pl.col("mean_ns").cast(pl.Float64).alias(f"mean_{suffix}_ns"),
                            *_launch(frame, suffix))

    joined = side(baseline, "a").join(side(other, "b"), on="group", how="full", coalesce=True)
    # Labels made unique per side can clash across sides (two kernels, one per side): label the union.
    labels = kernel_labels(joined.get_column("group").to_list())
    joined = joined.with_columns(pl.col("group").replace_strict(labels, return_dtype=pl.String).alias("label"))
    total_a, total_b = pl.col("total_a_ns"), pl.col("total_b_ns")
    delta = total_b.fill_null(0) - total_a.fill_null(0)
    return joined.with_columns(
        pl.coalesce("key", "key_right").alias("key"),
        delta.alias("delta_ns"),
        pl.when(total_a > 0).then(total_b.fill_null(0) / total_a).alias("ratio"),
        pl.when(total_a.is_null()).then(pl.lit(ONLY_B))
        .when(total_b.is_null()).then(pl.lit(ONLY_A))
        .otherwise(pl.lit(BOTH)).alias("presence"),
    ).sort([delta.abs(), "group"], descending=[True, False]).select(
        "group", "key", "label", "count_a", "count_b", "total_a_ns", "total_b_ns", "mean_a_ns", "mean_b_ns",
        "delta_ns", "ratio", "presence", *LAUNCH_COLUMNS,
    )


LAUNCH_COLUMNS = tuple(f"{part}_{side}" for side in "ab" for part in ("grid", "block", "registers"))


def _launch(frame: pl.DataFrame, suffix: str) -> list[pl.Expr]:
    """A summary's commonest grid (its "(+n more)" dropped), block and registers, named for the side."""
    def column(name: str, dtype: type[pl.DataType]) -> pl.Expr:
        return (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype)

    grid = column("grid", pl.String).str.replace(r" \(\+\d+ more\)$", "")
    return [grid.alias(f"grid_{suffix}"), column("block", pl.String).alias(f"block_{suffix}"),
            column("registers", pl.Int64).alias(f"registers_{suffix}")]


def layer_comparison(baseline: pl.DataFrame, other: pl.DataFrame) -> pl.DataFrame:
    """One row per (layer, pass) on either side, in A's model order (B's own layers after).

    `baseline` and `other` are `layers.layer_stats` frames. Columns: layer,
    pass, count_a, count_b, median_a_ns, median_b_ns, delta_ns (median B -
    median A, null unless both sides have the layer), ratio, presence, tflops_a,
    tflops_b (median TFLOP/s over the occurrences with known FLOPs; null = unknown).
    """
    def side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
        if frame.height == 0:
            return pl.DataFrame(schema={"layer": pl.String, "pass": pl.String, f"order_{suffix}": pl.Int64,
                                        f"count_{suffix}": pl.Int64, f"median_{suffix}_ns": pl.Float64,
                                        f"tflops_{suffix}": pl.Float64})
        return frame.select("layer", "pass", pl.col("order").cast(pl.Int64).alias(f"order_{suffix}"),
                            pl.col("count").cast(pl.Int64).alias(f"count_{suffix}"),
                            pl.col("time_median").cast(pl.Float64).alias(f"median_{suffix}_ns"),
                            (pl.col("rate_median").cast(pl.Float64) / 1e12 if "rate_median" in frame.columns
                             else pl.lit(None, pl.Float64)).alias(f"tflops_{suffix}"))

    joined = side(baseline, "a").join(side(other, "b"), on=["layer", "pass"], how="full", coalesce=True)
    median_a, median_b = pl.col("median_a_ns"), pl.col("median_b_ns")
    after_a = pl.col("order_a").max() + 1
    return joined.with_columns(
        (median_b - median_a).alias("delta_ns"),
        pl.when(median_a > 0).then(median_b / median_a).alias("ratio"),
        pl.when(median_a.is_null()).then(pl.lit(ONLY_B))
        .when(median_b.is_null()).then(pl.lit(ONLY_A))
        .otherwise(pl.lit(BOTH)).alias("presence"),
        pl.coalesce("order_a", after_a.fill_null(0) + pl.col("order_b")).alias("_order"),
        pl.col("pass").replace_strict({"forward": 0, "backward": 1}, default=2, return_dtype=pl.Int8).alias("_pass"),
    ).sort("_order", "_pass", "layer").select(
        "layer", "pass", "count_a", "count_b", "median_a_ns", "median_b_ns", "delta_ns", "ratio", "presence",
        "tflops_a", "tflops_b",
    )


def comparison_totals(comparison: pl.DataFrame) -> Totals:
    """Side totals of a `kernel_comparison`."""
    presence = comparison.get_column("presence")

    def total(column: str) -> int:
        return int(comparison.get_column(column).sum() or 0)

    return Totals(
        total_a_ns=total("total_a_ns"), total_b_ns=total("total_b_ns"),
        launches_a=total("count_a"), launches_b=total("count_b"),
        both=int((presence == BOTH).sum()), only_a=int((presence == ONLY_A).sum()),
        only_b=int((presence == ONLY_B).sum()),
    )


def default_sides(baseline: Side, ranks: Sequence[int], previous_run: str | None) -> tuple[Side, Side] | None:
    """(A, B) when the URL names no B: never a guess between unrelated runs.

    Two ranks of the same run when it has several (rank to rank is the commonest question on a multi-GPU
    job: which rank is the straggler); A showing all ranks then becomes its first rank, so like is compared
    with like. Else the previous run of the same name (`previous_run`: the same job profiled before); None
    when there is neither: the page asks for B.
    """
    ordered = sorted(ranks)
    if len(ordered) >= 2:
        a = baseline if baseline.rank in ordered else Side(baseline.run_id, ordered[0])
        others = [rank for rank in ordered if rank != a.rank]
        return a, Side(baseline.run_id, others[0])
    if previous_run is not None and previous_run != baseline.run_id:
        return baseline, Side(previous_run, None)
    return None
