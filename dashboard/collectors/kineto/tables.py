"""Normalise decoded Kineto frames: ns times, ranks, validity, duplicates.

Per file: µs -> ns by rounding (the integer and fractional parts of `ts` are
converted separately, so epoch-scale timestamps keep their precision) plus
`baseTimeNanoseconds` when present; events without a name, `ts` or `dur`
are skipped, negative durations dropped, exact duplicates removed, each
counted in a warning. Across files: every file gets its rank and a file
index; joins between events (correlation, External id, threads) stay within
one file, so two files of the same rank never mix their id spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import IngestError
from dashboard.collectors.kineto.decode import DecodedTrace
from dashboard.collectors.rank_names import rank_from_name

# `rank` is Int32 in every table.
MAX_RANK = 2**31 - 1
# Bounds that keep base + ts + dur inside int64 ns (3e18 ns is about 95 years):
# a value beyond them is a corrupt field, not a time.
MAX_US = 3e15
MAX_BASE_NS = 3 * 10**18

KINDS = ("gpu", "api", "range", "flow", "memory")


@dataclass
class Events:
    """All files' events, one frame per kind, times in ns, with `file` and `rank`."""

    frames: dict[str, pl.DataFrame]
    warnings: list[str] = field(default_factory=list)


def _info_rank(trace: DecodedTrace) -> int | None:
    """`distributedInfo.rank` as a number, whatever its size; None when absent or not a number."""
    info = trace.top.get("distributedInfo")
    if isinstance(info, dict):
        rank = info.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
            return rank
        if isinstance(rank, str) and rank.isdigit():
            return int(rank)
    return None


def _usable(rank: int | None) -> int | None:
    return rank if rank is not None and rank <= MAX_RANK else None


def _declared_rank(trace: DecodedTrace) -> int | None:
    rank = _usable(_info_rank(trace))
    return rank if rank is not None else _usable(rank_from_name(trace.path))


def assign_ranks(traces: Sequence[DecodedTrace]) -> tuple[list[int], list[str]]:
    """A rank per file: distributedInfo, else the file name, else the next unused index."""
    declared = [_declared_rank(trace) for trace in traces]
    used = {rank for rank in declared if rank is not None}
    warnings = []
    for trace in traces:
        for source, rank in (("distributedInfo", _info_rank(trace)), ("the file name", rank_from_name(trace.path))):
            if rank is not None and rank > MAX_RANK:
                warnings.append(f"{trace.path}: rank {rank} in {source} is beyond the largest usable rank "
                                f"({MAX_RANK:,}); ignored")
    ranks = []
    next_free = 0
    for trace, rank in zip(traces, declared, strict=True):
        if rank is None:
            while next_free in used:
                next_free += 1
            rank = next_free
            used.add(rank)
            if len(traces) > 1:
                warnings.append(f"{trace.path}: no rank in distributedInfo or the file name; using rank {rank}")
        ranks.append(rank)
    seen: dict[int, Path] = {}
    for trace, rank in zip(traces, ranks, strict=True):
        if rank in seen:
            warnings.append(
                f"{trace.path}: rank {rank} is also claimed by {seen[rank].name}; both are kept under rank {rank}"
            )
        seen.setdefault(rank, trace.path)
    return ranks, warnings


def _ns(column: str, base: int) -> pl.Expr:
    """µs (float) -> ns (int), rounding, without losing precision at epoch scale."""
    whole = pl.col(column).floor()
    fraction_ns = ((pl.col(column) - whole) * 1000.0).round(0)
    return whole.cast(pl.Int64) * 1000 + fraction_ns.cast(pl.Int64) + base


def _base_ns(trace: DecodedTrace) -> int:
    base = trace.top.get("baseTimeNanoseconds")
    if isinstance(base, float) and base.is_integer():
        base = int(base)
    if not isinstance(base, int) or isinstance(base, bool):
        return 0
    if abs(base) > MAX_BASE_NS:
        raise IngestError(trace.path, f"`baseTimeNanoseconds` is {base}, not a time in ns "
                                      "(where: the top-level baseTimeNanoseconds field)")
    return base


# Columns whose repeats make rows suspects of exact duplication. Ranges: nested ops often start in the
# same µs, so the time alone repeats for most of them.
_DUPLICATE_PROBES = {"gpu": ["correlation"], "api": ["correlation"], "range": ["ts", "dur", "tid_key"],
                     "flow": ["ts"]}


def _drop_exact_duplicates(frame: pl.DataFrame, probe: Sequence[str]) -> tuple[pl.DataFrame, int]:
    """Keep the first of events that are equal in every column; (frame, number removed).

    A full-row `unique` over millions of rows is slow, so only rows whose
    `probe` values (correlation; time, duration and thread) repeat are compared in full.
    """
    key = pl.col(probe[0]) if len(probe) == 1 else pl.struct(probe).hash()  # a collision only adds a suspect
    values = frame.select(key).to_series()
    if values.null_count() == 0 and values.n_unique() == frame.height:
        return frame, 0
    indexed = frame.with_row_index("_row")
    suspects = indexed.filter(values.is_duplicated())
    repeats = suspects.filter(~pl.struct(pl.exclude("_row")).is_first_distinct()).get_column("_row")
    if repeats.len() == 0:
        return frame, 0
    return indexed.filter(~pl.col("_row").is_in(repeats.implode())).drop("_row"), repeats.len()


def _clean(frame: pl.DataFrame, kind: str, path: Path, base: int, warnings: list[str]) -> pl.DataFrame:
    if frame.height == 0:
        return frame
    what = {"gpu": "GPU events", "api": "runtime calls", "range": "ranges", "flow": "flow events",
            "memory": "memory events"}[kind]
    instant = kind in ("flow", "memory")
    required = ["ts"] if instant else ["name", "ts", "dur"]
    missing = frame.select(pl.any_horizontal(pl.col(c).is_null() for c in required)).to_series()
    if missing.any():
        count = int(missing.sum())
        warnings.append(f"{path}: skipped {count} {what} without {', '.join(f'`{c}`' for c in required)}")
        frame = frame.filter(~missing)
    timed = ["ts"] if instant else ["ts", "dur"]
    unusable = frame.select(
        pl.any_horizontal(~pl.col(c).is_finite() | (pl.col(c).abs() > MAX_US) for c in timed)
    ).to_series()
    if unusable.any():
        fields = " or ".join(f"`{c}`" for c in timed)
        warnings.append(f"{path}: dropped {int(unusable.sum())} {what} whose {fields} is not a usable time "
                        "(not finite, or beyond ±95 years)")
        frame = frame.filter(~unusable)
    if not instant:
        negative = frame.get_column("dur") < 0
        if negative.any():
            warnings.append(f"{path}: dropped {int(negative.sum())} {what} with a negative `dur`")
            frame = frame.filter(~negative)
    if kind == "memory":
        # No duplicate removal: an alloc, free and alloc of one address within a µs are three real events.
        return frame.with_columns(_ns("ts", base).alias("start_ns")).drop("ts")
    frame, removed = _drop_exact_duplicates(frame, _DUPLICATE_PROBES[kind])
    if removed:
        warnings.append(f"{path}: removed {removed} exact duplicate {what}")
    start = _ns("ts", base).alias("start_ns")
    if kind == "flow":
        return frame.with_columns(start).drop("ts")
    return frame.with_columns(start).with_columns(
        (pl.col("start_ns") + (pl.col("dur") * 1000.0).round(0).cast(pl.Int64)).alias("end_ns")
    ).drop("ts", "dur")


def normalise(traces: Sequence[DecodedTrace], ranks: Sequence[int]) -> Events:
    """One frame per kind over all files, cleaned, with ns times, `file` and `rank`."""
    warnings: list[str] = []
    parts: dict[str, list[pl.DataFrame]] = {kind: [] for kind in KINDS}
    for index, (trace, rank) in enumerate(zip(traces, ranks, strict=True)):
        for problem, count in sorted(trace.problems.items()):
            warnings.append(f"{trace.path}: {count} {problem}")
        base = _base_ns(trace)
        for kind in KINDS:
            frame = trace.frames.get(kind)
            if frame is None or frame.height == 0:
                continue
            frame = _clean(frame, kind, trace.path, base, warnings)
            parts[kind].append(
                frame.with_columns(pl.lit(index, pl.Int32).alias("file"), pl.lit(rank, pl.Int32).alias("rank"))
            )
    frames = {
        kind: pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame() for kind, frames in parts.items()
    }
    return Events(frames=frames, warnings=warnings)


def file_metadata(trace: DecodedTrace, rank: int) -> dict[str, Any]:
    """What the run keeps about one file: its rank and the producer's top-level fields."""
    meta: dict[str, Any] = {"path": str(trace.path), "rank": rank, "events": trace.events}
    for key in ("schemaVersion", "distributedInfo", "deviceProperties", "baseTimeNanoseconds", "traceName"):
        if key in trace.top:
            meta[key] = trace.top[key]
    return meta
