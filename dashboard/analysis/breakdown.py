"""GPU time per rank and per profiler step, split the way HTA's temporal breakdown splits it.

Definitions (written on /insights too):
- activity: kernels and copies / memsets of a rank, any stream.
- kind of an activity: analysis.kernel_kinds (communication = NCCL, RCCL,
  DeepEP, NVSHMEM, multimem / one-shot / two-shot all-reduce, collectives by
  name or by launching op; memory = every row of the memcpy table and kernels
  named Memcpy / Memset; compute = every other kernel).
- span: first activity start to last activity end.
- compute_ns: length of the union of compute intervals (HTA's compute time).
- communication_ns: time covered by communication and not by compute.
- memory_ns: time covered by copies / memsets and by neither of the above.
- idle_ns = span − union of all activity; so span = compute + communication + memory + idle
  (HTA's non-compute time = communication + memory).
- overlap_ns: communication time that runs while compute runs (HTA's
  communication / computation overlap numerator); communication_total_ns:
  the union of communication intervals alone.

Per step, the activities are those launched in ProfilerStep#N (the `step`
column); a step's span runs from its first activity start to its last end, so
the spans of consecutive steps may overlap when the GPU runs behind the CPU.
"""

from __future__ import annotations

import polars as pl

from dashboard import schema
from dashboard.analysis import kernel_kinds
from dashboard.store import Run

KINDS = kernel_kinds.KINDS
BREAKDOWN_DEFINITION = (
    "span = first to last GPU activity (kernels, copies, memsets) of a rank; compute = union of compute "
    "kernels; communication = collective kernels (NCCL, RCCL, DeepEP, NVSHMEM, multimem…) not under compute; "
    "memory = copies and memsets under neither; idle = span − union of everything (HTA's temporal breakdown: "
    "its non-compute time is communication + memory)"
)
_NO_STEP = -1  # null step inside the grouping keys (joins do not match nulls)
_GROUP_SCHEMA = {"rank": pl.Int32, "step": pl.Int64}
BREAKDOWN_COLUMNS = ("span_ns", "busy_ns", "idle_ns", "compute_ns", "communication_ns", "memory_ns",
                     "communication_total_ns", "overlap_ns")

# The one classification (analysis.kernel_kinds), named here too for the callers of the breakdown.
kernel_kind = kernel_kinds.kernel_kind
with_kernel_kinds = kernel_kinds.with_kernel_kinds


def _part(frame: pl.DataFrame, kind: pl.Expr) -> pl.DataFrame:
    step = pl.col("step") if "step" in frame.columns else pl.lit(None, dtype=pl.Int64)
    return frame.select(pl.col("rank").cast(pl.Int32).fill_null(0), step.cast(pl.Int64).alias("step"),
                        pl.col("start_ns").cast(pl.Int64), pl.col("end_ns").cast(pl.Int64), kind.alias("kind"))


def _intervals(parts: list[pl.DataFrame]) -> pl.DataFrame:
    frame = pl.concat(parts)
    return frame.drop_nulls(["start_ns", "end_ns"]).with_columns(pl.max_horizontal("start_ns", "end_ns")
                                                                  .alias("end_ns"))


def classified_intervals(kernels: pl.DataFrame, memcpy: pl.DataFrame) -> pl.DataFrame:
    """rank, step, start_ns, end_ns, kind of every kernel and copy (kind: compute / communication / memory;
    kernels by analysis.kernel_kinds, with their launching `op` when the frame has one; a `kind` column the
    kernels already carry is used as it is)."""
    classified = kernels if "kind" in kernels.columns else with_kernel_kinds(kernels)
    return _intervals([_part(classified, pl.col("kind")), _part(memcpy, pl.lit("memory"))])


def _union_length(mask: pl.Expr) -> pl.Expr:
    """In a group_by: length of the union of the group's rows where `mask` holds (rows sorted by start).

    With intervals sorted by start, an interval adds what lies past the
    furthest end of the earlier ones (`reach`): every point between its start
    and that end is covered by the interval that reached it. One sort serves
    every subset: the rows outside `mask` carry no end and add nothing.
    """
    end = pl.when(mask).then(pl.col("end_ns"))
    reach = end.cum_max().forward_fill().shift(1)
    added = (pl.col("end_ns") - pl.max_horizontal("start_ns", reach)).clip(lower_bound=0)
    return pl.when(mask).then(added).otherwise(0).sum()


def _breakdown(intervals: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    kind = pl.col("kind")
    frame = intervals.sort([*keys, "start_ns"]).group_by(keys).agg(
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span_ns"),
        _union_length(pl.lit(True)).alias("busy_ns"),
        _union_length(kind == "compute").alias("c"),
        _union_length(kind != "memory").alias("cc"),
        _union_length(kind == "communication").alias("communication_total_ns"),
    )
    return frame.select(
        *keys, pl.col("span_ns").cast(pl.Int64), "busy_ns",
        (pl.col("span_ns") - pl.col("busy_ns")).alias("idle_ns"),
        pl.col("c").alias("compute_ns"),
        (pl.col("cc") - pl.col("c")).alias("communication_ns"),
        (pl.col("busy_ns") - pl.col("cc")).alias("memory_ns"),
        "communication_total_ns",
        (pl.col("communication_total_ns") - (pl.col("cc") - pl.col("c"))).alias("overlap_ns"),
    ).sort(keys)


def _with_shares(frame: pl.DataFrame) -> pl.DataFrame:
    span = pl.col("span_ns")
    share = {name: pl.when(span > 0).then(pl.col(column) / span).otherwise(None)
             for name, column in (("idle_share", "idle_ns"), ("compute_share", "compute_ns"))}
    return frame.with_columns(**share).with_columns(
        (1.0 - pl.col("idle_share") - pl.col("compute_share")).alias("non_compute_share"))


def breakdown_by_rank(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per rank: BREAKDOWN_COLUMNS and idle / compute / non-compute shares of the span (HTA's three)."""
    if intervals.height == 0:
        return _with_shares(pl.DataFrame(schema={"rank": pl.Int32, **dict.fromkeys(BREAKDOWN_COLUMNS, pl.Int64)}))
    return _with_shares(_breakdown(intervals, ["rank"]))


def breakdown_by_step(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per rank and profiler step (null: launched outside every step): as breakdown_by_rank."""
    if intervals.height == 0:
        return _with_shares(pl.DataFrame(schema={**_GROUP_SCHEMA, **dict.fromkeys(BREAKDOWN_COLUMNS, pl.Int64)}))
    stepped = intervals.with_columns(pl.col("step").fill_null(_NO_STEP))
    frame = _breakdown(stepped, ["rank", "step"])
    return _with_shares(frame.with_columns(pl.when(pl.col("step") == _NO_STEP).then(None)
                                           .otherwise(pl.col("step")).alias("step")))


def read_columns(run: Run, table: str, columns: tuple[str, ...]) -> pl.DataFrame:
    """`columns` of a run's table; a column the run was stored without (runs stored before `step` existed)
    reads as nulls of its canonical type."""
    scan = run.scan(table)
    present = set(scan.collect_schema().names())
    canonical = schema.schema_of(table)
    return scan.select([pl.col(c) if c in present else pl.lit(None, dtype=canonical[c]).alias(c)
                        for c in columns]).collect()


def run_intervals(run: Run) -> pl.DataFrame:
    """classified_intervals of a run's kernels and copies, reading only the columns it needs."""
    kernels = read_columns(run, "kernels", ("rank", "step", "name", "op", "start_ns", "end_ns"))
    memcpy = read_columns(run, "memcpy", ("rank", "step", "start_ns", "end_ns"))
    return classified_intervals(kernels, memcpy)


def gpu_time_breakdown(run: Run) -> pl.DataFrame:
    """Per rank of `run` (a store.Run): span, idle, compute, communication and memory time in ns, shares."""
    return breakdown_by_rank(run_intervals(run))


def breakdown_text(by_rank: pl.DataFrame, max_ranks: int = 4) -> str:
    """`rank 0: compute 17.2% · communication 27.6% · memory 0.0% · idle 55.2%; rank 1: …` (shares of the span)."""
    parts = []
    for row in by_rank.filter(pl.col("span_ns") > 0).head(max_ranks).iter_rows(named=True):
        shares = " · ".join(f"{name} {row[f'{name}_ns'] / row['span_ns']:.1%}"
                            for name in ("compute", "communication", "memory", "idle"))
        parts.append(f"rank {row['rank']}: {shares}")
    more = by_rank.height - max_ranks
    return "; ".join(parts) + (f"; {more} more ranks" if more > 0 else "")


HTA_SCOPE_DEFINITION = (
    "HTA's scope: the GPU work HolisticTraceAnalysis' temporal breakdown counts: launched before the rank's last "
    "ProfilerStep begins (HTA leaves the last, often cut-short, step out) and launched by a CPU call in the "
    "trace; kernels split by HTA's own names (communication = nccl…Kernel; non-compute = that, Memcpy, Memset "
    "and …Sync kernels, copies and memsets)")


def hta_scope(intervals_source: tuple[pl.DataFrame, pl.DataFrame], api_calls: pl.DataFrame,
              ranges: pl.DataFrame) -> pl.DataFrame:
    """rank, step, start_ns, end_ns, kind of the kernels and copies HTA's temporal breakdown counts, split the
    way HTA splits them (kernel_kinds.hta_kernel_kind), so breakdown_by_rank of it gives HTA's numbers.

    HTA keeps GPU work whose launching CPU call starts before the last
    ProfilerStep of the rank begins (the last step is often cut short), and
    drops GPU work with no launch in the trace. Without profiler steps it
    keeps everything, as HTA does.
    """
    kernels, memcpy = intervals_source
    last_step = ranges.filter(pl.col("category") == "profiler_step").group_by("rank").agg(
        pl.col("start_ns").max().alias("last_step_ns"))
    if last_step.height:
        launches = api_calls.drop_nulls("correlation").join(last_step, on="rank").filter(
            pl.col("start_ns") < pl.col("last_step_ns")).select("rank", "correlation").unique()
        kernels, memcpy = (table.join(launches, on=["rank", "correlation"], how="semi") for table in (kernels, memcpy))
    return _intervals([_part(kernels, kernel_kinds.hta_kernel_kind()), _part(memcpy, pl.lit("memory"))])


def hta_breakdown(kernels: pl.DataFrame, memcpy: pl.DataFrame, api_calls: pl.DataFrame,
                  ranges: pl.DataFrame) -> pl.DataFrame:
    """Per rank in HTA's scope (hta_scope): span_ns, idle_ns, compute_ns, non_compute_ns and their shares of the
    span (HTA's kernel_time, idle_time, compute_time, non_compute_time)."""
    by_rank = breakdown_by_rank(hta_scope((kernels, memcpy), api_calls, ranges))
    return by_rank.select("rank", "span_ns", "idle_ns", "compute_ns",
                          (pl.col("span_ns") - pl.col("idle_ns") - pl.col("compute_ns")).alias("non_compute_ns"),
                          "idle_share", "compute_share", "non_compute_share")
