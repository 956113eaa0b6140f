"""The collector's tables against tinygrad's own reading of the same VIZ files (`tinygrad_serve_reading.py`).

`serve_reading` runs that script with this interpreter (which must have tinygrad); `differences`
lists every count that differs, as the real-tinygrad and shared-sample tests check them.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

READER = Path(__file__).resolve().with_name("tinygrad_serve_reading.py")
HOST_ROWS = {"TINY", "USER", "GC"}


def serve_reading(rewrites: Path, profile: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(READER), str(rewrites), str(profile)], check=True,
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


def f32(value: float) -> float:
    """A duration as serve encodes it (a float32 of the µs)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def durations_us(frame: pl.DataFrame) -> list[float]:
    return [(end - start) / 1000 for start, end in frame.select("start_ns", "end_ns").iter_rows()]


def device_rows(serve: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {row: events for row, events in serve["rows"].items()
            if row not in HOST_ROWS and not row.endswith(" Graph") and ":COPY" not in row and ":SDMA" not in row}


def kernel_events(kernels: pl.DataFrame) -> Counter[tuple[str, float, int | None]]:
    """(name, float32 duration, FLOPS as serve computes it from our FLOPs) per kernel with a duration."""
    timed = kernels.filter(pl.col("end_ns") > pl.col("start_ns"))
    out: Counter[tuple[str, float, int | None]] = Counter()
    for name, duration, flops in zip(timed["name"], durations_us(timed), timed["flops"], strict=True):
        out[(name, f32(duration), None if flops is None else int(flops / (duration * 1e-6)))] += 1
    return out


def differences(tables: dict[str, pl.DataFrame], serve: dict[str, Any]) -> list[str]:
    """Every count of ours that is not tinygrad's: contexts, steps, matches, kernels (FLOPS where serve
    computes them), ranges per host and graph row, copies, allocations, frees and peaks."""
    found: list[str] = []
    empty = pl.DataFrame({"start_ns": [], "end_ns": []}, schema={"start_ns": pl.Int64, "end_ns": pl.Int64})
    contexts = tables.get("rewrite_contexts")
    if contexts is not None:
        contexts = contexts.sort("context")
        for column in ("name", "steps", "matches"):
            if contexts[column].to_list() != [c[column] for c in serve["contexts"]]:
                found.append(f"contexts' {column} differ")
    elif serve["contexts"]:
        found.append("no contexts")
    kernels = tables.get("kernels")
    for row, events in device_rows(serve).items():
        ours = kernel_events(kernels.filter(pl.col("device_name") == row)) if kernels is not None else Counter()
        theirs = Counter((e["name"], e["dur"], e["flops"]) for e in events)
        # serve computes FLOPS only for kernels it links by program key; ours also links HCQ graph entries by
        # name: a value of ours counts where serve has none, and must equal serve's where serve has one.
        relaxed: Counter[tuple[str, float, int | None]] = Counter()
        for (name, duration, flops), count in ours.items():
            relaxed[(name, duration, flops if (name, duration, flops) in theirs else None)] += count
        if relaxed != theirs:
            found.append(f"kernels of {row} differ")
    ranges = tables.get("ranges", empty).filter(pl.col("end_ns") > pl.col("start_ns"))
    for row, events in serve["rows"].items():
        if row in HOST_ROWS or row.endswith(" Graph"):
            ours = ranges.filter(pl.col("category") == row)
            if Counter(zip(ours["name"], map(f32, durations_us(ours)), strict=True)) != \
                    Counter((e["name"], e["dur"]) for e in events):
                found.append(f"ranges of {row} differ")
    copies = sum(len(events) for row, events in serve["rows"].items() if ":COPY" in row or ":SDMA" in row)
    if tables.get("memcpy", empty).filter(pl.col("end_ns") > pl.col("start_ns")).height != copies:
        found.append("copies differ")
    memory = tables.get("device_memory")
    for device, theirs in serve["memory"].items():
        ours = memory.filter(pl.col("device") == device) if memory is not None else pl.DataFrame()
        allocs = ours.filter(pl.col("action") == "alloc").height if ours.height else 0
        frees = ours.filter(pl.col("action") == "free").height if ours.height else 0
        peak = ours["allocated"].max() if ours.height else 0
        points = serve["points"].get(device, {})
        if (peak, allocs, frees) != (theirs["peak"], theirs["allocs"], points.get("free", 0)):
            found.append(f"memory of {device} differs")
    return found
