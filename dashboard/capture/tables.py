"""Canonical tables from captured activity frames (pure polars, no CUPTI).

Input: one frame per activity kind as `RecordSink.frames()` returns it (columns
named after the record fields), plus the host-side `ranges`. Output: the
`kernels`, `memcpy`, `api_calls` and `ranges` tables of `dashboard.schema`.

Attribution: a CUDA API call belongs to the innermost range open on its
thread when it started (both on CUPTI's clock, threads by OS id); the kernel
or copy that call launched carries the same correlation id, so it inherits
that range's layer and pass. No synchronize and no CUPTI external-correlation
ids: pushing and popping one per range cost the device check's GPT ~8 % of
its step (issue 32), and CUPTI then writes a record for every API call.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import polars as pl

from dashboard import schema
from dashboard.capture import records as rec
from dashboard.capture.demangle import demangle_column
from dashboard.collectors.kineto.passes import step_at

# CUPTI ActivityMemcpyKind -> the canonical short names; unknown ids stay visible. CUPTI defines ids
# 0-10 only (the Unified ones above are Nsight Systems'), so an 11 from CUPTI stays "kind 11".
COPY_KIND_NAMES = {kind: name for kind, name in schema.MEMCPY_KIND_NAMES.items() if kind <= 10}
# CUPTI ActivityMemoryKind (differs from Nsight Systems' ids: never share this map).
MEMORY_KIND_NAMES: dict[int, str] = {
    0: "Unknown",
    1: "Pageable",
    2: "Pinned",
    3: "Device",
    4: "Array",
    5: "Managed",
    6: "Device static",
    7: "Managed static",
}

ApiNameFn = Callable[[int, int], str]
# `dashboard.mark` emits NVTX in this domain; the capture already has those as
# "marker" ranges, so their MARKER records are not turned into a second copy.
OWN_NVTX_DOMAIN = "dashboard"


def _named(column: str, names: dict[int, str], prefix: str) -> pl.Expr:
    return pl.col(column).replace_strict(
        names, default=pl.format(f"{prefix} {{}}", pl.col(column)), return_dtype=pl.String
    )


def _timed(frame: pl.DataFrame) -> pl.DataFrame:
    # "A value of 0 for both the start and end timestamps indicates that
    # timestamp information could not be collected": such rows are dropped.
    return frame.filter(~((pl.col("start") == 0) & (pl.col("end") == 0))).rename({"start": "start_ns", "end": "end_ns"})


def _kernels(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
    frame = _timed(frame)
    return frame.select(
        *_where(rank),
        demangle_column(frame["name"]).alias("name"),
        "start_ns",
        "end_ns",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        pl.col("registers_per_thread").alias("registers"),
        (pl.col("static_shared_memory").fill_null(0) + pl.col("dynamic_shared_memory").fill_null(0)).alias(
            "shared_memory"
        ),
    )


def _where(rank: int) -> list[pl.Expr]:
    """The columns that place a GPU activity: rank, device, stream and the correlation to its launch."""
    return [pl.lit(rank).alias("rank"), pl.col("device_id").alias("device"), pl.col("stream_id").alias("stream"),
            pl.col("correlation_id").alias("correlation")]


def _copies(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
    return _timed(frame).select(
        *_where(rank),
        _named("copy_kind", COPY_KIND_NAMES, "kind").alias("kind"),
        _named("src_kind", MEMORY_KIND_NAMES, "memory kind").alias("src_kind"),
        _named("dst_kind", MEMORY_KIND_NAMES, "memory kind").alias("dst_kind"),
        "bytes",
        "start_ns",
        "end_ns",
    )


def _memsets(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
    return _timed(frame).select(
        *_where(rank),
        pl.lit("Memset").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("src_kind"),
        _named("memory_kind", MEMORY_KIND_NAMES, "memory kind").alias("dst_kind"),
        "bytes",
        "start_ns",
        "end_ns",
    )


def _api_calls(frames: dict[int, pl.DataFrame], rank: int, api_name: ApiNameFn) -> pl.DataFrame:
    parts = []
    for kind, category in ((rec.RUNTIME, "cuda_runtime"), (rec.DRIVER, "cuda_driver")):
        frame = frames.get(kind)
        if frame is None or frame.is_empty():
            continue
        frame = _timed(frame)
        if kind == rec.RUNTIME:  # those CUPTI recorded all the same (it may not filter per function)
            frame = frame.filter(~pl.col("cbid").is_in(list(rec.SKIPPED_RUNTIME_APIS)))
        names = {cbid: api_name(kind, cbid) for cbid in frame["cbid"].drop_nulls().unique().to_list()}
        parts.append(
            frame.select(
                pl.lit(rank).alias("rank"),
                pl.col("thread_id").alias("thread"),
                pl.col("cbid").replace_strict(names, default=None, return_dtype=pl.String).alias("name"),
                pl.lit(category).alias("category"),
                pl.col("correlation_id").alias("correlation"),
                "start_ns",
                "end_ns",
            )
        )
    return schema.conform("api_calls", pl.concat(parts) if parts else schema.empty("api_calls"))


def _nvtx_ranges(frame: pl.DataFrame, rank: int, first_id: int) -> pl.DataFrame:
    """Pair NVTX start / end MARKER records by id (the end record has no name)."""
    flags = pl.col("flags_").fill_null(0)
    own = pl.col("domain").fill_null("") == OWN_NVTX_DOMAIN
    starts = frame.filter(((flags & rec.MARKER_FLAG_START) != 0) & ~own).select(
        "id", "name", "domain", pl.col("timestamp").alias("start_ns")
    )
    ends = frame.filter((flags & rec.MARKER_FLAG_END) != 0).select("id", pl.col("timestamp").alias("end_ns"))
    paired = starts.join(ends, on="id", how="inner").sort("start_ns")
    return paired.select(
        pl.lit(rank).alias("rank"),
        (pl.int_range(pl.len(), dtype=pl.Int64) + first_id).alias("id"),
        pl.when(pl.col("domain").is_not_null() & (pl.col("domain") != ""))
        .then(pl.format("{}: {}", "domain", "name"))
        .otherwise(pl.col("name"))
        .alias("name"),
        pl.lit("nvtx").alias("category"),
        "start_ns",
        "end_ns",
        pl.lit("unattributed").alias("pass"),  # NVTX names carry no pass
    )


def _owners(api_calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """correlation -> the innermost range open on the calling thread when its API call started: owner id,
    op, layer, pass.

    A thread's ranges nest, so those of one depth never overlap: per depth, the last range to start at or
    before the call (an as-of join by thread) holds it when it has not ended yet; the deepest that holds
    it is the innermost. API records name threads by OS id, as ranges do (CuptiBackend.use_system_thread_ids).
    """
    empty = pl.DataFrame(
        schema={"correlation": pl.Int64, "owner": pl.Int64, "op": pl.String, "layer": pl.String, "pass": pl.String}
    )
    host = ranges.filter(pl.col("thread").is_not_null())
    if api_calls.is_empty() or host.is_empty():
        return empty
    calls = (
        api_calls.filter(pl.col("thread").is_not_null())
        .select("correlation", pl.col("thread").cast(pl.Int64), pl.col("start_ns").alias("call_ns"))
        .unique("correlation", keep="first")
        .sort("call_ns")
    )
    spans = host.select(
        pl.col("id").alias("owner"), pl.col("thread").cast(pl.Int64), "start_ns", "end_ns", "depth", "name",
        "category", "layer", "pass",
    )
    held = []
    for depth in sorted(spans.get_column("depth").drop_nulls().unique().to_list()):
        level = spans.filter(pl.col("depth") == depth).sort("start_ns")
        with warnings.catch_warnings():  # both sides are sorted by time, hence within each thread too
            warnings.filterwarnings("ignore", message="Sortedness of columns cannot be checked")
            matched = calls.join_asof(level, left_on="call_ns", right_on="start_ns", by="thread", strategy="backward")
        held.append(matched.filter(pl.col("owner").is_not_null() & (pl.col("call_ns") <= pl.col("end_ns"))))
    if not held:
        return empty
    innermost = pl.concat(held).sort("depth").unique("correlation", keep="last")
    # `op`: the mark / step the launch happened in (modules are `layer`, not ops).
    op = pl.when(pl.col("category") != "module").then(pl.col("name")).alias("op")
    return innermost.select("correlation", "owner", op, "layer", "pass")


def _kernel_flops(kernels: pl.DataFrame, ranges: pl.DataFrame) -> pl.Series:
    """A range's own FLOPs (its total minus its children's), shared among the
    kernels it launched in proportion to their durations, so per-layer sums of
    kernel FLOPs equal the layer's and a kernel's FLOP/s is its layer's rate."""
    children = ranges.group_by("parent").agg(pl.col("flops").sum().alias("child_flops"))
    own = (
        ranges.join(children, left_on="id", right_on="parent", how="left")
        .select(pl.col("id").alias("owner"), (pl.col("flops") - pl.col("child_flops").fill_null(0)).alias("own"))
        .filter(pl.col("own") > 0)
    )
    duration = (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64)
    total = duration.sum().over("owner")
    return (
        kernels.select("owner", "start_ns", "end_ns")
        .join(own, on="owner", how="left", maintain_order="left")
        .select(pl.when(total > 0).then(pl.col("own") * duration / total).alias("flops"))
        .to_series()
    )


def _steps(ranges: pl.DataFrame) -> pl.DataFrame:
    """The profiler steps (`dashboard.mark(..., category="profiler_step")`): _step_start, _step_end and
    step, N of a `ProfilerStep#N` name as torch.profiler numbers them, else the step's order."""
    steps = ranges.filter(pl.col("category") == "profiler_step").sort("start_ns")
    number = pl.col("name").str.extract(r"#(\d+)$").cast(pl.Int64)
    order = pl.int_range(pl.len(), dtype=pl.Int64)
    return steps.select(pl.lit(0, pl.Int32).alias("file"), pl.col("start_ns").alias("_step_start"),
                        pl.col("end_ns").alias("_step_end"), pl.coalesce(number, order).alias("step"))


def _step_of(at: pl.Series, steps: pl.DataFrame) -> pl.Series:
    """The step open at each time (null outside every step), as the Kineto collector assigns them."""
    points = pl.DataFrame({"file": pl.Series([0] * at.len(), dtype=pl.Int32), "at": at})
    return step_at(points, steps)


def _with_step(events: pl.DataFrame, api_calls: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    if steps.is_empty() or events.is_empty():
        return events.drop("step", strict=False)
    calls = api_calls.select("correlation", pl.col("start_ns").alias("_call_ns")).unique("correlation", keep="first")
    at = events.drop("step", strict=False).join(calls, on="correlation", how="left", maintain_order="left")
    launched = at.get_column("_call_ns").fill_null(at.get_column("start_ns"))
    return at.drop("_call_ns").with_columns(_step_of(launched, steps).alias("step"))


def build_tables(
    frames: dict[int, pl.DataFrame],
    host_ranges: pl.DataFrame,
    rank: int,
    api_name: ApiNameFn,
) -> dict[str, pl.DataFrame]:
    """The canonical tables of one capture (every table conformed, possibly empty)."""
    api_calls = _api_calls(frames, rank, api_name).with_columns(pl.lit(rank, dtype=pl.Int32).alias("rank"))

    ranges = host_ranges.with_columns(pl.lit(rank).alias("rank"))
    marker = frames.get(rec.MARKER)
    if marker is not None and not marker.is_empty():
        first_id = (int(ranges["id"].max() or 0) if not ranges.is_empty() else 0) + 1
        nvtx = _nvtx_ranges(marker, rank, first_id)
        ranges = pl.concat([schema.conform("ranges", ranges), schema.conform("ranges", nvtx)])
    ranges = schema.conform("ranges", ranges)

    kernel_frame = frames.get(rec.CONCURRENT_KERNEL)
    kernels = _kernels(kernel_frame, rank) if kernel_frame is not None else schema.empty("kernels")
    copy_parts = [_copies(frames[k], rank) for k in (rec.MEMCPY, rec.MEMCPY2) if k in frames]
    if rec.MEMSET in frames:
        copy_parts.append(_memsets(frames[rec.MEMSET], rank))
    memcpy = pl.concat(copy_parts, how="diagonal_relaxed") if copy_parts else schema.empty("memcpy")

    # Steps: a range's is the step open at its start; a kernel's or copy's, the one open when the call
    # that launched it started (its own start when the call is unknown), as in a Kineto trace.
    steps = _steps(ranges)
    ranges = ranges.with_columns(_step_of(ranges.get_column("start_ns"), steps).alias("step"))
    owners = _owners(api_calls, ranges)
    attributed = ("op", "layer", "pass", "flops")
    kernels = kernels.drop(attributed, strict=False).join(owners, on="correlation", how="left", maintain_order="left")
    kernels = schema.conform("kernels", _with_step(kernels.with_columns(_kernel_flops(kernels, ranges)).drop("owner"),
                                                   api_calls, steps))
    memcpy = memcpy.drop(attributed, strict=False).join(owners, on="correlation", how="left", maintain_order="left")
    memcpy = schema.conform("memcpy", _with_step(memcpy.drop("owner"), api_calls, steps))
    return {
        "kernels": kernels.sort("start_ns"),
        "memcpy": memcpy.sort("start_ns"),
        "api_calls": api_calls.sort("start_ns"),
        "ranges": ranges.sort("start_ns"),
    }
