"""Per-pass time and throughput, step time and GPU busy share of two sides, with B − A deltas.

Definitions (written on the page and in the CLI's output too):
- pass time: the summed duration of the kernels of a pass (forward / backward /
  optimizer / other / unattributed: the kernels' `pass` column; a null pass
  counts as unattributed; `other`: outside a trainer's own pass annotations).
  Kernel time, not wall time: overlapping kernels count twice.
- pass TFLOP/s: the pass's known FLOPs / the time of the kernels that have them;
  null when no kernel of the pass has FLOPs (unknown, never 0).
- step time: rank_summaries.median_step_ns, the one step time of every page:
  per rank the median of its steps (the ProfilerStep#N range, else first to
  last kernel launched in step N), the slowest rank's; null without steps.
- GPU busy: gpu_busy's definition (union of kernel and copy intervals over the span).
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.compare import BOTH, ONLY_A, ONLY_B

PASS_ORDER = ("forward", "backward", "optimizer", "other", "unattributed")
PASS_DEFINITION = ("pass time = summed kernel time of the pass (kernels' pass column; none = unattributed); "
                   "TFLOP/s = known FLOPs / time of the kernels that have them")
STEP_DEFINITION = ("step time = the slowest rank's median over profiler steps of the ProfilerStep#N range (else first "
                   "to last kernel launched in step N)")
_PASS_SCHEMA = {"pass": pl.String, "kernels": pl.Int64, "time_ns": pl.Int64, "flops": pl.Float64,
                "flop_time_ns": pl.Int64}


def pass_times(kernels: pl.DataFrame) -> pl.DataFrame:
    """pass, kernels, time_ns, flops (null when unknown), flop_time_ns (time of the kernels with FLOPs)."""
    if kernels.height == 0:
        return pl.DataFrame(schema=_PASS_SCHEMA)
    duration = (pl.col("end_ns") - pl.col("start_ns")).clip(lower_bound=0)
    known = pl.col("flops").is_not_null()
    return kernels.group_by(pl.col("pass").fill_null("unattributed")).agg(
        pl.len().cast(pl.Int64).alias("kernels"), duration.sum().cast(pl.Int64).alias("time_ns"),
        pl.when(known.any()).then(pl.col("flops").sum()).alias("flops"),
        duration.filter(known).sum().cast(pl.Int64).alias("flop_time_ns"),
    ).cast(_PASS_SCHEMA)  # type: ignore[arg-type]


def pass_comparison(kernels_a: pl.DataFrame, kernels_b: pl.DataFrame) -> pl.DataFrame:
    """One row per pass on either side: time_a_ns, time_b_ns, delta_ns (missing = 0), ratio,
    tflops_a, tflops_b, presence; forward, backward, optimizer, unattributed, then others."""
    def side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
        times = pass_times(frame)
        tflops = pl.when(pl.col("flop_time_ns") > 0).then(pl.col("flops") / pl.col("flop_time_ns") / 1e3)
        return times.select("pass", pl.col("time_ns").alias(f"time_{suffix}_ns"), tflops.alias(f"tflops_{suffix}"))

    joined = side(kernels_a, "a").join(side(kernels_b, "b"), on="pass", how="full", coalesce=True)
    time_a, time_b = pl.col("time_a_ns"), pl.col("time_b_ns")
    order = pl.col("pass").replace_strict({p: i for i, p in enumerate(PASS_ORDER)}, default=len(PASS_ORDER),
                                          return_dtype=pl.Int32)
    return joined.with_columns(
        (time_b.fill_null(0) - time_a.fill_null(0)).alias("delta_ns"),
        pl.when(time_a > 0).then(time_b.fill_null(0) / time_a).alias("ratio"),
        pl.when(time_a.is_null()).then(pl.lit(ONLY_B)).when(time_b.is_null()).then(pl.lit(ONLY_A))
        .otherwise(pl.lit(BOTH)).alias("presence"),
    ).sort(order, "pass").select("pass", "time_a_ns", "time_b_ns", "delta_ns", "ratio", "tflops_a", "tflops_b",
                                 "presence")


def busy_totals(busy: pl.DataFrame) -> dict[str, float | int | None]:
    """span_ns, busy_ns, idle_ns summed over the ranks of a gpu_busy frame, and busy_share = busy / span."""
    span = int(busy.get_column("span_ns").sum() or 0)
    used = int(busy.get_column("busy_ns").sum() or 0)
    return {"span_ns": span, "busy_ns": used, "idle_ns": span - used, "busy_share": used / span if span else None}


def busy_comparison(busy_a: pl.DataFrame, busy_b: pl.DataFrame) -> pl.DataFrame:
    """Two rows (side A, side B) of span, busy, idle and busy share, each over all ranks of its side."""
    rows = [{"side": side, **busy_totals(frame)} for side, frame in (("A", busy_a), ("B", busy_b))]
    return pl.DataFrame(rows, schema={"side": pl.String, "span_ns": pl.Int64, "busy_ns": pl.Int64,
                                      "idle_ns": pl.Int64, "busy_share": pl.Float64})
