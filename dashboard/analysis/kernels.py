"""Where GPU time goes, per kernel (or per launching op / layer).

Window semantics (one rule for every kernel view): a kernel belongs to a
window [a, b) when it *overlaps* it. Its time counts *clipped* to the
window in totals and shares (so the shares of a window add up to the GPU
time inside it), while per-launch statistics (mean, median, p95, min, max)
use the kernel's whole duration (a launch cut by the window edge is not a
shorter launch). Without a window every kernel counts whole.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from dashboard.analysis.kernel_keys import with_kernel_keys
from dashboard.analysis.kernel_names import kernel_labels

Group = Literal["name", "op", "layer"]
GROUPS: tuple[Group, ...] = ("name", "op", "layer")
UNATTRIBUTED = "(unattributed)"
Window = tuple[int, int] | None

_DURATION = (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns")


def prepare_kernels(kernels: pl.DataFrame) -> pl.DataFrame:
    """The kernels table with `duration_ns` and integer codes `name_code` / `op_code` /
    `layer_code` to group by.

    Grouping a million rows by long C++ names hashes every string; grouping by
    a small integer code is several times faster, so every view groups by codes
    and turns codes back into names (and URL keys) on the small result.
    """
    return kernels.with_columns(
        _DURATION,
        *(pl.col(column).fill_null(UNATTRIBUTED).cast(pl.Categorical).to_physical().alias(f"{column}_code")
          for column in GROUPS),
    )


def _code(frame: pl.DataFrame, group: Group) -> pl.Expr:
    """The integer code of the grouping column (computed when the frame was not prepared)."""
    if group not in GROUPS:
        raise ValueError(f"unknown grouping {group!r}; expected one of {GROUPS}")
    if f"{group}_code" in frame.columns:
        return pl.col(f"{group}_code").alias("code")
    return pl.col(group).fill_null(UNATTRIBUTED).cast(pl.Categorical).to_physical().alias("code")


def filter_kernels(kernels: pl.DataFrame, rank: int | None = None, window: Window = None) -> pl.DataFrame:
    """Kernels of one rank (None = all) overlapping `window`, with `time_ns` = time inside it.

    `kernels` must have `duration_ns` (see prepare_kernels).
    """
    frame = kernels
    if rank is not None:
        frame = frame.filter(pl.col("rank") == rank)
    if window is None:
        return frame.with_columns(pl.col("duration_ns").alias("time_ns"))
    start, end = window
    frame = frame.filter(pl.col("start_ns") < end, pl.col("end_ns") > start)
    clipped = pl.min_horizontal(pl.col("end_ns"), pl.lit(end)) - pl.max_horizontal(pl.col("start_ns"), pl.lit(start))
    return frame.with_columns(clipped.alias("time_ns"))


def _group_column(group: Group) -> pl.Expr:
    return pl.col(group).fill_null(UNATTRIBUTED).alias("group")


def kernel_summary(kernels: pl.DataFrame, group: Group = "name",
                   shapes: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per kernel (or op / layer), most total time first.

    Columns: group, key, label, count, total_ns, share, mean_ns, median_ns, p95_ns,
    min_ns, max_ns, kernels (distinct names in the group), grid, block, registers,
    shared_memory. `kernels` comes from filter_kernels (needs `time_ns`, `duration_ns`).
    Grid and block are the commonest launch shape of a kernel name (`shapes`,
    from launch_shapes; computed from `kernels` when not given); null for op / layer rows.
    Where the rows carry `flops` / `bytes` (tinygrad's estimates), also `gflop_s` / `gbyte_s`: the
    group's FLOPs (bytes) over the summed whole durations of the launches that have them (FLOP/ns =
    GFLOP/s); null where no launch has them.
    """
    duration = pl.col("duration_ns")
    rates = [(pl.when(pl.col(column).is_not_null().any())
              .then(pl.col(column).sum() / duration.filter(pl.col(column).is_not_null()).sum().clip(1))
              .otherwise(None).cast(pl.Float64).alias(rate))
             for column, rate in (("flops", "gflop_s"), ("bytes", "gbyte_s")) if column in kernels.columns]
    summary = kernels.group_by(_code(kernels, group)).agg(
        _group_column(group).first(),
        pl.len().alias("count"),
        pl.col("time_ns").sum().alias("total_ns"),
        duration.mean().alias("mean_ns"),
        duration.median().alias("median_ns"),
        duration.quantile(0.95, interpolation="linear").alias("p95_ns"),
        duration.min().alias("min_ns"),
        duration.max().alias("max_ns"),
        pl.col("name").n_unique().alias("kernels") if group != "name" else pl.lit(1, pl.UInt32).alias("kernels"),
        pl.col("registers").max().alias("registers"),
        pl.col("shared_memory").max().alias("shared_memory"),
        *rates,
    ).drop("code")
    grand_total = summary.get_column("total_ns").sum()
    summary = summary.with_columns(
        (pl.col("total_ns") / grand_total if grand_total else pl.lit(0.0)).alias("share"),
    )
    if group == "name":
        shapes = launch_shapes(kernels) if shapes is None else shapes
        summary = summary.join(shapes.rename({"name": "group"}), on="group", how="left")
    else:
        summary = summary.with_columns(pl.lit(None, pl.String).alias("grid"), pl.lit(None, pl.String).alias("block"))
    summary = with_kernel_keys(summary, "group", "key")
    labels = kernel_labels(summary.get_column("group").to_list()) if group == "name" else {}
    summary = summary.with_columns(
        pl.col("group").replace_strict(labels, default=pl.col("group"), return_dtype=pl.String).alias("label")
    )
    return summary.sort(["total_ns", "group"], descending=[True, False]).select(
        "group", "key", "label", "count", "total_ns", "share", "mean_ns", "median_ns", "p95_ns", "min_ns",
        "max_ns", "kernels", "grid", "block", "registers", "shared_memory",
        *(rate for rate in ("gflop_s", "gbyte_s") if rate in summary.columns),
    )


def _dims(prefix: str) -> pl.Expr:
    return pl.format("{}×{}×{}", *(pl.col(f"{prefix}_{axis}").fill_null(1) for axis in "xyz"))


def launch_shapes(kernels: pl.DataFrame) -> pl.DataFrame:
    """Per kernel name: its commonest grid and block ("(+n more)" counts the other grids)."""
    shape_columns = [f"{p}_{a}" for p in ("grid", "block") for a in "xyz"]
    schema = {"name": pl.String, "grid": pl.String, "block": pl.String}
    if kernels.height == 0 or kernels.select(pl.col("grid_x").is_null().all()).item():
        return pl.DataFrame(schema=schema)
    # Group by (name, one hash of the six dims) rather than seven columns: far cheaper on 1 M rows.
    counts = kernels.group_by([_code(kernels, "name"), pl.struct(shape_columns).hash().alias("shape")]).agg(
        pl.len().alias("n"), pl.col("name").first(), *(pl.col(c).first() for c in shape_columns))
    commonest = counts.sort(["n", *shape_columns], descending=[True] + [False] * 6).group_by(
        "code", maintain_order=True).agg(pl.all().first(), pl.len().alias("shapes"))
    extra = pl.when(pl.col("shapes") > 1).then(pl.format(" (+{} more)", pl.col("shapes") - 1)).otherwise(pl.lit(""))
    return commonest.select(
        "name",
        pl.concat_str([_dims("grid"), extra]).alias("grid"),
        _dims("block").alias("block"),
    )


def rank_spread(kernels: pl.DataFrame, group: Group = "name") -> pl.DataFrame:
    """Per group: total time of each rank and the min / mean / max over ranks.

    A rank that never ran the kernel counts as 0, so a kernel missing on one
    rank shows as spread rather than vanishing.
    """
    per_rank = kernels.group_by([_code(kernels, group), "rank"]).agg(
        _group_column(group).first(), pl.col("time_ns").sum().alias("total_ns"))
    ranks = per_rank.select(pl.col("rank").unique().sort())
    grid = per_rank.select("code", "group").unique("code").join(ranks, how="cross")
    full = grid.join(per_rank.drop("group"), on=["code", "rank"], how="left").with_columns(
        pl.col("total_ns").fill_null(0))
    return full.sort("rank").group_by("group").agg(
        pl.col("total_ns").min().alias("rank_min_ns"),
        pl.col("total_ns").mean().alias("rank_mean_ns"),
        pl.col("total_ns").max().alias("rank_max_ns"),
        pl.col("rank").alias("ranks"),
        pl.col("total_ns").alias("rank_totals_ns"),
    )


def group_kernel_keys(kernels: pl.DataFrame, group: Group) -> pl.DataFrame:
    """(group key, kernel key) pairs: which kernel names make up each op / layer row."""
    frame = kernels.group_by([_code(kernels, group), _code(kernels, "name").alias("name_code")]).agg(
        _group_column(group).first(), pl.col("name").first())
    frame = with_kernel_keys(with_kernel_keys(frame, "group", "key"), "name", "kernel_key")
    return frame.select("key", "kernel_key")


def keys_for_groups(pairs: pl.DataFrame, group_keys: list[str]) -> list[str]:
    """The kernel keys behind the chosen group rows (for group='name' they are the same)."""
    chosen = pairs.filter(pl.col("key").is_in(group_keys)).get_column("kernel_key").unique().sort()
    return chosen.to_list()


def groups_touching(pairs: pl.DataFrame, kernel_keys: list[str]) -> list[str]:
    """Group rows that contain at least one of the selected kernels."""
    return pairs.filter(pl.col("kernel_key").is_in(kernel_keys)).get_column("key").unique().sort().to_list()


def gpu_time_ns(kernels: pl.DataFrame) -> int:
    """Total kernel time of a filtered frame (sum of `time_ns`)."""
    return int(kernels.get_column("time_ns").sum() or 0)
