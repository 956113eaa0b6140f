"""The tinygrad tables a run's compiler page reads, each read once per run, and the replays they feed.

`rewrite_tables` (contexts, steps, matches: small), `uop_columns` (one rank's UOp table as columns:
a million rows in the largest files, ~3 s to read, kept for the two most recent ranks), `step_replay`
(one step's graphs, replayed as far as they were asked for: kept for the eight most recent steps),
`pattern_source` (a matched pattern's line from the tinygrad installed here, when it is the file's
release: never the path the file names).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from dashboard.analysis.compare_rewrites import GraphDigests
from dashboard.analysis.compare_rewrites import Side as CompareSide
from dashboard.analysis.disassembly import Disassembly, disassemble
from dashboard.analysis.uop_graph import UOpColumns
from dashboard.analysis.uop_replay import StepReplay, step_spec
from dashboard.store import Run
from dashboard.views.cache import per_run

MAX_PATTERN_FILE_BYTES = 4_000_000


@dataclass(frozen=True)
class RewriteTables:
    contexts: pl.DataFrame  # rewrite_contexts without the program bodies (source, binary)
    steps: pl.DataFrame
    matches: pl.DataFrame
    release: str | None  # the release the file's structure fits (the collector's choice)

    def ranks(self) -> list[int]:
        return sorted(set(self.contexts["rank"].to_list())) or [0]


@per_run(maxsize=4)
def rewrite_tables(run: Run) -> RewriteTables:
    contexts = run.scan("rewrite_contexts").drop("source", "binary").sort("rank", "context").collect()
    steps = run.scan("rewrite_steps").sort("rank", "context", "step").collect()
    matches = run.scan("rewrite_matches").sort("rank", "context", "step", "match").collect()
    runs = run.info.metadata.get("tinygrad", {}).get("runs", [])
    release = next((item.get("release") for item in runs if isinstance(item, dict) and item.get("release")), None)
    return RewriteTables(contexts, steps, matches, release)


@per_run(maxsize=2)
def uop_columns(run: Run, rank: int) -> UOpColumns:
    return UOpColumns(run.scan("rewrite_uops").filter(pl.col("rank") == rank).collect())


@per_run(maxsize=8)
def step_replay(run: Run, rank: int, context: int, step: int) -> StepReplay | None:
    tables = rewrite_tables(run)
    spec = step_spec(tables.steps, tables.matches, rank, context, step)
    return StepReplay(uop_columns(run, rank), spec) if spec is not None else None


@per_run(maxsize=16)
def program_row(run: Run, rank: int, context: int) -> dict | None:
    """A kernel context's program columns (source and binary included), None for other contexts."""
    found = run.scan("rewrite_contexts").filter((pl.col("rank") == rank) & (pl.col("context") == context)
                                                & pl.col("codegen")).collect()
    return found.row(0, named=True) if found.height else None


@per_run(maxsize=16)
def program_disassembly(run: Run, rank: int, context: int) -> Disassembly:
    row = program_row(run, rank, context)
    return disassemble(row.get("binary") if row else None)


@lru_cache(maxsize=1)
def installed_tinygrad() -> tuple[Path, str] | None:
    """The tinygrad package folder and release installed here (found, never imported), or None."""
    spec = importlib.util.find_spec("tinygrad")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        version = importlib.metadata.version("tinygrad")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve(), version


@lru_cache(maxsize=256)
def _package_lines(relative: str) -> tuple[str, ...] | None:
    installed = installed_tinygrad()
    if installed is None:
        return None
    root = installed[0]
    candidate = (root / relative).resolve()
    if candidate.suffix != ".py" or not candidate.is_relative_to(root):
        return None
    try:
        if not candidate.is_file() or candidate.stat().st_size > MAX_PATTERN_FILE_BYTES:
            return None
        return tuple(candidate.read_text(encoding="utf-8", errors="replace").split("\n"))
    except OSError:
        return None


def pattern_source(file: str | None, line: int | None, release: str | None) -> str | None:
    """The source line of a pattern at `file:line` (tinygrad's own code), read from the tinygrad installed on
    this server when it is the file's release, so the line numbers are the same; None otherwise."""
    installed = installed_tinygrad()
    if not file or line is None or line < 1 or installed is None or release is None or installed[1] != release:
        return None
    parts = Path(file).parts
    if "tinygrad" not in parts:
        return None
    relative = "/".join(parts[len(parts) - parts[::-1].index("tinygrad"):])  # after the last `tinygrad/`
    lines = _package_lines(relative)
    return lines[line - 1].strip() if lines is not None and line <= len(lines) else None


@per_run(maxsize=2)
def graph_digests(run: Run, rank: int) -> GraphDigests:
    """Digests of the rank's graphs, filled as comparisons ask for them (kept with the run)."""
    return GraphDigests(uop_columns(run, rank))


def compare_side(run: Run, rank: int | None) -> CompareSide:
    """One run's part of a rewrite comparison (`analysis.compare_rewrites`): one rank, the first by default."""
    tables = rewrite_tables(run)
    chosen = rank if rank is not None and rank in tables.ranks() else tables.ranks()[0]
    kernels = run.scan("kernels").filter(pl.col("rank") == chosen).select("name", "start_ns", "end_ns").collect()
    return CompareSide(tables.contexts.filter(pl.col("rank") == chosen),
                       tables.steps.filter(pl.col("rank") == chosen), kernels, graph_digests(run, chosen).of)
