"""Benchmark: /insights' analyses (breakdown, idle causes, launch stats, findings) on a large synthetic run.

    python benchmarks/insights_views.py --kernels 1000000

Writes the synthetic run (synthetic_kernel_run.make_tables) to a temporary
store and times `run_insights` cold (every table read from parquet) and the
per-rank breakdown alone (what /kernels' headline reads).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from synthetic_kernel_run import make_tables

from dashboard.analysis import insights
from dashboard.store import RunStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(folder)
        run = store.open(store.write("bench", make_tables(args.kernels, args.ranks)))
        started = time.perf_counter()
        breakdown = insights.run_breakdown(run)
        breakdown_s = time.perf_counter() - started
        started = time.perf_counter()
        result = insights.run_insights(run)
        insights_s = time.perf_counter() - started
    print(f"{args.kernels:,} kernels, {args.ranks} ranks: breakdown {breakdown_s:.2f} s, "
          f"all insights {insights_s:.2f} s, {len(result.findings)} findings")
    print(breakdown.select("rank", "span_ns", "idle_share", "compute_share", "non_compute_share"))


if __name__ == "__main__":
    main()
