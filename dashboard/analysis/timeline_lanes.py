"""Which rows the timeline has, and which events sit on each: pure polars.

A lane is one horizontal row of the timeline; a track is the lanes of one
thing (a thread's flame is one track of several depth rows), the unit that
is folded or pinned:

- `passes`: forward / backward / optimizer / other bars of one rank: the union of each pass's kernel
  intervals per profiler step (pass_bands);
- `gpu`: one (rank, device, stream): its kernels and copies (copies named by kind);
- `gpu_ranges`: ranges recorded on that stream (GPU annotations, modules);
- `cpu`: one CPU thread's ranges as a flame (profiler steps, NVTX, user annotations,
  ops): one lane per nesting depth up to MAX_SUBLANES, deeper levels share the last;
- `api`: one CPU thread's CUDA runtime / driver calls, under that thread's flame.

Python-function ranges are not lanes: they are call-stack frames and feed the
stack-depth panel (timeline.stack_frames).
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.kernel_names import short_kernel_name

MAX_SUBLANES = 8  # depth rows of one thread's flame; deeper ops share the last row
STACK_CATEGORY = "python_function"
STEP_CATEGORY = "profiler_step"
PASSES = ("forward", "backward", "optimizer", "other")
SECTION_ORDER = {"passes": 0, "gpu": 1, "gpu_ranges": 1, "cpu": 2, "api": 2}
# Within a section, which of a device's / thread's tracks comes first: its stream before its ranges,
# its flame before its API calls.
_SUBKIND = {"gpu_ranges": 1, "api": 1}
# Synchronising CUDA calls (the CPU waits for the GPU): explicit synchronisation, and the blocking
# copy / memset / free calls (no `Async`). nsys names are stored without their `_v3020` suffix.
_SYNC_CALL = r"(?i)synchroni[sz]e|^cu(da)?(mem)?free(host)?$"
_COPY_CALL = r"(?i)^cu(da)?mem(cpy|set)"
_LAUNCH_CALL = r"(?i)launch"
_MEMORY_CALL = r"(?i)^cu(da)?(mem|malloc|free|host)"
API_CLASSES = ("sync", "launch", "memory", "other")

EVENT_SCHEMA = {
    "group": pl.String,
    "rank": pl.Int32,
    "device": pl.Int32,
    "track": pl.Int64,
    "sublane": pl.Int32,
    "kind": pl.String,  # kernel / memcpy / range / step (a profiler step) / api / pass
    "name": pl.String,
    "category": pl.String,  # copy kind, range category, "step N" (or "pass") for a pass band
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "bytes": pl.Int64,
    "flops": pl.Float64,
    "depth": pl.Int32,  # a range's nesting depth as stored (its lane caps it at MAX_SUBLANES - 1)
    "correlation": pl.Int64,  # kernels, copies, API calls: what links a launch to what it launched
}
LANE_KEY = ["group", "rank", "device", "track", "sublane"]


def copy_name(kind: pl.Expr) -> pl.Expr:
    """'memcpy HtoD', 'memset', or 'memcpy' when the kind is unknown."""
    return (pl.when(kind.str.to_lowercase() == "memset").then(pl.lit("memset"))
            .otherwise(pl.concat_str(pl.lit("memcpy "), kind).fill_null("memcpy")))


def display_name(name: str, kind: str = "kernel", limit: int = 72) -> str:
    """A legible label: a kernel's short name by the app's one naming rule (`analysis.kernel_names`), other
    names only cut to `limit`.

    `void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(int, ...)`
    becomes `vectorized_elementwise_kernel‹CUDAFunctor_add›`.
    """
    if kind == "kernel":
        return short_kernel_name(name, limit)
    text = name.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _typed(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.select([pl.col(name).cast(dtype) for name, dtype in EVENT_SCHEMA.items()])


def _steps_of(frame: pl.DataFrame) -> pl.Expr:
    # Runs stored before the `step` column existed have none: every band is then out of steps.
    return pl.col("step") if "step" in frame.columns else pl.lit(None, pl.Int64).alias("step")


def pass_bands(ranges: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """Pass bars: rank, step, pass, pass_annotation, start_ns, end_ns, kernels.

    The bars of a pass are the union of its kernels' intervals, per rank and
    profiler step (the step a kernel was launched in: its `step`; null
    outside steps) and, for pass `other`, per trainer annotation it ran under
    (`sparse_data_dist`): where the GPU ran that pass, never one envelope from
    its first kernel to its last, so a pass interrupted by another (an
    optimizer's zero_grad at the start of a step, its step at the end) is
    several bars and never paints over the pass between. `kernels` counts the
    kernels of a bar. Pass-tagged kernels are used, else ranges when no kernel
    carries a pass: the GPU is what the bars describe. Unattributed events
    make no bar.
    """
    columns = ["rank", "step", "pass", "pass_annotation", "start_ns", "end_ns", "kernels"]

    def tagged(frame: pl.DataFrame) -> pl.LazyFrame:
        annotation = pl.col("pass_annotation") if "pass_annotation" in frame.columns else pl.lit(None, pl.String)
        return frame.lazy().select("rank", _steps_of(frame), "pass", annotation.alias("pass_annotation"),
                                   "start_ns", "end_ns").filter(pl.col("pass").is_in(PASSES))

    source = tagged(kernels)
    if source.select(pl.len()).collect().item() == 0:
        source = tagged(ranges)
    keys = ["rank", "_step", "pass", "_annotation"]
    reach = pl.col("end_ns").cum_max().shift(1).over(keys)
    bars = (
        source.with_columns(pl.col("rank").fill_null(0), pl.col("step").fill_null(-1).alias("_step"),
                            pl.col("pass_annotation").fill_null("").alias("_annotation"))
        .drop_nulls(["start_ns", "end_ns"])
        .sort([*keys, "start_ns"])
        .with_columns((reach.is_null() | (pl.col("start_ns") > reach)).cum_sum().over(keys).alias("_bar"))
        .group_by([*keys, "_bar"])
        .agg(pl.col("step").first(), pl.col("pass_annotation").first(), pl.col("start_ns").min(),
             pl.col("end_ns").max(), pl.len().cast(pl.Int64).alias("kernels"))
    )
    return bars.select(columns).sort("rank", "start_ns", "pass").collect()


def api_class(name: pl.Expr) -> pl.Expr:
    """sync / launch / memory / other of a CUDA API call by its name: what the CPU does in it.

    sync: the CPU waits for the GPU (cuda*Synchronize, a blocking cudaMemcpy / cudaMemset without
    `Async`, cudaFree); launch: a kernel launch; memory: allocation and asynchronous copies.
    """
    blocking_copy = name.str.contains(_COPY_CALL) & ~name.str.to_lowercase().str.contains("async", literal=True)
    return (pl.when(name.str.contains(_SYNC_CALL) | blocking_copy).then(pl.lit("sync"))
            .when(name.str.contains(_LAUNCH_CALL)).then(pl.lit("launch"))
            .when(name.str.contains(_MEMORY_CALL)).then(pl.lit("memory"))
            .otherwise(pl.lit("other")))


def is_step(category: pl.Expr, name: pl.Expr) -> pl.Expr:
    """A profiler step (ProfilerStep#N): its own palette, never a range colour."""
    return (category.fill_null("") == STEP_CATEGORY) | name.fill_null("").str.starts_with("ProfilerStep#")


def lane_events(kernels: pl.DataFrame, memcpy: pl.DataFrame, ranges: pl.DataFrame,
                api_calls: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every drawable event with its lane key (group, rank, device, track, sublane)."""
    null_str, null_i64, null_f64 = pl.lit(None, pl.String), pl.lit(None, pl.Int64), pl.lit(None, pl.Float64)
    null_i32 = pl.lit(None, pl.Int32)
    gpu_kernels = kernels.lazy().select(
        pl.lit("gpu").alias("group"), "rank", "device", pl.col("stream").alias("track"),
        pl.lit(0).alias("sublane"), pl.lit("kernel").alias("kind"), "name", null_str.alias("category"),
        # Bytes a kernel moves where the source estimates them (tinygrad): its GB/s on the hover.
        "start_ns", "end_ns", pl.col("bytes") if "bytes" in kernels.columns else null_i64.alias("bytes"), "flops",
        null_i32.alias("depth"), "correlation")
    gpu_copies = memcpy.lazy().select(
        pl.lit("gpu").alias("group"), "rank", "device", pl.col("stream").alias("track"),
        pl.lit(0).alias("sublane"), pl.lit("memcpy").alias("kind"), copy_name(pl.col("kind")).alias("name"),
        pl.col("kind").alias("category"), "start_ns", "end_ns", "bytes", null_f64.alias("flops"),
        null_i32.alias("depth"), "correlation")
    depth = pl.col("depth").fill_null(0)
    lane_of_range = ["rank", "device", "track"]
    range_events = (
        ranges.lazy()
        .filter(pl.col("category").fill_null("") != STACK_CATEGORY)
        .with_columns(pl.col("thread").alias("track"), pl.col("rank").fill_null(0))
        .with_columns((depth - depth.min().over(lane_of_range)).alias("relative_depth"))
        .select(
            pl.when(pl.col("device").is_null()).then(pl.lit("cpu")).otherwise(pl.lit("gpu_ranges")).alias("group"),
            "rank", "device", "track",
            pl.min_horizontal(pl.col("relative_depth"), pl.lit(MAX_SUBLANES - 1)).alias("sublane"),
            pl.when(is_step(pl.col("category"), pl.col("name"))).then(pl.lit("step")).otherwise(pl.lit("range"))
            .alias("kind"), pl.col("name").fill_null("(unnamed)"), "category",
            "start_ns", "end_ns", null_i64.alias("bytes"), "flops", "depth", null_i64.alias("correlation"))
    )
    bands = pass_bands(ranges, kernels).lazy().select(
        pl.lit("passes").alias("group"), "rank", pl.lit(None, pl.Int32).alias("device"),
        null_i64.alias("track"), pl.lit(0).alias("sublane"), pl.lit("pass").alias("kind"),
        pl.col("pass").alias("name"),
        # The step, and for pass `other` the trainer's annotation it ran under (`step 3 · sparse_data_dist`).
        pl.concat_str(
            pl.when(pl.col("step").is_not_null()).then(pl.format("step {}", pl.col("step"))).otherwise(pl.lit("pass")),
            pl.when(pl.col("pass_annotation").is_not_null()).then(pl.format(" · {}", pl.col("pass_annotation")))
            .otherwise(pl.lit(""))).alias("category"), "start_ns", "end_ns",
        null_i64.alias("bytes"), null_f64.alias("flops"), null_i32.alias("depth"), null_i64.alias("correlation"))
    parts = [gpu_kernels, gpu_copies, range_events, bands]
    if api_calls is not None and api_calls.height:
        parts.append(api_calls.lazy().select(
            pl.lit("api").alias("group"), "rank", pl.lit(None, pl.Int32).alias("device"),
            pl.col("thread").alias("track"), pl.lit(0).alias("sublane"), pl.lit("api").alias("kind"),
            pl.col("name").fill_null("(unnamed)"), "category", "start_ns", "end_ns", null_i64.alias("bytes"),
            null_f64.alias("flops"), null_i32.alias("depth"), "correlation"))
    events = pl.concat([_typed(frame) for frame in parts])
    return (events.with_columns(pl.col("rank").fill_null(0))
            .filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
            .collect())


def lane_table(events: pl.DataFrame) -> pl.DataFrame:
    """One row per lane, in display order, with its id (`lane`, 0 at the top), label and track.

    `track_id` names the lanes of one thing (a stream, a thread's flame, its API calls) in the URL
    (`pin`, `fold`); `track_label` is that thing's name.
    """
    lanes = events.select(LANE_KEY).unique()
    multi_rank = lanes.get_column("rank").n_unique() > 1
    rank_prefix = pl.format("r{} · ", pl.col("rank")) if multi_rank else pl.lit("")
    stream = pl.format("GPU{} s{}", pl.col("device"), pl.col("track"))
    name = (
        pl.when(pl.col("group") == "passes").then(pl.lit("passes"))
        .when(pl.col("group") == "gpu").then(stream)
        .when(pl.col("group") == "gpu_ranges").then(pl.concat_str(stream, pl.lit(" ranges")))
        .when(pl.col("group") == "api").then(pl.format("CUDA API {}", pl.col("track")))
        .otherwise(pl.format("CPU {}", pl.col("track")))
    )
    track_label = pl.concat_str(rank_prefix, name)
    # Deeper sub-lanes of one thread are labelled by depth only, under their thread's first lane.
    last_depth = pl.col("sublane") == MAX_SUBLANES - 1
    label = (pl.when((pl.col("sublane") > 0) & last_depth).then(pl.format("  depth {}+", pl.col("sublane")))
             .when(pl.col("sublane") > 0).then(pl.format("  depth {}", pl.col("sublane")))
             .otherwise(track_label))
    part = [pl.col(c).cast(pl.String).fill_null("?") for c in ("rank", "device", "track")]
    track_id = (
        pl.when(pl.col("group") == "passes").then(pl.concat_str(pl.lit("passes-"), part[0]))
        .when(pl.col("group").is_in(["cpu", "api"])).then(pl.concat_str(pl.col("group"), pl.lit("-"), part[0],
                                                                         pl.lit("-"), part[2]))
        .otherwise(pl.concat_str(pl.col("group").str.replace("_", "", literal=True), pl.lit("-"), part[0],
                                 pl.lit("-"), part[1], pl.lit("-"), part[2]))
    )
    return (
        lanes.with_columns(
            pl.col("group").replace_strict(SECTION_ORDER, return_dtype=pl.Int8).alias("section"),
            pl.col("group").replace_strict(_SUBKIND, default=0, return_dtype=pl.Int8).alias("subkind"))
        .sort("rank", "section", "device", "track", "subkind", "sublane", nulls_last=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("lane"), label.alias("label"),
                      track_id.alias("track_id"), track_label.alias("track_label"))
        .drop("section", "subkind")
    )
