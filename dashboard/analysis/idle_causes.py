"""Why the GPU sat idle: every idle nanosecond of a rank, with one cause, from what the host was doing.

A gap is the time between two consecutive pieces of the union of a rank's
kernels and copies (gpu_busy.merged_intervals), so gap lengths add up to the
breakdown's idle time. The work that ends a gap was launched by a CPU call
that returned at `ready` (the latest launch among the activities starting
there). Until then the GPU waited for the host: each nanosecond of
[gap start, min(gap end, ready)) takes the first of these that holds on the
rank's launching threads (the CPU threads whose API calls launched GPU work):

1. ``data loading``: inside a data-loading range (a DataLoader `__next__`,
   `## load_batch ##`, `wait_for_batch`, an input-pipeline op: DATA_PATTERN).
2. ``communication wait``: inside a collective or barrier op on the host
   (`nccl:*`, `c10d::*`, `record_param_comms`, `gloo:*`, barriers, waits).
3. ``synchronisation``: inside a blocking call (cudaDeviceSynchronize,
   cudaStreamSynchronize, cudaEventSynchronize, a synchronous cudaMemcpy,
   `aten::item` / `aten::_local_scalar_dense`); or anywhere in a gap that a
   blocking call ends inside, or that starts where a device-to-host copy ends
   (`.item()`, `.cpu()`): the CPU waited for the GPU to drain, then had to
   issue new work from an empty queue.
4. ``outside steps``: the run has profiler steps and none of this rank's
   ProfilerStep ranges covers the nanosecond (evaluation, logging, set-up).
5. ``launch-bound``: inside a top-level CPU op that launches GPU work, a launch
   call, or between two of them less than BACK_TO_BACK_NS apart: the host is
   launching back to back and the GPU outruns it.
6. ``CPU-bound``: inside a profiler step or a CPU range, with no launch:
   the host runs Python or CPU ops that give the GPU nothing.
7. ``unknown``: nothing on the host explains it (no range, no step, no call).

From `ready` to the gap's end the work was already launched: that stretch is
``launch-bound`` when the launch came inside the gap and the work started
within LAUNCH_LATENCY_NS of it (the launch's own latency on an idle GPU), and
``unknown`` otherwise (work launched before the gap, or held back longer: a
wait on another stream or an event, or events missing from the trace).

One cause per nanosecond: the causes of a rank add up to its idle time
exactly. Everything is one sorted sweep per rank over the boundaries of the
gaps and the host's intervals (no loop per gap).
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.gpu_busy import merged_intervals

DATA_LOADING, COMMUNICATION_WAIT, SYNCHRONISATION = "data loading", "communication wait", "synchronisation"
OUTSIDE_STEPS, LAUNCH_BOUND, CPU_BOUND, UNKNOWN = "outside steps", "launch-bound", "CPU-bound", "unknown"
CAUSES = (DATA_LOADING, SYNCHRONISATION, LAUNCH_BOUND, CPU_BOUND, COMMUNICATION_WAIT, OUTSIDE_STEPS, UNKNOWN)

SYNC_CALL_PATTERN = (r"^(cuda|cu)(Device|Stream|Event|Ctx)Synchroni[sz]e|^cudaMemcpy(2D|3D)?$|^cudaMemcpy(To|From)"
                     r"Symbol$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$")
SYNC_OP_PATTERN = r"^aten::(item|_local_scalar_dense)$|^cuda(Device|Stream|Event)Synchroni[sz]e$"
DATA_PATTERN = (r"(?i)dataloader|load_?batch|wait_?for_?batch|next_?batch|get_?batch|data_?load|input_?pipeline"
                r"|prefetch_?batch")
COMMUNICATION_WAIT_PATTERN = r"^(?:nccl:|c10d::|record_param_comms|gloo:)|(?i:barrier)|ProcessGroup\w*::wait"
BACK_TO_BACK_NS = 50_000  # launches (or launching ops) closer than 50 µs: the host is launching back to back
LAUNCH_LATENCY_NS = 50_000  # work starting within 50 µs of its launch on an idle GPU: the launch's own latency
CAUSE_DEFINITION = (
    "each idle ns of a rank gets one cause, from its launching CPU threads until the work ending the gap was "
    "launched: data loading (DataLoader __next__, load_batch…) > communication wait (collective / barrier op) > "
    "synchronisation (a blocking call, or a gap a blocking call or DtoH copy opened) > outside steps > "
    "launch-bound (launching ops back to back, < 50 µs apart) > CPU-bound (in a step or op, no launch) > unknown; "
    "after the launch: launch-bound when the work starts within 50 µs of it, else unknown")

_LABELS = ("data", "comm", "sync", "launch", "cpu", "step", "gap")
_GAP_SCHEMA = {"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "gap_ns": pl.Int64,
               "ready_ns": pl.Int64, "opened_by_sync": pl.Boolean, "next_correlation": pl.Int64}
_PART_SCHEMA = {"rank": pl.Int32, "gap_start_ns": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "cause": pl.String}
_INTERVALS = {"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "label": pl.String}
_ASOF = {"by": "rank", "strategy": "backward", "check_sortedness": False}  # sorted within each rank


def gaps(pieces: pl.DataFrame) -> pl.DataFrame:
    """rank, start_ns, end_ns, gap_ns of every gap between consecutive union pieces of a rank."""
    ordered = pieces.sort("rank", "start_ns")
    return ordered.select(
        pl.col("rank").cast(pl.Int32), pl.col("end_ns").alias("start_ns"),
        pl.col("start_ns").shift(-1).over("rank").alias("end_ns"),
    ).drop_nulls("end_ns").with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("gap_ns")).filter(
        pl.col("gap_ns") > 0)


def _activity(kernels: pl.DataFrame, memcpy: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([frame.select(pl.col("rank").cast(pl.Int32), pl.col("start_ns").cast(pl.Int64),
                                   pl.col("correlation").cast(pl.Int64)) for frame in (kernels, memcpy)])


def _launches(activity: pl.DataFrame, api_calls: pl.DataFrame) -> pl.DataFrame:
    """rank, thread, start_ns, end_ns of every API call that launched a kernel or copy in the tables."""
    linked = activity.drop_nulls("correlation").select("rank", "correlation").unique()
    return api_calls.select(pl.col("rank").cast(pl.Int32), "thread", "correlation", "start_ns", "end_ns").join(
        linked, on=["rank", "correlation"], how="semi").drop("correlation")


def _gap_table(found: pl.DataFrame, activity: pl.DataFrame, api_calls: pl.DataFrame,
               memcpy: pl.DataFrame, sync: pl.DataFrame) -> pl.DataFrame:
    """The gaps with `ready_ns` (launch end of the work ending them), `opened_by_sync` and next_correlation."""
    calls = api_calls.select(pl.col("rank").cast(pl.Int32), "correlation", pl.col("end_ns").alias("launch_end_ns"))
    calls = calls.drop_nulls("correlation").unique(["rank", "correlation"], keep="first")
    ending = activity.join(calls, on=["rank", "correlation"], how="left").group_by("rank", "start_ns").agg(
        pl.col("launch_end_ns").max().alias("ready_ns"), pl.col("correlation").first().alias("next_correlation"))
    found = found.join(ending.rename({"start_ns": "end_ns"}), on=["rank", "end_ns"], how="left")
    sync_ends = sync.select("rank", pl.col("end_ns").alias("sync_end_ns"))
    dtoh_ends = memcpy.filter(pl.col("kind") == "DtoH").select(pl.col("rank").cast(pl.Int32),
                                                                pl.col("end_ns").alias("dtoh_end_ns"))
    found = found.sort("end_ns").join_asof(sync_ends.sort("sync_end_ns"), left_on="end_ns", right_on="sync_end_ns",
                                           **_ASOF)
    found = found.sort("start_ns").join_asof(dtoh_ends.sort("dtoh_end_ns"), left_on="start_ns",
                                             right_on="dtoh_end_ns", **_ASOF)
    opened = ((pl.col("sync_end_ns") >= pl.col("start_ns")) | (pl.col("dtoh_end_ns") == pl.col("start_ns")))
    return found.with_columns(opened.fill_null(False).alias("opened_by_sync")).select(list(_GAP_SCHEMA)).cast(
        _GAP_SCHEMA).sort("rank", "start_ns")


def _labelled(frame: pl.DataFrame, label: str) -> pl.DataFrame:
    return frame.select(pl.col("rank").cast(pl.Int32), pl.col("start_ns").cast(pl.Int64),
                        pl.col("end_ns").cast(pl.Int64), pl.lit(label).alias("label"))


def _union(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The union of frame's intervals per `keys`, as disjoint pieces (keys, start_ns, end_ns).

    Each key group becomes one integer id, so gpu_busy.merged_intervals (one sort for every group at once)
    does the work."""
    if frame.height == 0:
        return frame.select(*keys, "start_ns", "end_ns")
    ids = frame.select(keys).unique().with_row_index("_group").with_columns(pl.col("_group").cast(pl.Int32))
    grouped = frame.join(ids, on=keys).select(pl.col("_group").alias("rank"), "start_ns", "end_ns")
    pieces = merged_intervals(grouped).rename({"rank": "_group"})
    return pieces.join(ids, on="_group").select(*keys, "start_ns", "end_ns")


def _launching_stretches(ranges: pl.DataFrame, launches: pl.DataFrame) -> pl.DataFrame:
    """Launch-bound intervals: top-level CPU ops with a launch in them, launch calls, and the stretches
    between them shorter than BACK_TO_BACK_NS, per thread."""
    keys = ["rank", "thread"]
    if launches.height == 0:
        return launches.select(*keys, "start_ns", "end_ns")
    ops = _union(ranges.filter(pl.col("category") == "cpu_op").select(
        pl.col("rank").cast(pl.Int32), "thread", "start_ns", "end_ns"), keys)
    marks = launches.select(*keys, pl.col("start_ns").alias("launch_ns")).sort("launch_ns")
    ops = ops.sort("start_ns").join_asof(marks, left_on="start_ns", right_on="launch_ns", by=keys,
                                         strategy="forward", check_sortedness=False)
    has_launch = pl.col("launch_ns").is_not_null() & (pl.col("launch_ns") < pl.col("end_ns"))
    launching = pl.concat([ops.filter(has_launch).select(*keys, "start_ns", "end_ns"),
                           launches.select(*keys, "start_ns", "end_ns")])
    pieces = _union(launching, keys).sort([*keys, "start_ns"])
    bridges = pieces.select(*keys, pl.col("end_ns").alias("start_ns"),
                            pl.col("start_ns").shift(-1).over(keys).alias("end_ns")).filter(
        (pl.col("end_ns") - pl.col("start_ns")).is_between(0, BACK_TO_BACK_NS))
    return pl.concat([pieces, bridges])


def _host_intervals(ranges: pl.DataFrame, api_calls: pl.DataFrame, launches: pl.DataFrame,
                    sync: pl.DataFrame) -> pl.DataFrame:
    """Labelled host intervals on the launching threads (every CPU thread of a rank that launched nothing)."""
    cpu = ranges.filter(pl.col("device").is_null()).with_columns(pl.col("rank").cast(pl.Int32))
    threads = launches.select("rank", "thread").unique()
    cpu = pl.concat([cpu.join(threads, on=["rank", "thread"], how="semi"),
                     cpu.join(threads.select("rank").unique(), on="rank", how="anti")])
    name = pl.col("name").fill_null("")
    launch_bound = _launching_stretches(cpu, launches)
    steps = cpu.filter(pl.col("category") == "profiler_step")
    # Inside a step, time no launch claims is CPU-bound anyway: a rank's other ranges only tell CPU-bound from
    # unknown where the rank has no steps (and leaving them out spares the sweep most of its marks).
    unstepped = cpu.filter(pl.col("category") != "profiler_step").join(steps.select("rank").unique(), on="rank",
                                                                        how="anti")
    parts = [
        _labelled(cpu.filter(name.str.contains(DATA_PATTERN)), "data"),
        _labelled(cpu.filter(name.str.contains(COMMUNICATION_WAIT_PATTERN)), "comm"),
        _labelled(sync.join(threads, on=["rank", "thread"], how="semi"), "sync"),
        _labelled(steps, "step"),
        _labelled(launch_bound, "launch"),
        _labelled(unstepped, "cpu"),
    ]
    return pl.concat(parts).filter(pl.col("end_ns") > pl.col("start_ns"))


def _sync_intervals(api_calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """rank, thread, start_ns, end_ns of the blocking calls and ops."""
    calls = api_calls.filter(pl.col("name").fill_null("").str.contains(SYNC_CALL_PATTERN))
    ops = ranges.filter(pl.col("device").is_null(), pl.col("name").fill_null("").str.contains(SYNC_OP_PATTERN))
    return pl.concat([frame.select(pl.col("rank").cast(pl.Int32), pl.col("thread").cast(pl.Int64),
                                   pl.col("start_ns").cast(pl.Int64), pl.col("end_ns").cast(pl.Int64))
                      for frame in (calls, ops)])


def _sweep(waiting: pl.DataFrame, host: pl.DataFrame) -> pl.DataFrame:
    """Elementary segments of each rank where the gap label is on: start_ns, end_ns and a count per label."""
    marks = pl.concat([waiting, host]).select(
        "rank", "label", pl.concat_list(pl.col("start_ns"), pl.col("end_ns")).alias("t"),
        pl.lit([1, -1], pl.List(pl.Int32)).alias("delta")).explode("t", "delta")
    counts = [pl.when(pl.col("label") == label).then(pl.col("delta")).otherwise(0).alias(label) for label in _LABELS]
    # No group-by on time: after sorting, the stretch from one mark to the next carries the counts after the
    # mark; marks at one time make zero-length stretches (dropped), and the last of them holds the right counts.
    # Every interval opens and closes within its rank, so the counts are back at zero where a rank ends: one
    # running sum over all ranks (no window per rank) gives each rank's counts.
    ordered = marks.select("rank", "t", *counts).sort("rank", "t")
    same_rank = pl.col("rank").shift(-1) == pl.col("rank")
    return ordered.with_columns(pl.col(_LABELS).cum_sum(),
                                pl.when(same_rank).then(pl.col("t").shift(-1)).alias("end_ns")).filter(
        pl.col("gap") > 0, pl.col("end_ns") > pl.col("t")).rename({"t": "start_ns"})


def idle_parts(kernels: pl.DataFrame, memcpy: pl.DataFrame, api_calls: pl.DataFrame, ranges: pl.DataFrame,
               pieces: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(gaps, parts): every gap (_GAP_SCHEMA), and the disjoint parts of the gaps, each with one cause
    (rank, gap_start_ns, start_ns, end_ns, cause), covering every gap exactly."""
    found = gaps(pieces)
    if found.height == 0:
        return pl.DataFrame(schema=_GAP_SCHEMA), pl.DataFrame(schema=_PART_SCHEMA)
    activity = _activity(kernels, memcpy)
    sync = _sync_intervals(api_calls, ranges)
    table = _gap_table(found, activity, api_calls, memcpy, sync)
    launches = _launches(activity, api_calls)
    host = _host_intervals(ranges, api_calls, launches, sync)
    # The host part of a gap: until the work ending it was launched (all of it when the launch is unknown).
    until = pl.min_horizontal("end_ns", pl.col("ready_ns").fill_null(pl.col("end_ns")))
    waiting = table.select("rank", "start_ns", until.alias("end_ns")).filter(pl.col("end_ns") > pl.col("start_ns"))
    segments = _sweep(_labelled(waiting, "gap"), host)
    segments = segments.sort("start_ns").join_asof(
        table.select("rank", pl.col("start_ns").alias("gap_start_ns"), "opened_by_sync").sort("gap_start_ns"),
        left_on="start_ns", right_on="gap_start_ns", **_ASOF)
    stepped = host.filter(pl.col("label") == "step").select("rank").unique().with_columns(
        pl.lit(True).alias("has_steps"))
    segments = segments.join(stepped, on="rank", how="left").with_columns(pl.col("has_steps").fill_null(False))
    cause = (pl.when(pl.col("data") > 0).then(pl.lit(DATA_LOADING))
             .when(pl.col("comm") > 0).then(pl.lit(COMMUNICATION_WAIT))
             .when((pl.col("sync") > 0) | pl.col("opened_by_sync")).then(pl.lit(SYNCHRONISATION))
             .when(pl.col("has_steps") & (pl.col("step") <= 0)).then(pl.lit(OUTSIDE_STEPS))
             .when(pl.col("launch") > 0).then(pl.lit(LAUNCH_BOUND))
             .when((pl.col("cpu") > 0) | (pl.col("step") > 0)).then(pl.lit(CPU_BOUND))
             .otherwise(pl.lit(UNKNOWN)))
    host_parts = segments.select("rank", "gap_start_ns", "start_ns", "end_ns", cause.alias("cause"))
    # After the launch: the launch's latency, or work held back (unknown).
    launched = table.filter(pl.col("ready_ns").is_not_null(), pl.col("ready_ns") < pl.col("end_ns"))
    queued = launched.select(
        "rank", pl.col("start_ns").alias("gap_start_ns"), pl.max_horizontal("start_ns", "ready_ns").alias("start_ns"),
        "end_ns",
        pl.when((pl.col("ready_ns") >= pl.col("start_ns"))
                & (pl.col("end_ns") - pl.col("ready_ns") <= LAUNCH_LATENCY_NS))
        .then(pl.lit(LAUNCH_BOUND)).otherwise(pl.lit(UNKNOWN)).alias("cause"))
    parts = pl.concat([host_parts.cast(_PART_SCHEMA), queued.cast(_PART_SCHEMA)]).sort("rank", "start_ns")
    return table, parts


def idle_by_cause(parts: pl.DataFrame) -> pl.DataFrame:
    """Per rank and cause: gaps (that have some of it) and idle_ns (every cause listed, 0 where none)."""
    ranks = parts.select(pl.col("rank").unique())
    grid = ranks.join(pl.DataFrame({"cause": list(CAUSES)}), how="cross")
    sums = parts.group_by("rank", "cause").agg(pl.col("gap_start_ns").n_unique().cast(pl.Int64).alias("gaps"),
                                               (pl.col("end_ns") - pl.col("start_ns")).sum().alias("idle_ns"))
    return grid.join(sums, on=["rank", "cause"], how="left").fill_null(0).sort(
        "rank", pl.col("cause").replace_strict(list(CAUSES), list(range(len(CAUSES)))))


def gap_causes(parts: pl.DataFrame) -> pl.DataFrame:
    """Per gap (rank, gap_start_ns): its main cause (most ns) and ns per cause, for the longest-gap links."""
    per = parts.group_by("rank", "gap_start_ns", "cause").agg((pl.col("end_ns") - pl.col("start_ns")).sum()
                                                               .alias("ns"))
    return per.sort("ns", descending=True).group_by("rank", "gap_start_ns").agg(
        pl.col("cause").first().alias("cause"), pl.col("ns").sum().alias("gap_ns"))


def data_loading_ranges(ranges: pl.DataFrame) -> pl.DataFrame:
    """Per rank and name, the host's data-loading ranges (DATA_PATTERN): calls, time_ns, longest_ns."""
    found = ranges.filter(pl.col("device").is_null(), pl.col("name").fill_null("").str.contains(DATA_PATTERN))
    duration = pl.col("end_ns") - pl.col("start_ns")
    return found.group_by(pl.col("rank").cast(pl.Int32), "name").agg(
        pl.len().cast(pl.Int64).alias("calls"), duration.sum().alias("time_ns"), duration.max().alias("longest_ns"),
    ).sort("rank", "time_ns", descending=[False, True])
