"""Data access for `/compiler`: one run's IR tables, texts, locations and Python sources, cached per run."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from dashboard.collectors.triton_ir.locs import locations
from dashboard.schema import empty
from dashboard.store import SOURCE_DIR, Run, RunStore
from dashboard.views.cache import per_run

MAX_SOURCE_BYTES = 2 << 20


@dataclass(frozen=True)
class CompilerData:
    steps: pl.DataFrame
    kernels: pl.DataFrame
    located: frozenset[int]  # text ids with rows in ir_locs
    has_planner: bool


@per_run(maxsize=16)
def compiler_data(run: Run) -> CompilerData:
    steps = run.frame("ir_steps") if run.has("ir_steps") else empty("ir_steps")
    kernels = run.frame("ir_kernels") if run.has("ir_kernels") else empty("ir_kernels")
    located = frozenset(run.scan("ir_locs").select(pl.col("text_id").unique()).collect()["text_id"].to_list())
    return CompilerData(steps, kernels, located, run.has_evidence("planner"))


@per_run(maxsize=256)
def ir_text(run: Run, text_id: int) -> str:
    """One IR body, decompressed (read from the run's parquet, one row)."""
    found = run.scan("ir_text").filter(pl.col("text_id") == text_id).select("zlib").collect()
    if found.is_empty():
        return ""
    return zlib.decompress(found["zlib"][0]).decode("utf-8", "replace")


@per_run(maxsize=256)
def text_locations(run: Run, text_id: int, stage: str) -> pl.DataFrame:
    """IR line -> Python line rows of one text: from ir_locs, or parsed now for snapshots it does not cover."""
    if text_id in compiler_data(run).located:
        return run.scan("ir_locs").filter(pl.col("text_id") == text_id).collect()
    rows = locations(ir_text(run, text_id), stage)
    frame = pl.DataFrame(rows, schema={"ir_line": pl.Int64, "file": pl.String, "line": pl.Int64,
                                       "column": pl.Int64, "via": pl.String}, orient="row")
    return frame.with_columns(pl.lit(text_id, pl.Int64).alias("text_id"))


@per_run(maxsize=32)
def python_source(run: Run, file: str) -> tuple[str, ...] | None:
    """The Python file's lines, from the run's own copy of a source with that name (only `.py` files).

    Never the path the log names on the server's disk: a log is user input, and a team server reads
    nothing outside its data folder. `compile-capture` and folder ingests keep the kernel source with
    the run, so the page has it. The log's path is data, compared as text, never a glob or a pattern
    (a `**` in it once made every compiler view fail): `kept_source_path` picks the copy.
    """
    if not file or not file.endswith(".py"):
        return None
    candidate = kept_source_path(run.info.path / SOURCE_DIR, file)
    if candidate is not None:
        try:
            return tuple(candidate.read_text(errors="replace").split("\n"))
        except OSError:
            pass
    return _traced_python_source(run, file)


# At most this many files of a run's source/ are looked at for one lookup (a source folder of a huge tree).
MAX_SOURCE_FILES = 20_000


def kept_source_path(source_dir: Path, file: str) -> Path | None:
    """The regular file under `source_dir` whose relative path is the longest tail of `file`'s path
    (by whole path components, compared as text), among those named exactly like `file`; ties go to the
    first in sorted order. Links are not followed, files over MAX_SOURCE_BYTES are skipped."""
    wanted = [part for part in file.replace("\\", "/").split("/") if part not in ("", ".")]
    if not wanted or not source_dir.is_dir():
        return None
    best: tuple[int, str] | None = None
    found: Path | None = None
    seen = 0
    for folder, folders, names in os.walk(source_dir, followlinks=False):
        folders.sort()
        seen += len(names)
        if seen > MAX_SOURCE_FILES:
            break
        if wanted[-1] not in names:
            continue
        path = Path(folder) / wanted[-1]
        relative = path.relative_to(source_dir).parts
        common = 0
        while common < min(len(relative), len(wanted)) and relative[-1 - common] == wanted[-1 - common]:
            common += 1
        try:
            usable = path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SOURCE_BYTES
        except OSError:
            usable = False
        rank = (-common, "/".join(relative))
        if usable and (best is None or rank < best):
            best, found = rank, path
    return found


def _traced_python_source(run: Run, file: str) -> tuple[str, ...] | None:
    """The kernel's source a tritonparse trace carried (`ir_kernels.python_text_id`), padded to the file's lines."""
    kernels = compiler_data(run).kernels
    if "python_text_id" not in kernels.columns:
        return None
    found = kernels.filter((pl.col("python_file") == file) & pl.col("python_text_id").is_not_null())
    return tuple(ir_text(run, int(found["python_text_id"][0])).split("\n")) if found.height else None


def profile_runs_with_kernel(run: Run, kernel: str, limit: int = 20) -> tuple[str, ...]:
    """Runs of the same store holding a profiled kernel whose name contains this Triton kernel's name
    (newest first)."""
    store = RunStore.containing(run)
    with_kernels = tuple(info.id for info in store.list_runs() if "kernels" in info.evidence)[:limit]
    return _runs_with_kernel(run, kernel, with_kernels)


@per_run(maxsize=64)
def _runs_with_kernel(run: Run, kernel: str, run_ids: tuple[str, ...]) -> tuple[str, ...]:
    # Keyed by the runs present: a profile ingested later is found on the next visit.
    store = RunStore.containing(run)
    found = []
    for run_id in run_ids:
        hits = store.open(run_id).scan("kernels").filter(
            pl.col("name").str.contains(kernel, literal=True)).select(pl.len()).collect().item()
        if hits:
            found.append(run_id)
    return tuple(found)
