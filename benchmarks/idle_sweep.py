"""An independent check of the idle-time causes: plain Python over a Kineto trace's raw JSON events.

    python benchmarks/idle_sweep.py \
        ../shared/samples/kineto/kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz

Reads the trace with json (no collector, no canonical table, no polars) and
attributes every idle nanosecond of the GPU to one cause by the definitions
of dashboard/analysis/idle_causes.py, written again here from the events:
per gap, per elementary stretch between the boundaries of the host's
intervals, a direct containment test. Prints ns per cause, their sum and the
idle time, then the wall time of this sweep and of the dashboard's
(ingest + analysis) on the same file. The CI-only test
tests/analysis/test_idle_causes_shared.py states the numbers it printed.
One file = one rank.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import itertools
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KERNELS = {"Kernel", "kernel"}
COPIES = {"Memcpy", "gpu_memcpy", "Memset", "gpu_memset"}
API = {"Runtime", "cuda_runtime", "cuda_driver"}
CPU = {"Operator", "cpu_op", "user_annotation", "python_function"}
OPS = {"Operator", "cpu_op"}
SYNC_CALL = re.compile(r"^(cuda|cu)(Device|Stream|Event|Ctx)Synchroni[sz]e|^cudaMemcpy(2D|3D)?$|^cudaMemcpy(To|From)"
                       r"Symbol$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$")
SYNC_OP = re.compile(r"^aten::(item|_local_scalar_dense)$|^cuda(Device|Stream|Event)Synchroni[sz]e$")
DATA = re.compile(r"dataloader|load_?batch|wait_?for_?batch|next_?batch|get_?batch|data_?load|input_?pipeline"
                  r"|prefetch_?batch", re.IGNORECASE)
COMM = re.compile(r"^(?:nccl:|c10d::|record_param_comms|gloo:)|(?i:barrier)|ProcessGroup\w*::wait")
STEP = re.compile(r"^ProfilerStep#\d+")
BACK_TO_BACK_NS = 50_000
LAUNCH_LATENCY_NS = 50_000
CAUSES = ("data loading", "synchronisation", "launch-bound", "CPU-bound", "communication wait", "outside steps",
          "unknown")


def ns(value: float | int | str) -> int:
    """µs to ns as the collector does it: whole µs exactly (a float near 1.6e15 µs is an exact integer, but
    times 1000 it is not), plus the rounded fraction."""
    number = float(value)
    whole = math.floor(number)
    return int(whole) * 1000 + round((number - whole) * 1000)


def span(event: dict) -> tuple[int, int]:
    start = ns(event["ts"])
    return start, max(start, start + ns(event.get("dur", 0)))


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


class Cover:
    """A union of intervals that answers 'is t covered' and 'which boundaries fall in [a, b)'."""

    def __init__(self, intervals: list[tuple[int, int]]) -> None:
        self.pieces = [piece for piece in union(intervals) if piece[1] > piece[0]]
        self.starts = [a for a, _ in self.pieces]

    def covers(self, t: int) -> bool:
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and self.pieces[i][0] <= t < self.pieces[i][1]

    def cuts(self, a: int, b: int) -> list[int]:
        i = max(bisect.bisect_right(self.starts, a) - 1, 0)
        found = []
        while i < len(self.pieces) and self.pieces[i][0] < b:
            found += [t for t in self.pieces[i] if a < t < b]
            i += 1
        return found


def attribute(path: Path) -> dict[str, int]:
    """ns per cause for the trace at `path` (one rank), plus "idle" = the GPU's idle ns inside its span."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X" and "ts" in e]
    activity, calls, cpu = [], [], []
    for event in events:
        category = event.get("cat")
        if category in KERNELS or category in COPIES:
            activity.append((*span(event), event.get("args", {}).get("correlation"), event.get("name", "")))
        elif category in API:
            calls.append((*span(event), event.get("args", {}).get("correlation"), event["name"],
                          (event["pid"], str(event["tid"]))))
        elif category in CPU:
            cpu.append((*span(event), event["name"], category, (event["pid"], str(event["tid"]))))
    pieces = union([(a, b) for a, b, _, _ in activity])
    gaps = [(pieces[i][1], pieces[i + 1][0]) for i in range(len(pieces) - 1) if pieces[i + 1][0] > pieces[i][1]]
    correlations = {c for _, _, c, _ in activity if c is not None}
    launch_end: dict[int, int] = {}  # the first call of each correlation
    for _, end, c, _, _ in calls:
        if c is not None and c not in launch_end:
            launch_end[c] = end
    launches = [(a, b, thread) for a, b, c, _, thread in calls if c in correlations]
    threads = {thread for _, _, thread in launches} or {thread for *_, thread in cpu}
    ready_at: dict[int, int] = {}
    for start, _, c, _ in activity:
        if c in launch_end:
            ready_at[start] = max(ready_at.get(start, launch_end[c]), launch_end[c])
    sync_ends = sorted(b for a, b, _, name, _ in calls if SYNC_CALL.search(name)) + \
        [b for a, b, name, _, _ in cpu if SYNC_OP.search(name)]
    sync_ends.sort()
    dtoh_ends = {end for _, end, _, name in activity if name.startswith("Memcpy DtoH")}

    mine = [event for event in cpu if event[4] in threads]
    labels = {
        "data": Cover([(a, b) for a, b, name, _, _ in mine if DATA.search(name)]),
        "comm": Cover([(a, b) for a, b, name, _, _ in mine if COMM.search(name)]),
        "sync": Cover([(a, b) for a, b, _, name, t in calls if t in threads and SYNC_CALL.search(name)]
                      + [(a, b) for a, b, name, _, _ in mine if SYNC_OP.search(name)]),
        "step": Cover([(a, b) for a, b, name, _, _ in mine if STEP.search(name)]),
        "cpu": Cover([(a, b) for a, b, name, _, _ in mine if not STEP.search(name)]),
    }
    launching: list[tuple[int, int]] = []
    for thread in threads:
        starts = sorted(a for a, _, t in launches if t == thread)
        ops = union([(a, b) for a, b, name, category, t in mine
                     if t == thread and category in OPS and not STEP.search(name)])
        with_launch = [(a, b) for a, b in ops if bisect.bisect_left(starts, a) < len(starts)
                       and starts[bisect.bisect_left(starts, a)] < b]
        merged = union(with_launch + [(a, b) for a, b, t in launches if t == thread])
        launching += merged
        launching += [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1)
                      if 0 <= merged[i + 1][0] - merged[i][1] <= BACK_TO_BACK_NS]
    labels["launch"] = Cover(launching)
    has_steps = bool(labels["step"].pieces)

    totals = dict.fromkeys(CAUSES, 0)
    for start, end in gaps:
        ready = ready_at.get(end)
        until = end if ready is None else max(start, min(end, ready))
        j = bisect.bisect_right(sync_ends, end) - 1
        opened = (j >= 0 and sync_ends[j] >= start) or start in dtoh_ends
        cuts = sorted({start, until, *(t for cover in labels.values() for t in cover.cuts(start, until))})
        cuts = cuts if until > start else []
        for a, b in itertools.pairwise(cuts):
            on = {name: cover.covers(a) for name, cover in labels.items()}
            if on["data"]:
                cause = "data loading"
            elif on["comm"]:
                cause = "communication wait"
            elif on["sync"] or opened:
                cause = "synchronisation"
            elif has_steps and not on["step"]:
                cause = "outside steps"
            elif on["launch"]:
                cause = "launch-bound"
            elif on["cpu"] or on["step"]:
                cause = "CPU-bound"
            else:
                cause = "unknown"
            totals[cause] += b - a
        if ready is not None and ready < end:
            latency = ready >= start and end - ready <= LAUNCH_LATENCY_NS
            totals["launch-bound" if latency else "unknown"] += end - max(start, ready)
    totals["idle"] = sum(b - a for a, b in gaps)
    return totals


def dashboard_causes(path: Path) -> dict[str, int]:
    """The dashboard's own numbers for the same file (ingest + analysis), for the comparison."""
    import polars as pl

    from dashboard.analysis.insights import run_insights
    from dashboard.ingest.pipeline import ingest_paths
    from dashboard.store import RunStore

    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(Path(folder))
        run = store.open(ingest_paths(store, [path], name="idle-sweep"))
        causes = run_insights(run).idle_causes.filter(pl.col("rank") == pl.col("rank").min())
        return dict(causes.select("cause", "idle_ns").rows())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    sweep = attribute(args.trace)
    sweep_seconds = time.perf_counter() - started
    started = time.perf_counter()
    ours = dashboard_causes(args.trace)
    our_seconds = time.perf_counter() - started
    print(f"{'cause':<20} {'sweep ns':>14} {'dashboard ns':>14}")
    for cause in CAUSES:
        print(f"{cause:<20} {sweep[cause]:>14,} {ours.get(cause, 0):>14,}")
    print(f"{'sum':<20} {sum(sweep[c] for c in CAUSES):>14,} {sum(ours.values()):>14,}")
    print(f"{'GPU idle':<20} {sweep['idle']:>14,}")
    print(f"sweep {sweep_seconds:.2f} s (json + Python); dashboard {our_seconds:.2f} s (ingest + analysis)")
    return 0 if all(sweep[c] == ours.get(c, 0) for c in CAUSES) else 1


if __name__ == "__main__":
    sys.exit(main())
