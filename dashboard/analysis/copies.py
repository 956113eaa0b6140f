"""Copies that cost more than they should: pageable host memory, synchronous copies, many small ones.

- pageable HtoD: a host-to-device copy from pageable memory (the memcpy
  table's src_kind); CUDA stages it through a pinned buffer, so it is slower
  and never overlaps compute. Pin the host tensor (`pin_memory=True`).
- synchronous: launched by a blocking cudaMemcpy (not ...Async), or a
  device-to-host copy into pageable memory (`.item()`, `.cpu()`, `.tolist()`):
  the CPU stops until the GPU has drained.
- small: fewer than SMALL_COPY_BYTES; each costs a launch and a fixed latency.

In the summary each copy counts in one class only, the first that applies in
that order (a small pageable copy is a pageable copy), so the classes' times
never add one copy twice.
"""

from __future__ import annotations

import polars as pl

SMALL_COPY_BYTES = 64 * 1024
SYNC_COPY_CALL_PATTERN = r"^cudaMemcpy(2D|3D)?$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$"
_KINDS = ("pageable HtoD", "synchronous", "small")


def copy_classes(memcpy: pl.DataFrame, api_calls: pl.DataFrame) -> pl.DataFrame:
    """Each copy (memsets left out) with booleans pageable_htod, synchronous, small and its duration_ns."""
    calls = api_calls.select(pl.col("rank").cast(pl.Int32), "correlation", pl.col("name").alias("call")).drop_nulls(
        "correlation").unique(["rank", "correlation"], keep="first")
    copies = memcpy.filter(pl.col("kind") != "Memset").with_columns(pl.col("rank").cast(pl.Int32)).join(
        calls, on=["rank", "correlation"], how="left")
    return copies.with_columns(
        ((pl.col("kind") == "HtoD") & (pl.col("src_kind") == "Pageable")).fill_null(False).alias("pageable_htod"),
        (pl.col("call").str.contains(SYNC_COPY_CALL_PATTERN).fill_null(False)
         | ((pl.col("kind") == "DtoH") & (pl.col("dst_kind") == "Pageable")).fill_null(False)).alias("synchronous"),
        (pl.col("bytes") < SMALL_COPY_BYTES).fill_null(False).alias("small"),
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"),
    )


def copy_summary(classes: pl.DataFrame) -> pl.DataFrame:
    """Per rank and class (pageable HtoD / synchronous / small; each copy in its first class): copies, bytes,
    time_ns, longest copy."""
    parts = []
    taken = pl.lit(False)
    for kind, column in zip(_KINDS, ("pageable_htod", "synchronous", "small"), strict=True):
        chosen = classes.filter(pl.col(column) & ~taken)
        taken = taken | pl.col(column)
        parts.append(chosen.group_by("rank").agg(
            pl.lit(kind).alias("class"), pl.len().cast(pl.Int64).alias("copies"),
            pl.col("bytes").sum().cast(pl.Int64).alias("bytes"), pl.col("duration_ns").sum().alias("time_ns"),
            pl.col("start_ns").sort_by("duration_ns").last().alias("longest_start_ns"),
            pl.col("end_ns").sort_by("duration_ns").last().alias("longest_end_ns"),
        ))
    return pl.concat(parts).sort("rank", "class")
