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

**Passes as the trainer labelled them.** Where a file (rank) carries the
trainer's own pass annotations (`## forward ##`, `## backward ##`,
`## optimizer ##`, as torchrec's pipelines and many DDP loops write them),
they decide the pass of its GPU events: an event launched while one of them
is open on any CPU thread of the rank takes its pass (by time: the autograd
thread launches while the main thread sits in `## backward ##`); any other
launched event is backward / optimizer when its ops say so, else `other`,
and its `pass_annotation` names the innermost `## name ##` annotation open at
its launch (`sparse_data_dist`, `load_batch`), so the next batch's input
distribution no longer counts as forward. A rank is annotated when it marks
`## forward ##` (a lone `## backward ##` around `loss.backward()` is just a
backward mark, as above). An event no launch links stays `unattributed`.
Ranges keep the rules above.

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
OTHER = "other"  # launched in a trainer-annotated run outside its forward / backward / optimizer annotations
TRAINER_PASS = r"(?i)^##\s*(forward|backward|optimizer)\s*##$"
TRAINER_ANNOTATION = r"^##\s*(.+?)\s*##$"
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


def _covering(points: pl.DataFrame, marks: pl.DataFrame, value: str) -> pl.Series:
    """Per point (`file`, `at`), `value` of the latest-starting mark (`file`, `_mark_start`, `_mark_end`) open
    at `at` in the same file; null when that mark has ended (or there is none)."""
    if marks.height == 0:
        return pl.Series(value, [None], dtype=pl.String).new_from_index(0, points.height)
    indexed = points.select(pl.int_range(pl.len()).alias("_i"), pl.col("file").cast(pl.Int32), "at")
    found = indexed.drop_nulls("at").sort("at").join_asof(
        marks.sort("_mark_start"), left_on="at", right_on="_mark_start", by="file", strategy="backward",
        check_sortedness=False)
    found = found.select("_i", pl.when(pl.col("_mark_end") >= pl.col("at")).then(pl.col(value)).alias(value))
    return indexed.join(found, on="_i", how="left").sort("_i").get_column(value)


def _trainer_marks(ranges: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(pass marks, all `## name ##` marks, the outermost of them): file, _mark_start, _mark_end and the pass /
    the name between the `##`."""
    named = ranges.filter(pl.col("category") != "gpu_user_annotation",
                          pl.col("name").cast(pl.String).str.contains(TRAINER_ANNOTATION)).select(
        pl.col("file").cast(pl.Int32), pl.col("start_ns").alias("_mark_start"), pl.col("end_ns").alias("_mark_end"),
        pl.col("name").cast(pl.String).str.extract(TRAINER_ANNOTATION, 1).alias("annotation"),
        pl.col("name").cast(pl.String).str.extract(TRAINER_PASS, 1).str.to_lowercase().alias("pass"))
    passes = named.drop_nulls("pass")
    labels = named.filter(pl.col("pass").is_null()).sort("file", "_mark_start")
    # Outermost: starting after every earlier mark of the file has ended (a mark nested in one is not).
    reach = pl.col("_mark_end").cum_max().shift(1).over("file")
    outer = labels.filter(reach.is_null() | (pl.col("_mark_start") > reach))
    return passes, labels, outer


def _trainer_passes(frame: pl.DataFrame, ranges: pl.DataFrame, launched: pl.Expr) -> pl.DataFrame | None:
    """`pass` and `pass_annotation` of the GPU events of files with trainer pass annotations (None without)."""
    passes, labels, outer = _trainer_marks(ranges)
    # A rank is annotated when it marks its forward: then the rest of a step is decidably not forward.
    annotated = passes.filter(pl.col("pass") == FORWARD).get_column("file").unique()
    if annotated.len() == 0:
        return None
    points = frame.select("file", "at")
    annotation = _covering(points, labels, "annotation").fill_null(_covering(points, outer, "annotation"))
    marked = frame.select(
        pl.col("file").cast(pl.Int32).is_in(annotated.implode()).alias("_trainer"),
        launched.alias("_launched"), "pass").with_columns(
        _covering(points, passes, "pass").alias("_marked_pass"), annotation.alias("_annotation"))
    trainer = pl.col("_trainer") & pl.col("_launched")
    # Unmarked: backward / optimizer by its ops (an Optimizer.step outside `## optimizer ##`), else other.
    unmarked = pl.when(pl.col("pass").is_in([BACKWARD, OPTIMIZER])).then(pl.col("pass")).otherwise(pl.lit(OTHER))
    chosen = pl.when(trainer).then(pl.col("_marked_pass").fill_null(unmarked)).otherwise(pl.col("pass"))
    return marked.select(chosen.alias("pass")).with_columns(
        pl.when(pl.col("pass") == OTHER).then(marked.get_column("_annotation")).alias("pass_annotation"))


def gpu_passes(linked: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """`pass`, `step` and `pass_annotation` of GPU events linked by `link_gpu` (op_row, api_* columns)."""
    no_annotation = pl.lit(None, pl.String).alias("pass_annotation")
    if ranges.height == 0:
        linked_any = pl.col("api_found").fill_null(False)
        return linked.select(
            pl.when(linked_any).then(pl.lit(FORWARD)).otherwise(pl.lit(UNATTRIBUTED)).alias("pass"),
            pl.lit(None, pl.Int64).alias("step"), no_annotation)
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
        "file", "api_found", "op_row",
        pl.when(op_pass.is_in([BACKWARD, OPTIMIZER])).then(op_pass)
        .when(launched & pl.col("_engine")).then(pl.lit(BACKWARD))
        .when(launched).then(pl.lit(FORWARD))
        .otherwise(pl.lit(UNATTRIBUTED)).alias("pass"),
        pl.coalesce("api_start", "_op_start").alias("at"),
    )
    step = step_at(passes, steps_of(ranges)).alias("step")
    trainer = _trainer_passes(passes, ranges, launched)
    if trainer is None:
        return passes.select("pass").with_columns(step, no_annotation)
    return trainer.select("pass").with_columns(step, trainer.get_column("pass_annotation"))
