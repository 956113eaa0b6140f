"""How fast planner dumps load: the triton_ws collector against the 50 ms target, and pydot as a peer.

Usage: python benchmarks/ws_parse.py [--repeat N] [--pydot]

Inputs come from the project's own generator (dashboard.demo.ws_dumps):
* a three-file group (smem_liveness, combined_graph, tmem_liveness) of a bit over 40 KB
  (the FA-forward-like kernel with 5 Q sub-tiles, 46 KB), the issue's target: <= 50 ms
  for the whole `collect` (read, cut blocks, DOT grammar, planner semantics,
  polars tables);
* the 2-sub-tile demo group (~20 KB) and a 2000-op combined graph (~370 KB).
Times are the best and the median of N runs in this process (warm imports).
With --pydot and pydot importable, the DOT layer is compared against
`pydot.graph_from_dot_data` on the same cut blocks (pydot is not a project
dependency; install it anywhere on PYTHONPATH to get the ratio).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dashboard.collectors.base import no_progress
from dashboard.collectors.dot.grammar import parse_dot
from dashboard.collectors.triton_ws.blocks import find_blocks
from dashboard.collectors.triton_ws.collector import COLLECTOR
from dashboard.demo import ws_dumps
from dashboard.demo.ws_dump_text import combined_graph

TARGET_MS = 50.0


def _timed(run: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """(best wall ms, median wall ms, best CPU ms); CPU time shows through a busy machine."""
    run()  # warm caches (compiled regexes, lark tables)
    wall, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return min(wall), statistics.median(wall), min(cpu)


def _blocks(files: list[Path]) -> list[str]:
    return [block.text for path in files for block in find_blocks(path.read_text(), path)[0]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--pydot", action="store_true", help="also time pydot on the ~40 KB group")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        cases: dict[str, list[Path]] = {}
        for label, sub_tiles in (("demo group", 2), ("target group", 5)):
            kernel = ws_dumps.attention_kernel(sub_tiles=sub_tiles)
            cases[label] = ws_dumps.write_dump_folder(root / label.replace(" ", "_"), [(kernel, True)])
        big = root / "big" / "combined_graph_0.dot"
        big.parent.mkdir()
        big.write_text(combined_graph(ws_dumps.attention_kernel(sub_tiles=70)))
        cases["2000-op combined graph"] = [big]

        print(f"{'input':<24} {'KB':>7} {'ops':>6} {'collect best':>13} {'median':>8} {'cpu best':>9} "
              f"{'DOT layer best':>15}")
        results = {}
        for label, files in cases.items():
            size_kb = sum(f.stat().st_size for f in files) / 1024
            ops = COLLECTOR.collect(files, no_progress).tables["ws_ops"].height
            repeat = args.repeat if size_kb < 200 else max(3, args.repeat // 5)
            best, median, cpu = _timed(lambda files=files: COLLECTOR.collect(files, no_progress), repeat)
            blocks = _blocks(files)
            dot_best, _, _ = _timed(lambda blocks=blocks: [parse_dot(b) for b in blocks], repeat)
            results[label] = (size_kb, best, median, cpu, dot_best, blocks)
            print(f"{label:<24} {size_kb:>7.1f} {ops:>6} {best:>10.1f} ms {median:>5.1f} ms {cpu:>6.1f} ms "
                  f"{dot_best:>12.1f} ms")

        size_kb, best, median, cpu, dot_best, blocks = results["target group"]
        verdict = "meets" if best <= TARGET_MS else "MISSES"
        print(f"\ntarget: {size_kb:.0f} KB three-file group in <= {TARGET_MS:.0f} ms: best {best:.1f} ms, "
              f"median {median:.1f} ms, CPU {cpu:.1f} ms -> {verdict} the target")
        if args.pydot:
            try:
                import pydot  # type: ignore[import-not-found]
            except ImportError:
                print("pydot is not importable: no peer ratio")
            else:
                peer_best, _, _ = _timed(lambda: [pydot.graph_from_dot_data(b) for b in blocks], 3)
                print(f"pydot {pydot.__version__} on the same blocks: {peer_best:.0f} ms "
                      f"-> this grammar is {peer_best / dot_best:.0f}x faster on the DOT layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
