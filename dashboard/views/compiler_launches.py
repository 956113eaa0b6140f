"""`/compiler`'s launches and autotuning section (tritonparse traces): Dash-free rows for one compile.

Launches of the shown compile grouped by grid and arguments (how many times each ran), the launch count of
every kernel of the run, and the autotuner's benchmark of the shown kernel with the winning config marked.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.store import Run
from dashboard.views.cache import per_run

MAX_ROWS = 50  # rows per table sent to the browser; the rest are counted


@dataclass(frozen=True)
class Launches:
    per_kernel: pl.DataFrame  # kernel, compiles, launches
    shapes: pl.DataFrame  # this compile: grid, args, launches, benchmark, first_line (most launched first)
    compile_launches: int  # launches of this compile
    compile_benchmark: int  # of which the autotuner's timing runs
    autotune: pl.DataFrame  # this kernel's benchmarked configs: session, key, config, timing_ms, best, cache_hit
    orphans: int  # launches whose compile is not in the traces


@per_run(maxsize=32)
def launches(run: Run, compile_index: int | None) -> Launches | None:
    """What the section shows for one compile; None when the run has no launches and no autotuning."""
    if not run.has("ir_launches") and not run.has("ir_autotune"):
        return None
    table = run.frame("ir_launches")
    per_kernel = table.group_by("kernel").agg(pl.col("compile").drop_nulls().n_unique().alias("compiles"),
                                              pl.len().alias("launches")).sort("launches", "kernel",
                                                                               descending=[True, False])
    mine = table.filter(pl.col("compile") == compile_index) if compile_index is not None else table.clear()
    grid = pl.format("({}, {}, {})", *(pl.col(f"grid_{axis}").cast(pl.String).fill_null("?") for axis in "xyz"))
    shapes = mine.group_by(grid.alias("grid"), "args").agg(
        pl.len().alias("launches"), pl.col("benchmark").fill_null(False).sum().alias("benchmark"),
        pl.col("source_line").min().alias("first_line")).sort("launches", "first_line", descending=[True, False])
    kernel = None
    if compile_index is not None and run.has("ir_kernels"):
        found = run.frame("ir_kernels").filter(pl.col("compile") == compile_index)["kernel"]
        kernel = found[0] if found.len() else None
    tuned = run.frame("ir_autotune")
    autotune = tuned.filter(pl.col("kernel") == kernel) if kernel else tuned.clear()
    return Launches(per_kernel, shapes, mine.height, int(mine["benchmark"].fill_null(False).sum()),
                    autotune.sort("session", "timing_ms", nulls_last=True),
                    table.filter(pl.col("compile").is_null()).height)
