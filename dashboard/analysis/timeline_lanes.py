"""Which rows the timeline has, and which events sit on each: pure polars.

A lane is one horizontal row of the timeline:

- `passes`: forward / backward / optimizer bands of one rank, one per pass per profiler step;
- `gpu`: one (rank, device, stream): its kernels and copies (copies named by kind);
- `gpu_ranges`: ranges recorded on that stream (GPU annotations, modules);
- `cpu`: one CPU thread's ranges (profiler steps, NVTX, ops, modules), one lane
  per nesting depth up to MAX_SUBLANES, deeper levels share the last one.

Python-function ranges are not lanes: they are call-stack frames and feed the
stack-depth panel (timeline.stack_frames).
"""

from __future__ import annotations

import re

import polars as pl

MAX_SUBLANES = 3
STACK_CATEGORY = "python_function"
PASSES = ("forward", "backward", "optimizer")
SECTION_ORDER = {"passes": 0, "gpu": 1, "gpu_ranges": 1, "cpu": 2}

EVENT_SCHEMA = {
    "group": pl.String,
    "rank": pl.Int32,
    "device": pl.Int32,
    "track": pl.Int64,
    "sublane": pl.Int32,
    "kind": pl.String,  # kernel / memcpy / range / pass
    "name": pl.String,
    "category": pl.String,  # copy kind, range category, "step N" (or "pass") for a pass band
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "bytes": pl.Int64,
    "flops": pl.Float64,
}
LANE_KEY = ["group", "rank", "device", "track", "sublane"]


def copy_name(kind: pl.Expr) -> pl.Expr:
    """'memcpy HtoD', 'memset', or 'memcpy' when the kind is unknown."""
    return (pl.when(kind.str.to_lowercase() == "memset").then(pl.lit("memset"))
            .otherwise(pl.concat_str(pl.lit("memcpy "), kind).fill_null("memcpy")))


# Generic kernels whose functor (in the template arguments) is what tells them apart.
_GENERIC_KERNELS = ("elementwise_kernel", "reduce_kernel", "multi_tensor_apply_kernel")
_WORD = re.compile(r"\w++")


def _without_brackets(text: str, opening: str, closing: str) -> str:
    """`text` without its balanced `opening...closing` groups (nested ones included); stray ones stay.

    One pass with a stack: removing innermost groups until nothing changes took a pass per nesting level,
    quadratic on a name nested thousands deep.
    """
    kept: list[str] = []
    opened: list[int] = []  # where in `kept` each still-open bracket stands
    for char in text:
        if char == opening:
            opened.append(len(kept))
        elif char == closing and opened:
            del kept[opened.pop():]
            continue
        kept.append(char)
    return "".join(kept)


def _functor(name: str) -> str | None:
    r"""The first word naming a functor (`...Functor...`, `...functor...`, or up to `...KernelImpl`).

    Word by word in Python: the regex `\w*Functor\w*` rescanned a long word from each of its characters.
    """
    for match in _WORD.finditer(name):
        word = match.group()
        if "Functor" in word or "functor" in word:
            return word
        impl = word.rfind("KernelImpl")
        if impl >= 1:
            return word[: impl + len("KernelImpl")]
    return None


def display_name(name: str, kind: str = "kernel", limit: int = 72) -> str:
    """A legible label: kernels lose `void`, namespaces, template arguments and parameters.

    `void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(int, ...)`
    becomes `vectorized_elementwise_kernel[CUDAFunctor_add]`; other names are only cut to `limit`.
    """
    text = name.strip()
    if kind == "kernel":
        text = text.removeprefix("void ").replace("(anonymous namespace)::", "")
        text = _without_brackets(_without_brackets(text, "<", ">"), "(", ")")
        text = text.split("::")[-1].strip() or name
        functor = _functor(name) if text.endswith(_GENERIC_KERNELS) else None
        if functor:
            text = f"{text}[{functor}]"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _typed(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.select([pl.col(name).cast(dtype) for name, dtype in EVENT_SCHEMA.items()])


def _steps_of(frame: pl.DataFrame) -> pl.Expr:
    # Runs stored before the `step` column existed have none: every band is then out of steps.
    return pl.col("step") if "step" in frame.columns else pl.lit(None, pl.Int64).alias("step")


def pass_bands(ranges: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """Forward / backward / optimizer bands: rank, step, pass, start_ns, end_ns.

    One band per pass per profiler step per rank, from the first start to
    the last end of that pass's kernels in that step (the step a kernel was
    launched in: its `step`). Kernels outside every step form one band per
    maximal run of one pass (per rank, in start order). Pass-tagged kernels
    are used, else ranges when no kernel carries a pass: the GPU is what the
    bands describe. Unattributed events make no band.
    """
    columns = ["rank", "step", "pass", "start_ns", "end_ns"]
    source = kernels.lazy().select("rank", _steps_of(kernels), "pass", "start_ns", "end_ns").filter(
        pl.col("pass").is_in(PASSES))
    if source.select(pl.len()).collect().item() == 0:
        source = ranges.lazy().select("rank", _steps_of(ranges), "pass", "start_ns", "end_ns").filter(
            pl.col("pass").is_in(PASSES))
    source = source.with_columns(pl.col("rank").fill_null(0)).drop_nulls(["start_ns", "end_ns"])
    in_steps = (source.filter(pl.col("step").is_not_null())
                .group_by("rank", "step", "pass")
                .agg(pl.col("start_ns").min(), pl.col("end_ns").max()))
    changed = (pl.col("pass") != pl.col("pass").shift()).fill_null(True)
    outside = (
        source.filter(pl.col("step").is_null())
        .sort("start_ns")  # tables are stored time-sorted, so this is a cheap check
        .with_columns(changed.cum_sum().over("rank").alias("band"))
        .group_by("rank", "band")
        .agg(pl.col("step").first(), pl.col("pass").first(), pl.col("start_ns").min(), pl.col("end_ns").max())
        .drop("band")
    )
    return (pl.concat([in_steps.select(columns), outside.select(columns)])
            .sort("rank", "start_ns", "pass").collect())


def lane_events(kernels: pl.DataFrame, memcpy: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Every drawable event with its lane key (group, rank, device, track, sublane)."""
    null_str, null_i64, null_f64 = pl.lit(None, pl.String), pl.lit(None, pl.Int64), pl.lit(None, pl.Float64)
    gpu_kernels = kernels.lazy().select(
        pl.lit("gpu").alias("group"), "rank", "device", pl.col("stream").alias("track"),
        pl.lit(0).alias("sublane"), pl.lit("kernel").alias("kind"), "name", null_str.alias("category"),
        # Bytes a kernel moves where the source estimates them (tinygrad): its GB/s on the hover.
        "start_ns", "end_ns", pl.col("bytes") if "bytes" in kernels.columns else null_i64.alias("bytes"), "flops")
    gpu_copies = memcpy.lazy().select(
        pl.lit("gpu").alias("group"), "rank", "device", pl.col("stream").alias("track"),
        pl.lit(0).alias("sublane"), pl.lit("memcpy").alias("kind"), copy_name(pl.col("kind")).alias("name"),
        pl.col("kind").alias("category"), "start_ns", "end_ns", "bytes", null_f64.alias("flops"))
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
            pl.lit("range").alias("kind"), pl.col("name").fill_null("(unnamed)"), "category",
            "start_ns", "end_ns", null_i64.alias("bytes"), "flops")
    )
    bands = pass_bands(ranges, kernels).lazy().select(
        pl.lit("passes").alias("group"), "rank", pl.lit(None, pl.Int32).alias("device"),
        null_i64.alias("track"), pl.lit(0).alias("sublane"), pl.lit("pass").alias("kind"),
        pl.col("pass").alias("name"),
        pl.when(pl.col("step").is_not_null()).then(pl.format("step {}", pl.col("step"))).otherwise(pl.lit("pass"))
        .alias("category"), "start_ns", "end_ns",
        null_i64.alias("bytes"), null_f64.alias("flops"))
    events = pl.concat([_typed(frame) for frame in (gpu_kernels, gpu_copies, range_events, bands)])
    return (events.with_columns(pl.col("rank").fill_null(0))
            .filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
            .collect())


def lane_table(events: pl.DataFrame) -> pl.DataFrame:
    """One row per lane, in display order, with its id (`lane`, 0 at the top) and label."""
    lanes = events.select(LANE_KEY).unique()
    multi_rank = lanes.get_column("rank").n_unique() > 1
    rank_prefix = pl.format("r{} · ", pl.col("rank")) if multi_rank else pl.lit("")
    stream = pl.format("GPU{} s{}", pl.col("device"), pl.col("track"))
    label = (
        pl.when(pl.col("group") == "passes").then(pl.lit("passes"))
        .when(pl.col("group") == "gpu").then(stream)
        .when(pl.col("group") == "gpu_ranges").then(pl.concat_str(stream, pl.lit(" ranges")))
        .otherwise(pl.format("CPU {}", pl.col("track")))
    )
    # Deeper sub-lanes of one thread are labelled by depth only, under their thread's first lane.
    label = pl.when(pl.col("sublane") > 0).then(pl.format("  depth {}", pl.col("sublane"))).otherwise(
        pl.concat_str(rank_prefix, label))
    last_depth = pl.col("sublane") == MAX_SUBLANES - 1
    label = pl.when((pl.col("sublane") > 0) & last_depth).then(pl.format("  depth {}+", pl.col("sublane"))).otherwise(
        label)
    return (
        lanes.with_columns(
            pl.col("group").replace_strict(SECTION_ORDER, return_dtype=pl.Int8).alias("section"),
            (pl.col("group") == "gpu_ranges").cast(pl.Int8).alias("subkind"))
        .sort("rank", "section", "device", "track", "subkind", "sublane", nulls_last=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("lane"), label.alias("label"))
        .drop("section", "subkind")
    )
