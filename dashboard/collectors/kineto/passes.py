"""Forward / backward / optimizer: the pass and the profiler step of every range and GPU event.

Ranges, from the trace's own evidence (ancestors are the enclosing ranges on
the same thread):

* **backward**: the range or an ancestor is an autograd backward function
  (`autograd::engine::evaluate_function: …`, `ConvolutionBackward0`,
  `…Backward1`, 2021's bare `CudnnConvolutionBackward`, torch.compile's
  `CompiledFunctionBackward`, `AccumulateGrad`), carries a non-zero
  `Fwd thread id`, is a `## backward ##`-style annotation or the Python
  frame of `loss.backward()` (`torch/_tensor.py(626): backward`); or the range
  lies on an autograd-engine thread: a CPU thread that runs backward
  functions, holds no profiler step and no forward evidence (module frames,
  forward annotations, forward ops of backward nodes). The engine also runs
  gradient accumulation there (`aten::add`, `aten::sum` at the top level):
  that is backward work although no backward function encloses it.
* **optimizer**: not backward, and the range or an ancestor is `Optimizer.…`
  (`Optimizer.step#SGD.step`, `Optimizer.zero_grad#SGD.zero_grad`) or an
  `## optimizer ##`-style annotation.
* **unattributed**: a profiler step itself (`ProfilerStep#N`, on the CPU or
  projected on a GPU stream) and any range enclosing one (a Python frame
  around the training loop): they hold every pass.
* **forward**: everything else.

GPU events (kernels, copies, memsets) take the pass of the innermost op
enclosing their launch, which is backward / optimizer exactly when one of
the ops enclosing the launch is; a launch under no op (or directly under the
step) is backward on an autograd-engine thread and forward elsewhere; only
an event that no launch links to the CPU (no runtime call, no op) is
`unattributed`.

Step: the `N` of the CPU `ProfilerStep#N` open at the range's start or at
the GPU event's launch, in the same file (rank). The autograd thread has no
step of its own; the main thread's step is open while it waits in
`backward()`, so its launches fall in that step by time. Null outside steps.
"""

from __future__ import annotations

import polars as pl

from dashboard.collectors.kineto.nesting import flag_inherited, track_starts

TRACK = ("file", "pid_key", "tid_key")
FORWARD, BACKWARD, OPTIMIZER, UNATTRIBUTED = "forward", "backward", "optimizer", "unattributed"
ANNOTATIONS = ("user_annotation", "gpu_user_annotation")
_CPU_CATEGORIES = ("cpu_op", "user_annotation", "profiler_step", "python_function")
_STEP = r"^ProfilerStep#(\d+)"
AUTOGRAD_TRACK = "_autograd_track"


def pass_name_features(name: pl.Expr) -> list[pl.Expr]:
    """String tests of a range name that the pass rules read (run once per distinct name)."""
    lower = name.str.to_lowercase()
    # A user mark written like `## backward ##` may arrive as `Operator` (2021) rather than an annotation.
    marked = name.str.starts_with("#")
    return [
        name.str.starts_with("autograd::engine::evaluate_function").alias("_engine_node"),
        name.str.contains(r"(?:Backward\d*|AccumulateGrad)$").alias("_backward_op_name"),
        # with_stack frames of `loss.backward()` (`torch/_tensor.py(626): backward`)
        name.str.contains(r"\): backward$").alias("_backward_frame"),
        lower.str.contains("backward", literal=True).alias("_backward_word"),
        lower.str.contains("forward", literal=True).alias("_forward_word"),
        name.str.starts_with("Optimizer.").alias("_optimizer_op"),
        lower.str.contains("optimizer", literal=True).alias("_optimizer_word"),
        marked.alias("_marked"),
        name.str.extract(_STEP, 1).cast(pl.Int64, strict=False).alias("_step_number"),
    ]


PASS_FEATURES = ("_engine_node", "_backward_op_name", "_backward_frame", "_backward_word", "_forward_word",
                 "_optimizer_op", "_optimizer_word", "_marked", "_step_number")


def _annotation_like() -> pl.Expr:
    return pl.col("category").is_in(ANNOTATIONS) | pl.col("_marked")


def backward_roots(frame: pl.DataFrame) -> pl.Series:
    """Ranges that are backward by their own name or args (their descendants inherit it)."""
    return frame.select(
        pl.col("_engine_node")
        | (pl.col("category").is_in(_CPU_CATEGORIES) & pl.col("_backward_op_name"))
        | (pl.col("fwd_thread") > 0).fill_null(False)
        | (_annotation_like() & pl.col("_backward_word"))
        | ((pl.col("category") == "python_function") & pl.col("_backward_frame"))
    ).to_series()


def _autograd_tracks(frame: pl.DataFrame, roots: pl.Series, forward_evidence: pl.Series) -> pl.Series:
    """Per row: is its track an autograd-engine thread (see the module docstring)."""
    # `frame` comes from `nest`, sorted by track: a running count of track starts numbers the tracks,
    # so the per-track test is a group-by on one integer and a gather back.
    cpu = pl.col("category").is_in(_CPU_CATEGORIES)
    flags = frame.select(
        (track_starts(list(TRACK)).cum_sum() - 1).cast(pl.Int64).alias("_track"),
        cpu.alias("_cpu"), (pl.col("category") == "profiler_step").alias("_is_step"),
    ).with_columns(roots.alias("_root"), forward_evidence.alias("_fwd"))
    per_track = flags.group_by("_track").agg(
        (pl.col("_cpu").all() & (pl.col("_root") & pl.col("_cpu")).any() & ~pl.col("_is_step").any()
         & ~pl.col("_fwd").any()).alias("_engine")
    ).sort("_track")
    return per_track.get_column("_engine").gather(flags.get_column("_track"))


def range_passes(frame: pl.DataFrame, parent: pl.Series, forward_evidence: pl.Series) -> pl.DataFrame:
    """`pass` and `_autograd_track` per range of a nested, featured frame."""
    roots = backward_roots(frame)
    on_engine_thread = _autograd_tracks(frame, roots, forward_evidence)
    backward = flag_inherited(roots, parent) | on_engine_thread
    optimizer_root = frame.select(
        pl.col("_optimizer_op") | (_annotation_like() & pl.col("_optimizer_word"))).to_series()
    optimizer = ~backward & flag_inherited(optimizer_root, parent)
    is_step = frame.select(
        (pl.col("category") == "profiler_step")
        | ((pl.col("category") == "gpu_user_annotation") & pl.col("_step_number").is_not_null())
    ).to_series()
    flags = pl.DataFrame({"backward": backward, "optimizer": optimizer, "step": _with_ancestors(is_step, parent)})
    passes = flags.select(
        pl.when(pl.col("backward")).then(pl.lit(BACKWARD))
        .when(pl.col("optimizer")).then(pl.lit(OPTIMIZER))
        .when(pl.col("step")).then(pl.lit(UNATTRIBUTED))
        .otherwise(pl.lit(FORWARD)).alias("pass")
    )
    return passes.with_columns(on_engine_thread.alias(AUTOGRAD_TRACK))


def _with_ancestors(flags: pl.Series, parent: pl.Series) -> pl.Series:
    """The flagged rows and every range enclosing one (a Python frame around the steps holds every pass too)."""
    marked = flags.clone()
    rows = flags.arg_true()
    while rows.len():  # one round per level above the flagged rows: few rows, few levels
        up = parent.gather(rows).drop_nulls().unique()
        up = up.filter(~marked.gather(up))
        marked = marked.scatter(up, True)
        rows = up
    return marked


def steps_of(ranges: pl.DataFrame, number: str = "step") -> pl.DataFrame:
    """CPU profiler steps: file, _step_start, _step_end, step (from column `number`), sorted by start."""
    return (
        ranges.filter(pl.col("category") == "profiler_step")
        .select(pl.col("file").cast(pl.Int32), pl.col("start_ns").alias("_step_start"),
                pl.col("end_ns").alias("_step_end"), pl.col(number).cast(pl.Int64).alias("step"))
        .sort("_step_start")
    )


def step_at(points: pl.DataFrame, steps: pl.DataFrame) -> pl.Series:
    """Per point (`file`, `at`), the number of the step open at `at` in that file; null when none.

    A binary search of each point among its file's step starts (few steps, many
    points: no sort of the points, no join), one file at a time.
    """
    result = pl.Series("step", [None], dtype=pl.Int64).new_from_index(0, points.height) if points.height else \
        pl.Series("step", [], dtype=pl.Int64)
    if steps.height == 0 or points.height == 0:
        return result
    files = points.get_column("file").cast(pl.Int32)
    for (file,), mine in steps.partition_by("file", as_dict=True, maintain_order=True).items():
        only_file = files.n_unique() == 1 and files[0] == file
        at = points.get_column("at") if only_file else points.get_column("at").filter(files == file)
        if at.len() == 0:
            continue
        last_start = mine.get_column("_step_start").search_sorted(at, side="right").cast(pl.Int64) - 1
        found = pl.DataFrame({"at": at, "index": last_start}).select(
            pl.when((pl.col("index") >= 0) & pl.col("at").is_not_null())
            .then(pl.col("index")).alias("index"), "at")
        index = found.get_column("index")
        step = mine.get_column("step").gather(index)
        inside = found.get_column("at") <= mine.get_column("_step_end").gather(index)
        step = step.zip_with(inside.fill_null(False), pl.Series([None], dtype=pl.Int64).new_from_index(0, at.len()))
        if only_file:
            return step.alias("step")
        result = result.scatter((files == file).arg_true(), step)
    return result


def ranges_step(featured: pl.DataFrame) -> pl.Series:
    """Per range (with name features), the step open at its start (a step's own number for a step)."""
    return step_at(featured.select("file", pl.col("start_ns").alias("at")), steps_of(featured, "_step_number"))


def gpu_passes(linked: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """`pass` and `step` of GPU events linked by `link_gpu` (op_row, api_* columns)."""
    if ranges.height == 0:
        linked_any = pl.col("api_found").fill_null(False)
        return linked.select(
            pl.when(linked_any).then(pl.lit(FORWARD)).otherwise(pl.lit(UNATTRIBUTED)).alias("pass"),
            pl.lit(None, pl.Int64).alias("step"))
    row = linked.get_column("op_row")
    # Engine threads are a handful: one vectorised test per thread, not a join over every event.
    on_engine = pl.lit(False)
    engine = ranges.filter(pl.col(AUTOGRAD_TRACK)).select(*TRACK).unique()
    for file, pid, tid in engine.iter_rows():
        on_engine = on_engine | ((pl.col("file") == file) & (pl.col("api_pid_key") == pid)
                                 & (pl.col("api_tid_key") == tid)).fill_null(False)
    frame = linked.select("file", "api_found", "api_start", "op_row", on_engine.alias("_engine")).with_columns(
        ranges.get_column("pass").gather(row).alias("_op_pass"),
        ranges.get_column("start_ns").gather(row).alias("_op_start"),
    )
    op_pass = pl.col("_op_pass")
    launched = pl.col("api_found").fill_null(False) | pl.col("op_row").is_not_null()
    passes = frame.select(
        "file",
        pl.when(op_pass.is_in([BACKWARD, OPTIMIZER])).then(op_pass)
        .when(launched & pl.col("_engine")).then(pl.lit(BACKWARD))
        .when(launched).then(pl.lit(FORWARD))
        .otherwise(pl.lit(UNATTRIBUTED)).alias("pass"),
        pl.coalesce("api_start", "_op_start").alias("at"),
    )
    return passes.select("pass").with_columns(step_at(passes, steps_of(ranges)).alias("step"))

