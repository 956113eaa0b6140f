"""Per-run views of kernels and layers, cached by (run, rank, window, ...).

The pages' callbacks call these; each recomputation over a 1 M-kernel run
costs ~100-200 ms, a cache hit nothing, so a selection change (which only
re-styles charts) never recomputes a summary. A `Run` object is reopened
(as a new object) when its run.json changes, so keying on the object itself
drops stale entries naturally.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import gpu_busy as busy_analysis
from dashboard.analysis import kernels as kernel_analysis
from dashboard.analysis import layers as layer_analysis
from dashboard.analysis import summary_views
from dashboard.analysis.kernels import Group, Window
from dashboard.store import Run
from dashboard.views.cache import per_run


@dataclass(frozen=True)
class KernelView:
    summary: pl.DataFrame  # kernel_summary
    spread: pl.DataFrame | None  # rank_spread, when all ranks of a multi-rank run are shown
    pairs: pl.DataFrame  # group key -> kernel key
    gpu_time_ns: int
    launches: int
    source: str = ""  # where the numbers come from when not the kernel rows (summary_views.SUMMARY_SOURCE)


@dataclass(frozen=True)
class LayerView:
    stats: pl.DataFrame
    time_outliers: pl.DataFrame
    rate_outliers: pl.DataFrame
    source: str
    occurrences: int


@per_run(8)
def prepared_kernels(run: Run) -> pl.DataFrame:
    return kernel_analysis.prepare_kernels(run.frame("kernels"))


@per_run(8)
def run_launch_shapes(run: Run) -> pl.DataFrame:
    return kernel_analysis.launch_shapes(prepared_kernels(run))


@per_run(8)
def kernel_layer_codes(run: Run) -> dict[str, int]:
    """layer name -> its `layer_code` in prepared_kernels."""
    codes = prepared_kernels(run).group_by("layer_code").agg(pl.col("layer").first()).drop_nulls("layer")
    return dict(zip(codes.get_column("layer").to_list(), codes.get_column("layer_code").to_list(), strict=True))


@per_run(8)
def kernel_ranks(run: Run) -> tuple[int, ...]:
    stored = summary_views.summary_ranks(run)  # a many-rank run's kernel ranks without reading its kernels
    ranks = set(stored) if stored is not None else set(
        run.scan("kernels").select(pl.col("rank").unique()).collect().get_column("rank").to_list())
    ranks |= set(run.scan("ranges").select(pl.col("rank").unique()).collect().get_column("rank").to_list())
    return tuple(sorted(r for r in ranks if r is not None))


@per_run(64)
def filtered_kernels(run: Run, rank: int | None, window: Window) -> pl.DataFrame:
    return kernel_analysis.filter_kernels(prepared_kernels(run), rank, window)


@per_run(64)
def kernel_view(run: Run, rank: int | None, window: Window, group: Group) -> KernelView:
    if summary_views.reads_summaries(run, rank, window, group):
        return _summary_kernel_view(run, group)
    frame = filtered_kernels(run, rank, window)
    summary = kernel_analysis.kernel_summary(frame, group, run_launch_shapes(run))
    multi_rank = rank is None and len(kernel_ranks(run)) > 1
    spread = stored_spread(run, group, window) if multi_rank else None
    if multi_rank and spread is None:
        spread = kernel_analysis.rank_spread(frame, group)
    # A kernel row is its own group: no need to scan the frame for (group, kernel) pairs.
    pairs = (summary.select("key", pl.col("key").alias("kernel_key")) if group == "name"
             else kernel_analysis.group_kernel_keys(frame, group))
    return KernelView(summary, spread, pairs, kernel_analysis.gpu_time_ns(frame), frame.height)


def _summary_kernel_view(run: Run, group: Group) -> KernelView:
    """The whole-run view of a many-rank run from its per-rank summaries: no kernel row is read."""
    stored = run.summary("kernels")
    assert stored is not None  # summary_views.reads_summaries checked
    summary = summary_views.kernel_summary_from_stored(stored)
    pairs = summary.select("key", pl.col("key").alias("kernel_key"))
    return KernelView(summary, stored_spread(run, group, None), pairs, int(summary.get_column("total_ns").sum() or 0),
                      int(summary.get_column("count").sum() or 0), summary_views.SUMMARY_SOURCE)


def stored_spread(run: Run, group: Group, window: Window) -> pl.DataFrame | None:
    """rank_spread from the per-rank kernel summary a cluster ingest stores (whole run, by name), else None."""
    stored = run.summary("kernels")
    if stored is None or group != "name" or window is not None:
        return None
    return kernel_analysis.rank_spread(stored.select("rank", "name", pl.col("total_ns").alias("time_ns")), group)


@per_run(8)
def gpu_activity_pieces(run: Run) -> pl.DataFrame:
    """The union of each rank's kernel and copy intervals (gpu_busy.merged_intervals), built once per run."""
    # Three integer columns read from the files: /layers may never load the whole kernels table.
    tables = [run.scan(table).select("rank", "start_ns", "end_ns").collect() for table in ("kernels", "memcpy")]
    return busy_analysis.merged_intervals(busy_analysis.activity_intervals(*tables))


@per_run(64)
def gpu_busy_view(run: Run, rank: int | None, window: Window) -> pl.DataFrame:
    """Per rank: span, busy and idle time of the GPU (gpu_busy), kernels and copies counted; a window clips."""
    stored = run.summary("busy") if window is None else None
    if stored is not None:  # computed per rank at a cluster ingest: no kernel rows read
        return stored.filter(pl.col("rank") == rank) if rank is not None else stored
    pieces = gpu_activity_pieces(run)
    if rank is not None:
        pieces = pieces.filter(pl.col("rank") == rank)
    return busy_analysis.busy_from_pieces(pieces, window)


@per_run(8)
def run_layer_samples(run: Run) -> layer_analysis.LayerSamples:
    # Only module ranges are read (pushed down into the parquet scan); an absent
    # table scans as an empty frame with its schema.
    modules = run.scan("ranges").filter(pl.col("category").is_in(layer_analysis.LAYER_CATEGORIES)).collect()
    if modules.height:
        return layer_analysis.layer_occurrences(modules, run.frame("kernels").clear())
    return layer_analysis.layer_occurrences(modules, run.frame("kernels"))


@per_run(64)
def layer_view(run: Run, rank: int | None, window: Window) -> LayerView:
    samples = run_layer_samples(run)
    occurrences = layer_analysis.select_occurrences(samples.occurrences, rank, window)
    stats = layer_analysis.layer_stats(occurrences)
    return LayerView(
        stats=stats,
        time_outliers=layer_analysis.layer_outliers(occurrences, stats, "time"),
        rate_outliers=layer_analysis.layer_outliers(occurrences, stats, "rate"),
        source=samples.source,
        occurrences=occurrences.height,
    )


@per_run(64)
def layer_kernel_view(run: Run, rank: int | None, window: Window, layer: str,
                      pass_: str) -> tuple[pl.DataFrame, str]:
    """The kernel summary of one layer and pass, and how its kernels were attributed."""
    samples = run_layer_samples(run)
    occurrences = layer_analysis.select_occurrences(samples.occurrences, rank, window)
    chosen, how = layer_analysis.layer_kernels(filtered_kernels(run, rank, window), occurrences, layer, pass_,
                                               kernel_layer_codes(run))
    return kernel_analysis.kernel_summary(chosen, "name", run_launch_shapes(run)), how


# The timeline draws every one of them (API calls on their own lanes), and its clock starts at the first.
_TIMED_TABLES = ("kernels", "memcpy", "ranges", "stack", "api_calls")


@per_run(16)
def run_origin_ns(run: Run) -> int:
    """The run's first instant: the earliest start of any kernel, copy, range, stack frame or API call.

    Every page measures window times from here (the timeline's clock starts at
    the same event), so a window reads the same on /kernels, /layers and /timeline.
    """
    firsts = [
        summary_views.partitioned_first_start_ns(run, table)  # footers' statistics, when partitioned
        or run.scan(table).select(pl.col("start_ns").min()).collect().item()
        for table in _TIMED_TABLES
        if run.has(table)
    ]
    found = [first for first in firsts if first is not None]
    return int(min(found)) if found else 0


def clear_caches() -> None:
    """Forget every cached view (tests and benchmarks measure cold paths with it)."""
    for function in (prepared_kernels, run_launch_shapes, kernel_layer_codes, kernel_ranks, filtered_kernels,
                     kernel_view, gpu_activity_pieces, gpu_busy_view, run_layer_samples, layer_view,
                     layer_kernel_view, run_origin_ns):
        function.cache_clear()
