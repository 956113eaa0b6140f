"""Our capture against the PyTorch profiler (Kineto), step by step, on the same training loop.

Both record CUPTI's activity records, so on the same loop they must see the same GPU work: per step the
same kernels (demangled names, as a multiset), launched with the same grid, block, registers and shared
memory, the same copies and memsets (kind and bytes), and nearly the same kernel time (two processes,
two runs of the loop: the durations differ by run-to-run noise only).

Steps are the CPU `ProfilerStep#N` ranges of each run (`category == "profiler_step"`; Kineto's
projections of them onto GPU streams are left out). A kernel or copy belongs to the step whose range
holds its start: the loop synchronizes before each step ends, so a step's GPU work runs inside its
range, and this needs no launching API call (our capture records the runtime API only by default, while
Triton and some libraries launch through the driver API). GPU work outside every step (model set-up,
warm-up, which only our capture saw) is counted, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tools.gpu_check.checks import Check, not_judged

STEP_NAME = r"^ProfilerStep#(\d+)$"
KERNEL_TIME_BOUND = 0.05
LAUNCH_KEYS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers", "shared_memory")
COPY_KEYS = ("kind", "bytes")
SHOWN_DIFFERENCES = 5
# The per-run comparisons, in the order compare_activity returns them, with their bounds in words.
ACTIVITY_BOUNDS = {
    "steps": "the same ProfilerStep#N ranges on both sides",
    "kernel_names_per_step": "the same kernel names, as a multiset, in every step",
    "kernel_launches_per_step": "the same (name, grid, block, registers, shared memory) multiset in every step",
    "kernel_count": "equal over the common steps",
    "copies_per_step": "the same copies and memsets (kind, bytes) in every step",
    "copy_bytes": "equal bytes and count over the common steps",
    "kernel_time": f"total kernel time within {KERNEL_TIME_BOUND:.0%} of Kineto's",
}


@dataclass(frozen=True)
class StepActivity:
    """The GPU activity of one run's timed steps."""

    kernels: pl.DataFrame  # step, name, LAUNCH_KEYS, duration_ns
    copies: pl.DataFrame  # step, kind, bytes
    steps: list[int]
    kernels_outside: int
    copies_outside: int


def step_windows(ranges: pl.DataFrame) -> pl.DataFrame:
    """step, step_start, step_end of each CPU `ProfilerStep#N` range (the first of a repeated N)."""
    steps = ranges.filter(
        (pl.col("category") == "profiler_step") & pl.col("device").is_null() & pl.col("name").str.contains(STEP_NAME)
    )
    return (
        steps.select(
            pl.col("name").str.extract(STEP_NAME).cast(pl.Int64).alias("step"),
            pl.col("start_ns").alias("step_start"),
            pl.col("end_ns").alias("step_end"),
        )
        .sort("step_start")
        .unique("step", keep="first", maintain_order=True)
    )


def _in_steps(events: pl.DataFrame, windows: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The events that start inside a step's window, with that step; and how many start outside all."""
    if events.is_empty() or windows.is_empty():
        none = events.drop("step", strict=False).head(0).with_columns(pl.lit(None, pl.Int64).alias("step"))
        return none, events.height
    placed = (
        events.drop("step", strict=False)
        .sort("start_ns")
        .join_asof(windows.sort("step_start"), left_on="start_ns", right_on="step_start", strategy="backward")
        .filter(pl.col("step").is_not_null() & (pl.col("start_ns") <= pl.col("step_end")))
        .drop("step_start", "step_end")
    )
    return placed, events.height - placed.height


def step_activity(kernels: pl.DataFrame, memcpy: pl.DataFrame, ranges: pl.DataFrame) -> StepActivity:
    """One run's kernels and copies, each assigned to the timed step it ran in."""
    windows = step_windows(ranges)
    placed_kernels, kernels_outside = _in_steps(kernels, windows)
    placed_copies, copies_outside = _in_steps(memcpy, windows)
    return StepActivity(
        kernels=placed_kernels.select(
            "step", "name", *LAUNCH_KEYS, (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns")
        ),
        copies=placed_copies.select("step", *COPY_KEYS),
        steps=windows.get_column("step").to_list(),
        kernels_outside=kernels_outside,
        copies_outside=copies_outside,
    )


def _counted(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    # Unknown values (a null grid) compare as one value on both sides rather than never matching.
    filled = frame.select(
        "step", *(pl.col(k).fill_null("?" if frame.schema[k] == pl.String else -1) for k in keys)
    )
    return filled.group_by("step", *keys).agg(pl.len().alias("n"))


def multiset_difference(ours: pl.DataFrame, theirs: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per step, the key tuples whose counts differ: `ours`, `theirs` (0 where absent), ordered by |Δ|."""
    joined = _counted(ours, keys).join(_counted(theirs, keys), on=["step", *keys], how="full", coalesce=True,
                                       suffix="_theirs")
    return (
        joined.select("step", *keys, pl.col("n").fill_null(0).alias("ours"),
                      pl.col("n_theirs").fill_null(0).alias("theirs"))
        .filter(pl.col("ours") != pl.col("theirs"))
        .sort(["step", (pl.col("ours") - pl.col("theirs")).abs()], descending=[False, True])
    )


def _describe(difference: pl.DataFrame, keys: list[str]) -> str:
    first = difference.get_column("step").min()
    rows = difference.filter(pl.col("step") == first).head(SHOWN_DIFFERENCES)
    shown = "; ".join(
        f"{', '.join(str(row[k]) for k in keys)}: ours {row['ours']}, kineto {row['theirs']}"
        for row in rows.iter_rows(named=True)
    )
    return f"first differing step {first}: {shown}"


def _per_step(name: str, ours: pl.DataFrame, theirs: pl.DataFrame, keys: list[str], steps: int, bound: str) -> Check:
    difference = multiset_difference(ours, theirs, keys)
    differing = difference.get_column("step").n_unique()
    return Check(name, differing == 0, {"steps": steps, "steps_differing": differing}, bound,
                 _describe(difference, keys) if differing else "")


def compare_activity(ours: StepActivity, theirs: StepActivity, label: str,
                     time_bound: float = KERNEL_TIME_BOUND) -> list[Check]:
    """Per-step kernels, launches and copies of our capture against Kineto's, and the total kernel time."""
    common = sorted(set(ours.steps) & set(theirs.steps))
    step_check = Check(f"{label}.steps", bool(common) and set(ours.steps) == set(theirs.steps),
                       {"ours": len(ours.steps), "kineto": len(theirs.steps), "common": len(common)},
                       ACTIVITY_BOUNDS["steps"])
    if not common:
        return [step_check, *missing_activity(label, "no ProfilerStep#N common to both runs")[1:]]
    if ours.kernels.is_empty() and theirs.kernels.is_empty():
        return [step_check, *missing_activity(label, "neither run has a kernel inside its steps (a CPU run?)")[1:]]
    k_ours, k_theirs = (side.kernels.filter(pl.col("step").is_in(common)) for side in (ours, theirs))
    c_ours, c_theirs = (side.copies.filter(pl.col("step").is_in(common)) for side in (ours, theirs))
    checks = [
        step_check,
        _per_step(f"{label}.kernel_names_per_step", k_ours, k_theirs, ["name"], len(common),
                  ACTIVITY_BOUNDS["kernel_names_per_step"]),
        _launches(label, k_ours, k_theirs, len(common)),
        Check(f"{label}.kernel_count", k_ours.height == k_theirs.height,
              {"ours": k_ours.height, "kineto": k_theirs.height}, ACTIVITY_BOUNDS["kernel_count"],
              f"{ours.kernels_outside} of ours and {theirs.kernels_outside} of Kineto's outside the steps"),
        _per_step(f"{label}.copies_per_step", c_ours, c_theirs, list(COPY_KEYS), len(common),
                  ACTIVITY_BOUNDS["copies_per_step"]),
    ]
    bytes_ours, bytes_theirs = (int(frame.get_column("bytes").sum() or 0) for frame in (c_ours, c_theirs))
    checks.append(Check(f"{label}.copy_bytes", bytes_ours == bytes_theirs and c_ours.height == c_theirs.height,
                        {"ours": bytes_ours, "kineto": bytes_theirs, "copies_ours": c_ours.height,
                         "copies_kineto": c_theirs.height}, ACTIVITY_BOUNDS["copy_bytes"]))
    checks.append(_kernel_time(label, k_ours, k_theirs, time_bound))
    return checks


def missing_activity(label: str, reason: str) -> list[Check]:
    """The checks compare_activity makes, not judged, for a run that is missing."""
    return [not_judged(f"{label}.{name}", bound, reason) for name, bound in ACTIVITY_BOUNDS.items()]


def _all_null(frame: pl.DataFrame, column: str) -> bool:
    return frame.height > 0 and frame.get_column(column).null_count() == frame.height


def _launches(label: str, ours: pl.DataFrame, theirs: pl.DataFrame, steps: int) -> Check:
    name = f"{label}.kernel_launches_per_step"
    bound = ACTIVITY_BOUNDS["kernel_launches_per_step"]
    missing = [k for k in LAUNCH_KEYS if _all_null(ours, k) or _all_null(theirs, k)]
    if missing:
        return not_judged(name, bound, f"a side records no {', '.join(missing)}")
    return _per_step(name, ours, theirs, ["name", *LAUNCH_KEYS], steps, bound)


def _kernel_time(label: str, ours: pl.DataFrame, theirs: pl.DataFrame, bound: float) -> Check:
    name, words = f"{label}.kernel_time", f"total kernel time within {bound:.0%} of Kineto's"
    total_ours, total_theirs = (int(frame.get_column("duration_ns").sum() or 0) for frame in (ours, theirs))
    if total_theirs <= 0:
        return not_judged(name, words, "Kineto's steps hold no kernel time")
    difference = total_ours / total_theirs - 1.0
    return Check(name, abs(difference) <= bound, round(difference, 4), words,
                 f"ours {total_ours / 1e6:.3f} ms, Kineto {total_theirs / 1e6:.3f} ms")
