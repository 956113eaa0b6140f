"""Per-rank summaries: small tables that let pages at hundreds of ranks skip the kernel rows.

Computed per rank (on a cluster worker, from one rank's tables) and reduced on
the client by concatenation: every row belongs to exactly one rank, so the run's
summary is the union of the ranks' summaries. Definitions:

- kernels: per rank and kernel name, `count` launches and `total_ns` = sum of
  their durations (end − start), the same sum /kernels shows per rank.
- steps: per rank and profiler step N, `start_ns` / `end_ns` of the step and
  `step_ns` = end − start. The step is the `ProfilerStep#N` range on the CPU
  when the trace has one (what PyTorch calls the step), else the span from the
  first to the last kernel whose launch fell in step N (`source` says which).
- busy: per rank, span / busy / idle of its GPU activity (kernels, memcpy,
  memset), as analysis/gpu_busy.py defines them.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.gpu_busy import activity_intervals, gpu_busy

SUMMARY_NAMES = ("kernels", "steps", "busy")
KERNEL_SUMMARY_SCHEMA = {"rank": pl.Int32, "name": pl.String, "count": pl.Int64, "total_ns": pl.Int64}
STEP_SCHEMA = {"rank": pl.Int32, "step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "step_ns": pl.Int64,
               "source": pl.String}
STEP_DEFINITION = ("step time = length of the ProfilerStep#N range of the rank (else first to last kernel "
                   "launched in step N)")
# What `source` says, in words a page can print beside a step time.
STEP_SOURCES = {"ProfilerStep": "ProfilerStep ranges", "kernels": "kernel spans (the trace has no ProfilerStep range)"}


def kernel_summary(kernels: pl.DataFrame) -> pl.DataFrame:
    """rank, name, count, total_ns: each rank's kernel time per kernel name."""
    if kernels.height == 0:
        return pl.DataFrame(schema=KERNEL_SUMMARY_SCHEMA)
    return kernels.group_by("rank", "name").agg(
        pl.len().cast(pl.Int64).alias("count"),
        (pl.col("end_ns") - pl.col("start_ns")).clip(lower_bound=0).sum().cast(pl.Int64).alias("total_ns"),
    ).with_columns(pl.col("rank").cast(pl.Int32)).sort("rank", "total_ns", descending=[False, True])


def step_times(ranges: pl.DataFrame | None, kernels: pl.DataFrame | None) -> pl.DataFrame:
    """rank, step, start_ns, end_ns, step_ns, source (see the module's definition)."""
    parts: list[pl.DataFrame] = []
    covered = pl.DataFrame(schema={"rank": pl.Int32})
    if ranges is not None and ranges.height:
        marked = ranges.filter(
            pl.col("device").is_null(), pl.col("step").is_not_null(),
            (pl.col("category") == "profiler_step") | pl.col("name").str.starts_with("ProfilerStep#"))
        if marked.height:
            parts.append(step_spans(marked, "ProfilerStep"))
            covered = marked.select(pl.col("rank").cast(pl.Int32)).unique()
    if kernels is not None and kernels.height:
        stepped = kernels.filter(pl.col("step").is_not_null()).with_columns(pl.col("rank").cast(pl.Int32))
        stepped = stepped.join(covered, on="rank", how="anti")  # ranks without a step range
        if stepped.height:
            parts.append(step_spans(stepped, "kernels"))
    if not parts:
        return pl.DataFrame(schema=STEP_SCHEMA)
    return pl.concat(parts).sort("rank", "step")


def step_spans(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    return frame.group_by("rank", "step").agg(pl.col("start_ns").min(), pl.col("end_ns").max()).select(
        pl.col("rank").cast(pl.Int32), pl.col("step").cast(pl.Int64), pl.col("start_ns").cast(pl.Int64),
        pl.col("end_ns").cast(pl.Int64), (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Int64).alias("step_ns"),
        pl.lit(source).alias("source"))


def median_step_ns(steps: pl.DataFrame) -> float | None:
    """The run's step time: per rank the median of its step times (STEP_DEFINITION), then the slowest rank's;
    None without steps. /ranks, /compare, /history and `report` all read this one number."""
    if steps.height == 0:
        return None
    per_rank = steps.group_by("rank").agg(pl.col("step_ns").median())
    return float(per_rank.get_column("step_ns").max())  # type: ignore[arg-type]


def step_source(steps: pl.DataFrame) -> str:
    """Which of STEP_DEFINITION's two the step times are (STEP_SOURCES), or that there are no steps."""
    sources = sorted(set(steps.get_column("source").to_list())) if steps.height else []
    if not sources:
        return "no profiler steps"
    if len(sources) == 1:
        return STEP_SOURCES.get(sources[0], sources[0])
    return "ProfilerStep ranges; kernel spans on the ranks without them"


def busy_summary(kernels: pl.DataFrame | None, memcpy: pl.DataFrame | None) -> pl.DataFrame:
    """rank, span_ns, busy_ns, idle_ns, busy_share (analysis/gpu_busy.py)."""
    tables = [t for t in (kernels, memcpy) if t is not None and t.height]
    return gpu_busy(activity_intervals(*tables))


def rank_summaries(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Every summary of one rank's (or several ranks') canonical tables."""
    kernels, ranges, memcpy = tables.get("kernels"), tables.get("ranges"), tables.get("memcpy")
    return {
        "kernels": kernel_summary(kernels) if kernels is not None else pl.DataFrame(schema=KERNEL_SUMMARY_SCHEMA),
        "steps": step_times(ranges, kernels),
        "busy": busy_summary(kernels, memcpy),
    }


def reduce_summaries(parts: list[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """The run's summaries from the parts' ones (one part per input file).

    Kernel sums and step extents are re-aggregated, so two files claiming one
    rank add up as the single-process ingest would; GPU busy is a union of
    intervals that cannot be rebuilt from two unions, so such a rank keeps one
    row per file (the ingest warns about the shared rank).
    """
    reduced: dict[str, pl.DataFrame] = {}
    for name in SUMMARY_NAMES:
        frames = [part[name] for part in parts if name in part and part[name].height]
        if not frames:
            continue
        merged = pl.concat(frames, how="vertical")
        if name == "kernels":
            merged = merged.group_by("rank", "name").agg(pl.col("count").sum(), pl.col("total_ns").sum()).sort(
                "rank", "total_ns", descending=[False, True])
        elif name == "steps":
            merged = merged.group_by("rank", "step").agg(
                pl.col("start_ns").min(), pl.col("end_ns").max(), pl.col("source").first()).with_columns(
                (pl.col("end_ns") - pl.col("start_ns")).alias("step_ns")).select(list(STEP_SCHEMA)).sort(
                "rank", "step")
        reduced[name] = merged if name != "busy" else merged.sort("rank", maintain_order=True)
    return reduced
