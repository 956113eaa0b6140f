"""Rows that cannot be right are dropped and counted, never kept silently.

Every collector's canonical tables pass through `drop_impossible_rows` (from
`collectors.registry.collect`) before they are merged, so one set of rules
holds for every format:

* a time more than 10 years away from the trace's base (the median start of
  all its timed rows, which a few wild values cannot move) is a corrupt
  value, not an event: a flipped bit, `-2**63`, a clock field read as ns;
* an interval that ends before it starts has a negative duration, which
  would subtract from every total it enters;
* a negative byte count is not a size.

A negative size beside a row's main facts (a kernel's shared memory, an op's
free bytes) clears that value, not the row: the kernel ran, only that field
is unreadable. `FILE: 2 kernels have a negative shared_memory; cleared`.

Each rule is a polars expression evaluated once per table; a row is counted
under the first rule it breaks. Warnings read
`FILE: 144 kernels end before they start; dropped`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

TEN_YEARS_NS = int(10 * 365.25 * 24 * 3600 * 1_000_000_000)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1

# Sizes that are a row's detail, not its substance: a negative one is cleared (null) and counted.
# Per table. device_memory's totals are checked only on rows with absolute totals: a relative curve (a
# running sum from the trace's start) goes below zero when the trace opens with frees.
DETAIL_SIZE_COLUMNS: dict[str, tuple[str, ...]] = {
    "kernels": ("shared_memory",),
    "device_memory": ("allocated", "reserved"),
    "op_memory": ("total_per_bank", "allocated_per_bank", "free_per_bank", "largest_free_per_bank", "total",
                  "allocated", "free", "largest_free", "unpadded_bytes", "padded_bytes"),
    "memory_segments": ("size",),
}

# (singular, plural) of what one row of a table is.
ROW_NOUNS: dict[str, tuple[str, str]] = {
    "kernels": ("kernel", "kernels"),
    "memcpy": ("copy", "copies"),
    "ranges": ("range", "ranges"),
    "api_calls": ("API call", "API calls"),
    "stack": ("stack frame", "stack frames"),
    "ws_buffers": ("planner buffer", "planner buffers"),
    "device_memory": ("allocator event", "allocator events"),
}


def rows_of(table: str, count: int) -> str:
    """`1 kernel`, `5,117 kernels`, `3 rows of op_memory`."""
    singular, plural = ROW_NOUNS.get(table, (f"row of {table}", f"rows of {table}"))
    return f"{count:,} {singular if count == 1 else plural}"


def _is_timed(frame: pl.DataFrame) -> bool:
    return "start_ns" in frame.columns and frame.schema["start_ns"].is_integer()


def trace_base_ns(tables: Mapping[str, pl.DataFrame]) -> int | None:
    """The median start over every timed row: the time most of the trace is near."""
    return base_of_starts([frame.get_column("start_ns") for frame in tables.values() if _is_timed(frame)])


def base_of_starts(starts: Sequence[pl.Series]) -> int | None:
    """The median of start times (ns) given as columns: `trace_base_ns` before the tables exist (a collector
    that hands its tables over one by one gives the starts of all its rows first)."""
    if not starts:
        return None
    median = pl.concat([start.cast(pl.Int64) for start in starts]).median()
    return None if median is None else int(median)  # type: ignore[arg-type]


def _clamped(value: int) -> int:
    return min(max(value, _I64_MIN), _I64_MAX)


def _rules(frame: pl.DataFrame, base: int | None) -> list[tuple[str, pl.Expr]]:
    """(what is wrong, True where the row breaks the rule), in order of precedence."""
    rules: list[tuple[str, pl.Expr]] = []
    columns = frame.columns
    times = [c for c in ("start_ns", "end_ns") if c in columns and frame.schema[c].is_integer()]
    if base is not None and times:
        # Compared with bounds, not subtracted: `start_ns - base` overflows at -2**63.
        low, high = pl.lit(_clamped(base - TEN_YEARS_NS)), pl.lit(_clamped(base + TEN_YEARS_NS))
        far = pl.any_horizontal([(pl.col(c) < low) | (pl.col(c) > high) for c in times]).fill_null(False)
        rules.append(("more than 10 years away from the rest of the trace", far))
    if "start_ns" in times and "end_ns" in times:
        rules.append(("end before they start", (pl.col("end_ns") < pl.col("start_ns")).fill_null(False)))
    if "bytes" in columns and frame.schema["bytes"].is_numeric():
        rules.append(("have a negative byte count", (pl.col("bytes") < 0).fill_null(False)))
    return rules


def _wording(table: str, count: int, problem: str) -> str:
    rows = rows_of(table, count)
    if problem == "end before they start" and count == 1:
        problem = "ends before it starts"
    elif problem.startswith("have ") and count == 1:
        problem = "has " + problem[len("have "):]
    elif problem.startswith("more than"):
        problem = ("starts or ends " if count == 1 else "start or end ") + problem
    return f"{rows} {problem}; dropped"


def drop_impossible_rows(
    tables: Mapping[str, pl.DataFrame], source: str, base: int | None = None
) -> tuple[dict[str, pl.DataFrame], list[str]]:
    """The tables without rows that cannot be right, and one warning per rule and table that dropped any.

    `base` is the time the trace is near (`trace_base_ns` of these tables unless given: a table handed
    over alone is judged against the whole trace's base).
    """
    base = trace_base_ns(tables) if base is None else base
    kept: dict[str, pl.DataFrame] = {}
    warnings: list[str] = []
    for table, frame in tables.items():
        rules = _rules(frame, base)
        if not rules or frame.height == 0:
            kept[table] = frame
            continue
        # The first rule a row breaks is the one it is counted under.
        earlier = pl.lit(False)
        counted = []
        for index, (_, broken) in enumerate(rules):
            counted.append((broken & ~earlier).sum().alias(str(index)))
            earlier = earlier | broken
        counts = frame.select(counted).row(0)
        if any(counts):
            for (problem, _), count in zip(rules, counts, strict=True):
                if count:
                    warnings.append(f"{source}: {_wording(table, count, problem)}")
            frame = frame.filter(~earlier)
        kept[table] = frame
    for table, frame in kept.items():
        kept[table], cleared = _clear_negative_sizes(frame, table, source)
        warnings.extend(cleared)
    return kept, warnings


def _clear_negative_sizes(frame: pl.DataFrame, table: str, source: str) -> tuple[pl.DataFrame, list[str]]:
    sizes = [c for c in DETAIL_SIZE_COLUMNS.get(table, ()) if c in frame.columns and frame.schema[c].is_numeric()]
    if not sizes or frame.height == 0:
        return frame, []
    checked = ~pl.col("relative").fill_null(False) if "relative" in frame.columns else pl.lit(True)
    counts = frame.select([((pl.col(c) < 0) & checked).fill_null(False).sum().alias(c) for c in sizes]).row(0)
    negative = [(column, count) for column, count in zip(sizes, counts, strict=True) if count]
    if not negative:
        return frame, []
    frame = frame.with_columns([pl.when((pl.col(c) < 0) & checked).then(None).otherwise(pl.col(c)).alias(c)
                                for c, _ in negative])
    warnings = [f"{source}: {rows_of(table, count)} {'has' if count == 1 else 'have'} a negative {column}; cleared"
                for column, count in negative]
    return frame, warnings
