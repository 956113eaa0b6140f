"""CUDA allocator memory (`device_memory`) of two runs: per device, peak allocated and peak reserved, B − A.

Devices are matched within one rank of each side (the side's rank when it
has memory events there, else its first): by name when the sides share a
device name (`cuda:0` of A faces `cuda:0` of B), else by device index, in
order (rank 0's `cuda:0` faces rank 1's `cuda:1`: one GPU per rank, each its
own). `device_a` / `device_b` name each side's device; `device` both ("cuda:0 ↔
cuda:1" when they differ). Per device and side (`cuda_findings.device_peaks`):

* peak allocated: the highest `allocated`, and its culprit: the op
  (snapshots: the Python frame) whose live allocations hold the most bytes
  there, with those bytes;
* peak reserved: the highest `reserved` anywhere in the trace (null when the
  source gives no allocator totals);
* delta = B − A in bytes, change = delta / A (null when A is 0 or absent);
* peak_time_ns: the peak on the run's clock (the /memory link's `at`), at_ns:
  the same from the device's first memory event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from dashboard.analysis.cuda_findings import DevicePeak, device_capacities, device_peaks
from dashboard.store import Run

_SIDE_COLUMNS = ("peak_allocated", "peak_reserved", "culprit", "culprit_bytes", "peak_time_ns", "at_ns", "relative",
                 "fragmentation_at_peak")


def _device_index_of(column: str) -> pl.Expr:
    return pl.col(column).str.extract(r"(\d+)$").cast(pl.Int64, strict=False)


_device_index = _device_index_of("device")


def cuda_rank(run: Run, wanted: int | None) -> int:
    """The device_memory rank a side shows: the wanted one when it has it, else its first."""
    ranks = sorted(run.scan("device_memory").select(pl.col("rank").unique()).collect().get_column("rank").to_list())
    return wanted if wanted in ranks else (ranks[0] if ranks else 0)


def _side(peaks: list[DevicePeak], suffix: str) -> pl.DataFrame:
    schema = {"device": pl.String, "peak_allocated": pl.Int64, "peak_reserved": pl.Int64, "culprit": pl.String,
              "culprit_bytes": pl.Int64, "peak_time_ns": pl.Int64, "at_ns": pl.Int64, "relative": pl.Boolean,
              "fragmentation_at_peak": pl.Float64}
    rows = [(p.device, p.allocated, p.peak_reserved, p.culprit, p.culprit_bytes, p.time_ns, p.since_start_ns,
             p.relative, p.fragmentation) for p in peaks]
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.rename({name: f"{name}_{suffix}" for name in _SIDE_COLUMNS})


def _change(delta: str, base: str) -> pl.Expr:
    return pl.when(pl.col(base) > 0).then(pl.col(delta) / pl.col(base)).otherwise(None)


def peak_deltas(events_a: pl.DataFrame, segments_a: pl.DataFrame, events_b: pl.DataFrame,
                segments_b: pl.DataFrame, capacities_a: Mapping[tuple[int, str], int] | None = None,
                capacities_b: Mapping[tuple[int, str], int] | None = None) -> pl.DataFrame:
    """One row per CUDA device on either side (each side's frames already one rank): `<column>_a`,
    `<column>_b` for the side columns, delta / change of peak allocated and peak reserved."""
    a = _side(device_peaks(events_a, segments_a, capacities_a), "a")
    b = _side(device_peaks(events_b, segments_b, capacities_b), "b")
    names_a, names_b = set(a.get_column("device").to_list()), set(b.get_column("device").to_list())
    if names_a & names_b or not names_a or not names_b:
        joined = a.join(b, on="device", how="full", coalesce=True).with_columns(
            pl.when(pl.col("peak_allocated_a").is_not_null()).then(pl.col("device")).alias("device_a"),
            pl.when(pl.col("peak_allocated_b").is_not_null()).then(pl.col("device")).alias("device_b"))
    else:  # no device name in common (rank against rank): the i-th device of each side, by index
        def slotted(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
            return frame.sort(_device_index, "device").with_row_index("slot").rename({"device": f"device_{suffix}"})

        joined = slotted(a, "a").join(slotted(b, "b"), on="slot", how="full", coalesce=True).drop("slot").with_columns(
            pl.when(pl.col("device_a").is_null()).then(pl.col("device_b"))
            .when(pl.col("device_b").is_null()).then(pl.col("device_a"))
            .otherwise(pl.format("{} ↔ {}", "device_a", "device_b")).alias("device"))
    return joined.with_columns(
        (pl.col("peak_allocated_b") - pl.col("peak_allocated_a")).alias("allocated_delta"),
        (pl.col("peak_reserved_b") - pl.col("peak_reserved_a")).alias("reserved_delta"),
    ).with_columns(
        _change("allocated_delta", "peak_allocated_a").alias("allocated_change"),
        _change("reserved_delta", "peak_reserved_a").alias("reserved_change"),
    ).sort(pl.coalesce(_device_index_of("device_a"), _device_index_of("device_b")), "device", nulls_last=True)


def run_peak_deltas(run_a: Run, run_b: Run, rank_a: int | None, rank_b: int | None) -> tuple[pl.DataFrame, int, int]:
    """(peak_deltas of the two runs, the rank of A and of B it compares)."""
    rank_a, rank_b = cuda_rank(run_a, rank_a), cuda_rank(run_b, rank_b)

    def side(run: Run, rank: int) -> tuple[pl.DataFrame, pl.DataFrame]:
        segments = run.frame("memory_segments")
        return (run.frame("device_memory").filter(pl.col("rank") == rank),
                segments.filter(pl.col("rank") == rank) if segments.height else segments)

    deltas = peak_deltas(*side(run_a, rank_a), *side(run_b, rank_b), device_capacities(run_a.info.metadata),
                         device_capacities(run_b.info.metadata))
    return deltas, rank_a, rank_b


def cuda_memory_section(run_a: Run, run_b: Run, rank_a: int | None, rank_b: int | None) -> dict[str, Any]:
    """The `compare` report's CUDA memory section: the ranks compared and a row per device (JSON-safe)."""
    deltas, rank_a, rank_b = run_peak_deltas(run_a, run_b, rank_a, rank_b)
    rows = [{key: None if isinstance(value, float) and not math.isfinite(value) else value
             for key, value in row.items()} for row in deltas.to_dicts()]
    return {"rank_a": rank_a, "rank_b": rank_b, "devices": rows}
