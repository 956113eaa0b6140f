"""tinygrad's VIZ files: `rewrites.pkl[.<user>]` (every graph rewrite) and `profile.pkl[.<user>]` (the timeline).

`VIZ=-1` (or `VIZ=1`) makes tinygrad write both at exit into its temp folder. Format reference:
tinygrad's `viz/serve.py` (the reader its own UI uses) and the project's spec of the files. A pair,
either file alone, or a folder holding them is one run; recognised by content (a pickle whose
globals are `tinygrad.*`), never by name, and paired by folder (and by the name's suffix when one
folder holds several runs' files). Each pair is a rank, numbered in path order.

Tables:
- rewrites.pkl -> `rewrite_contexts` (kernels and other contexts, each kernel's program: source,
  binary, sizes, estimates), `rewrite_steps`, `rewrite_matches`, `rewrite_uops` (`rewrites.py`);
- profile.pkl -> `kernels` (with FLOPs and bytes from the programs' estimates when rewrites.pkl
  is given), `memcpy`, `ranges` (compiler passes, Tensor API calls, graph batches, markers) and
  `device_memory` (`profile.py`).

How bad input is handled: nothing in the files is imported or run (`unpickle`); a file that asks
for anything else, a truncated or damaged pickle, or a pickle of something else is one IngestError
line naming the file. Damaged parts inside a readable file (a UOp row, a step, an event) are left
out and counted in a warning. Op names come from the release tables the project ships (`enums`),
the release chosen by the file's structure (`releases`); a warning says when none fits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn
from dashboard.collectors.safe_pickle import starts_a_pickle
from dashboard.collectors.tinygrad.unpickle import PROFILE, REWRITES, load

# A pickle's first global: STACK_GLOBAL's module string (protocol 4+: SHORT_BINUNICODE) or GLOBAL's line.
_TINYGRAD_GLOBAL = re.compile(rb"\x8c[\x08-\x40]tinygrad[.\x94]|ctinygrad[.\n]|X.\x00\x00\x00tinygrad[.]")
_PAIR_NAME = re.compile(r"^(?:rewrites|profile)(.*)$")


@dataclass
class _Pair:
    rewrites: tuple[Path, Any] | None = None
    profile: tuple[Path, Any] | None = None

    def first(self) -> str:
        return min(str(item[0]) for item in (self.rewrites, self.profile) if item is not None)


def _suffix(path: Path) -> str:
    """What pairs a file with its partner in a folder of several runs: `.pkl.alice` of `rewrites.pkl.alice`."""
    match = _PAIR_NAME.match(path.name.removesuffix(".gz"))
    return match.group(1) if match else path.name


def _pairs(loaded: Sequence[tuple[Path, str, Any]]) -> list[_Pair]:
    """Group files into runs: by folder, and within a folder holding several runs by the name's suffix."""
    by_folder: dict[Path, list[tuple[Path, str, Any]]] = {}
    for item in loaded:
        by_folder.setdefault(item[0].parent, []).append(item)
    groups: dict[tuple[Path, str], _Pair] = {}
    for folder, files in by_folder.items():
        kinds = [kind for _, kind, _ in files]
        crowded = kinds.count(REWRITES) > 1 or kinds.count(PROFILE) > 1
        for path, kind, value in sorted(files, key=lambda item: str(item[0])):
            pair = groups.setdefault((folder, _suffix(path) if crowded else ""), _Pair())
            if getattr(pair, kind) is not None:  # two of a kind under one name: each its own run
                pair = groups.setdefault((folder, str(path)), _Pair())
            setattr(pair, kind, (path, value))
    return sorted(groups.values(), key=_Pair.first)


class TinygradCollector:
    name = "tinygrad"
    description = "tinygrad VIZ files (rewrites.pkl / profile.pkl, written with VIZ=-1)"

    def sniff(self, probe: Probe) -> bool:
        head = probe.head
        if not starts_a_pickle(head):
            return False
        return _TINYGRAD_GLOBAL.search(head[:4096]) is not None

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        # The readers load pyarrow (~0.4 s): only when tinygrad files are ingested, not with the registry.
        from dashboard.collectors.tinygrad.profile import profile_tables
        from dashboard.collectors.tinygrad.profile_events import flatten
        from dashboard.collectors.tinygrad.rewrites import read_rewrites

        sources = sorted(Path(source) for source in sources)
        if not sources:
            raise IngestError("(no files)", "no tinygrad VIZ files were given")
        # Each file becomes its tables (or flat events) as soon as it is read, and its objects are dropped:
        # a 31 MB rewrites.pkl is ~0.5 GB of Python objects, and a folder may hold several runs.
        read: list[tuple[Path, str, Any]] = []
        warnings: list[str] = []
        for index, path in enumerate(sources):
            progress(0.8 * index / len(sources), f"reading {path.name}")
            kind, value = load(path)
            if kind == REWRITES:
                value = read_rewrites(value, path, 0)
                warnings += value.warnings
            else:
                value = flatten(value)
                if value.damaged:
                    warnings.append(f"{path}: {value.damaged:,} events that are not timeline events or whose "
                                    "times are damaged were left out")
            read.append((path, kind, value))
        tables: dict[str, list[pl.DataFrame]] = {}
        runs: list[dict[str, Any]] = []
        pairs = _pairs(read)
        for rank, pair in enumerate(pairs):
            progress(0.8 + 0.2 * rank / len(pairs), f"building the tables of run {rank}")
            run: dict[str, Any] = {"rank": rank}
            rewrites = None
            if pair.rewrites is not None:
                path, rewrites = pair.rewrites
                rewrites.tables = {table: frame.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
                                   for table, frame in rewrites.tables.items()}
                run.update(rewrites=str(path), release=rewrites.release,
                           contexts=rewrites.tables["rewrite_contexts"].height,
                           steps=rewrites.tables["rewrite_steps"].height,
                           matches=rewrites.tables["rewrite_matches"].height)
                for table, frame in rewrites.tables.items():
                    tables.setdefault(table, []).append(frame)
            if pair.profile is not None:
                path, flat = pair.profile
                found, profile_warnings = profile_tables(flat, rewrites, rank)
                warnings += [f"{path}: {warning}" for warning in profile_warnings]
                run.update(profile=str(path), events=flat.events)
                for table, frame in found.items():
                    tables.setdefault(table, []).append(frame)
            runs.append(run)
        progress(1.0, "done")
        joined = {table: pl.concat(frames, how="diagonal_relaxed") for table, frames in tables.items()}
        return Collected(tables={table: frame for table, frame in joined.items() if frame.height},
                         metadata={"runs": runs}, warnings=warnings)


COLLECTOR = TinygradCollector()
