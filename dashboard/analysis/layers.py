"""Per-layer runtime and throughput, one sample per layer occurrence.

A layer occurrence is one execution of a module in one pass. Where the run
has module ranges (ranges.category == "module") each range is a sample and
its duration is the range's length. Where it has none but kernels carry a
`layer`, an occurrence is a maximal run of consecutive kernels (per rank, in
start order) with the same (layer, pass), and its duration is the *sum of
its kernel times* (GPU busy time, gaps excluded); `LayerSamples.source`
says which. With a time window, occurrences that overlap it count, each
with its whole duration (a sample cut in half by the window edge would be a
wrong sample).

Throughput of an occurrence = flops / duration. An occurrence with unknown
FLOPs (null) has no throughput; a layer none of whose occurrences has FLOPs
is reported as unknown, never as 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

Window = tuple[int, int] | None
LAYER_CATEGORIES = ("module",)
# In box order. "none" is what runs ingested before optimizer / unattributed existed carry.
PASSES = ("forward", "backward", "optimizer", "other", "unattributed", "none")
SOURCE_RANGES = "module ranges (one sample = one module call's duration)"
SOURCE_KERNELS = ("kernel time per layer occurrence (no module ranges in this run: one sample = the summed "
                  "time of consecutive kernels attributed to the layer)")

_OCCURRENCE_SCHEMA = {
    "rank": pl.Int32, "layer": pl.String, "pass": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64,
    "duration_ns": pl.Int64, "flops": pl.Float64,
}


@dataclass(frozen=True)
class LayerSamples:
    occurrences: pl.DataFrame  # rank, layer, pass, start_ns, end_ns, duration_ns, flops
    source: str  # SOURCE_RANGES, SOURCE_KERNELS, or "" when there is nothing


def _filtered(frame: pl.DataFrame, rank: int | None, window: Window) -> pl.DataFrame:
    if rank is not None:
        frame = frame.filter(pl.col("rank") == rank)
    if window is not None:
        frame = frame.filter(pl.col("start_ns") < window[1], pl.col("end_ns") > window[0])
    return frame


def occurrences_from_ranges(ranges: pl.DataFrame) -> pl.DataFrame:
    """One row per module range: its layer (the `layer` column, else the range name) and pass."""
    modules = ranges.filter(pl.col("category").is_in(LAYER_CATEGORIES))
    return modules.select(
        pl.col("rank").cast(pl.Int32),
        pl.coalesce("layer", "name").alias("layer"),
        pl.col("pass").fill_null("unattributed").alias("pass"),
        "start_ns", "end_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"),
        pl.col("flops").cast(pl.Float64),
    )


def occurrences_from_kernels(kernels: pl.DataFrame) -> pl.DataFrame:
    """Layer occurrences rebuilt from kernel attribution (see the module docstring)."""
    attributed = kernels.filter(pl.col("layer").is_not_null()).sort("rank", "start_ns")
    if attributed.height == 0:
        return pl.DataFrame(schema=_OCCURRENCE_SCHEMA)
    passes = pl.col("pass").fill_null("unattributed")
    changed = ((pl.col("layer") != pl.col("layer").shift(1)) | (passes != passes.shift(1))
               | (pl.col("rank") != pl.col("rank").shift(1))).fill_null(True)
    runs = attributed.with_columns(passes.alias("pass"), changed.cum_sum().alias("occurrence"))
    return runs.group_by("occurrence").agg(
        pl.col("rank").first().cast(pl.Int32), pl.col("layer").first(), pl.col("pass").first(),
        pl.col("start_ns").min(), pl.col("end_ns").max(),
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("duration_ns"),
        # Sum of known FLOPs; null when no kernel of the occurrence has them.
        pl.when(pl.col("flops").is_not_null().any()).then(pl.col("flops").sum()).alias("flops"),
    ).drop("occurrence").sort("rank", "start_ns")


def layer_occurrences(ranges: pl.DataFrame, kernels: pl.DataFrame) -> LayerSamples:
    """Every layer occurrence of the run, from module ranges or else from kernel attribution."""
    from_ranges = occurrences_from_ranges(ranges)
    if from_ranges.height:
        return LayerSamples(from_ranges, SOURCE_RANGES)
    from_kernels = occurrences_from_kernels(kernels)
    return LayerSamples(from_kernels, SOURCE_KERNELS if from_kernels.height else "")


def select_occurrences(occurrences: pl.DataFrame, rank: int | None = None, window: Window = None) -> pl.DataFrame:
    """Occurrences of one rank (None = all) overlapping the window, whole."""
    return _filtered(occurrences, rank, window)


def _box_stats(value: pl.Expr, prefix: str) -> list[pl.Expr]:
    return [
        value.count().alias(f"{prefix}_n"),
        value.mean().alias(f"{prefix}_mean"),
        value.min().alias(f"{prefix}_min"),
        value.quantile(0.25, interpolation="linear").alias(f"{prefix}_q1"),
        value.median().alias(f"{prefix}_median"),
        value.quantile(0.75, interpolation="linear").alias(f"{prefix}_q3"),
        value.max().alias(f"{prefix}_max"),
    ]


def _whiskers(value: pl.Expr, prefix: str) -> list[pl.Expr]:
    """Tukey whiskers: the most extreme samples within 1.5 IQR of the box."""
    q1, q3 = pl.col(f"{prefix}_q1"), pl.col(f"{prefix}_q3")
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return [
        value.filter(value >= low).min().alias(f"{prefix}_low"),
        value.filter(value <= high).max().alias(f"{prefix}_high"),
    ]


def layer_stats(occurrences: pl.DataFrame) -> pl.DataFrame:
    """Box statistics per (layer, pass), in model order (first start of the layer).

    Columns: layer, pass, order, count, total_ns, time_{n,mean,min,q1,median,q3,max,low,high}
    (durations, ns) and rate_{...} (throughput, FLOP/s, over occurrences with known FLOPs;
    rate_n = 0 means FLOPs unknown).
    """
    if occurrences.height == 0:
        return pl.DataFrame(schema={"layer": pl.String, "pass": pl.String, "order": pl.UInt32,
                                    "count": pl.UInt32, "total_ns": pl.Int64})
    samples = occurrences.with_columns(
        pl.col("duration_ns").cast(pl.Float64).alias("time"),
        pl.when(pl.col("duration_ns") > 0).then(pl.col("flops") / pl.col("duration_ns") * 1e9).alias("rate"),
    )
    keys = ["layer", "pass"]
    stats = samples.group_by(keys).agg(
        pl.len().alias("count"), pl.col("duration_ns").sum().alias("total_ns"),
        *_box_stats(pl.col("time"), "time"), *_box_stats(pl.col("rate"), "rate"),
    )
    joined = samples.join(stats.select(*keys, "time_q1", "time_q3", "rate_q1", "rate_q3"), on=keys)
    whiskers = joined.group_by(keys).agg(*_whiskers(pl.col("time"), "time"), *_whiskers(pl.col("rate"), "rate"))
    first_seen = occurrences.group_by("layer").agg(pl.col("start_ns").min().alias("first_ns"))
    order = first_seen.sort("first_ns", "layer").with_row_index("order").select("layer", "order")
    pass_order = pl.col("pass").replace_strict({p: i for i, p in enumerate(PASSES)}, default=len(PASSES),
                                               return_dtype=pl.Int32)
    return (stats.join(whiskers, on=keys).join(order, on="layer")
            .sort(pl.col("order"), pass_order).with_columns(pl.col("order").cast(pl.UInt32)))


def layer_outliers(occurrences: pl.DataFrame, stats: pl.DataFrame, metric: str = "time",
                   limit: int = 10) -> pl.DataFrame:
    """Samples beyond the whiskers (at most `limit` per box, the most extreme first).

    `metric` is "time" (duration_ns) or "rate" (FLOP/s).
    """
    if occurrences.height == 0 or stats.height == 0:
        return pl.DataFrame(schema={"layer": pl.String, "pass": pl.String, "value": pl.Float64,
                                    "start_ns": pl.Int64, "rank": pl.Int32})
    value = (pl.col("duration_ns").cast(pl.Float64) if metric == "time"
             else pl.col("flops") / pl.col("duration_ns") * 1e9)
    samples = occurrences.filter(pl.col("duration_ns") > 0).with_columns(value.alias("value")).drop_nulls("value")
    bounds = stats.select("layer", "pass", pl.col(f"{metric}_low").alias("low"), pl.col(f"{metric}_high").alias("high"),
                          pl.col(f"{metric}_median").alias("median"))
    outside = samples.join(bounds, on=["layer", "pass"]).filter(
        (pl.col("value") < pl.col("low")) | (pl.col("value") > pl.col("high")))
    ranked = outside.with_columns((pl.col("value") - pl.col("median")).abs().alias("distance"))
    return (ranked.sort("distance", descending=True).group_by("layer", "pass", maintain_order=True)
            .head(limit).select("layer", "pass", "value", "start_ns", "rank"))


def layer_kernels(kernels: pl.DataFrame, occurrences: pl.DataFrame, layer: str, pass_: str,
                  layer_codes: dict[str, int] | None = None) -> tuple[pl.DataFrame, str]:
    """The kernels of one layer and pass, and how they were attributed.

    Kernels carrying a `layer` are matched on (layer, pass). Otherwise a kernel
    belongs to the layer when it starts inside one of the layer's occurrences on
    the same rank (time containment, which assumes GPU-side module ranges).
    `layer_codes` (layer -> `layer_code` of a prepared kernels frame) lets the
    match compare integers instead of a million strings.
    """
    if kernels.height and kernels.select(pl.col("layer").is_not_null().any()).item():
        if layer_codes is not None and "layer_code" in kernels.columns:
            if layer not in layer_codes:
                return kernels.clear(), "kernels attributed to the layer by the collector"
            by_layer = kernels.filter(pl.col("layer_code") == layer_codes[layer])
        else:
            by_layer = kernels.filter(pl.col("layer") == layer)
        chosen = by_layer.filter(pl.col("pass").fill_null("unattributed") == pass_)
        return chosen, "kernels attributed to the layer by the collector"
    spans = (occurrences.filter(pl.col("layer") == layer, pl.col("pass") == pass_)
             .select("rank", pl.col("start_ns").alias("occ_start"), pl.col("end_ns").alias("occ_end"))
             .sort("rank", "occ_start"))
    if spans.height == 0:
        return kernels.clear(), "no occurrence of the layer"
    matched = kernels.sort("rank", "start_ns").join_asof(
        spans, left_on="start_ns", right_on="occ_start", by="rank", strategy="backward",
        check_sortedness=False)  # both sides are sorted by (rank, time) just above
    chosen = matched.filter(pl.col("start_ns") < pl.col("occ_end")).drop("occ_start", "occ_end")
    return chosen, "kernels that start inside the layer's module ranges (no kernel attribution in this run)"
