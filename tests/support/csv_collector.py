"""A tiny real collector (CSV of kernel rows) that exercises the registry contract in tests.

It parses for real with polars; it exists so store/registry/CLI tests do not
depend on any one evidence collector.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn

HEADER = "kernel_csv,name,start_ns,end_ns"


class KernelCsvCollector:
    name = "kernel_csv"
    description = "kernel CSV (test format)"

    def sniff(self, probe: Probe) -> bool:
        return probe.text.startswith(HEADER)

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        frames = []
        for rank, source in enumerate(sources):
            try:
                frame = pl.read_csv(source).drop("kernel_csv")
            except pl.exceptions.PolarsError as exc:
                raise IngestError(source, f"bad kernel CSV ({exc})") from None
            frames.append(frame.with_columns(pl.lit(rank).alias("rank")))
            progress((rank + 1) / len(sources), f"read {source.name}")
        return Collected(tables={"kernels": pl.concat(frames)}, metadata={"files": len(sources)})


def write_kernel_csv(path: Path, rows: int = 5) -> Path:
    lines = [HEADER] + [f"x,k{i % 3},{i * 10},{i * 10 + 7}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path
