"""Ingest speed of the Tenstorrent runtime-log collector on a generated 100 k-op log.

    python benchmarks/tt_ingest.py [--ops 100000] [--repeat 3] [--folder DIR]

Generates the demo run at the given size (~600 k lines, ~170 MB at 100 k ops),
times `tt_memory.COLLECTOR.collect` on the log (the whole path: read, parse,
tables) and a per-line Python reference parser in the style of the profiler's
own v0 parser, and prints MB/s for both and their ratio. Target: >= 50 MB/s.
CPU seconds are printed too: on a shared machine wall time includes waiting.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from scratch import work_folder

from dashboard.collectors.base import no_progress
from dashboard.collectors.tt.collector import COLLECTOR
from dashboard.demo import tt_memory_log

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VIEW = re.compile(r"Device (\w+) memory state: MemoryView\{numBanks: (\d+), totalBytesPerBank: ([\d.]+) MB, "
                   r"totalBytesAllocatedPerBank: ([\d.]+) MB, totalBytesFreePerBank: ([\d.]+) MB, "
                   r"largestContiguousBytesFreePerBank: ([\d.]+) MB\}")
_OP = re.compile(r"Executing operation: (?:(%[\w:#]+) = )?\"?([\w.]+)\"?\(")


def reference_parse(path: Path) -> int:
    """A per-line state machine like tt-swiss's parser.py: the peer we compare against."""
    ops: list[dict] = []
    current: dict | None = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            line = _ANSI.sub("", raw)
            if "Executing operation:" in line and "RuntimeTTNN" in line:
                match = _OP.search(line)
                current = {"mlir_op": match.group(2) if match else None, "memory": {}}
                ops.append(current)
            elif current is not None and " memory state: MemoryView{" in line:
                view = _VIEW.search(line)
                if view:
                    current["memory"][view.group(1)] = [float(v) for v in view.groups()[1:]]
    return len(ops)


def _timed(action) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", type=Path, help="keep the generated run here (default: a temp folder)")
    args = parser.parse_args()
    with work_folder(args.folder) as folder:
        started = time.perf_counter()
        run = tt_memory_log.write(folder, n_ops=args.ops, with_json=False)[0]
        log = next(run.glob("*_profile.log"))
        size_mb = log.stat().st_size / 1e6
        with open(log, "rb") as handle:
            lines = sum(1 for _ in handle)
        print(f"generated {log.name}: {size_mb:.1f} MB, {lines:,} lines in {time.perf_counter() - started:.1f} s")
        best = (float("inf"), float("inf"))
        for _ in range(args.repeat):
            wall, cpu, collected = _timed(lambda: COLLECTOR.collect([log], no_progress))
            best = (min(best[0], wall), min(best[1], cpu))
        ops = collected.tables["op_meta"].height  # type: ignore[attr-defined]
        print(f"tt_memory collector: {ops:,} ops, best of {args.repeat}: {best[0]:.2f} s wall "
              f"({size_mb / best[0]:.0f} MB/s), {best[1]:.2f} s CPU ({size_mb / best[1]:.0f} MB/s per CPU-second)")
        wall, cpu, count = _timed(lambda: reference_parse(log))
        print(f"per-line Python reference: {count:,} ops, {wall:.2f} s wall ({size_mb / wall:.0f} MB/s), "
              f"{cpu:.2f} s CPU")
        print(f"speed-up over the reference: {wall / best[0]:.1f}x wall; target >= 50 MB/s: "
              f"{'met' if size_mb / best[0] >= 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
