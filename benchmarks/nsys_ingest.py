"""Benchmark: Nsight Systems SQLite export ingest speed (issue 19: >= 50 MB/s).

    python benchmarks/nsys_ingest.py                 # the ~9.5 MB export (4,000 steps)
    python benchmarks/nsys_ingest.py --steps 40000   # ~95 MB

Generates (and caches) an export with the demo generator
(`dashboard.demo.nsys_export`: kernels, copies, memsets, runtime / driver
calls with backtrace duplicates, NVTX push/pop and start/end ranges, one
non-UTF-8 NVTX text), then in fresh processes: the collector alone
(`COLLECTOR.collect`, timed after its imports, the ADBC driver's included:
the first export read loads it) and the command line end to end
(`python -m dashboard.app ingest`, start to exit). Prints MB/s for both, the
best of `--repeat` runs and the range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLLECT = """
import json, sys, time
from pathlib import Path
from dashboard.collectors.nsys.collector import COLLECTOR
started = time.perf_counter()
result = COLLECTOR.collect([Path(sys.argv[1])], lambda fraction, message: None)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rows": {name: frame.height for name, frame in result.tables.items()}}))
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def collector_seconds(export: Path) -> tuple[float, dict[str, int]]:
    done = subprocess.run([sys.executable, "-c", COLLECT, str(export)], capture_output=True, text=True,
                          env=_env(), check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["seconds"], result["rows"]


def cli_seconds(export: Path) -> float:
    with tempfile.TemporaryDirectory() as data:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(export), "--data", data],
                       capture_output=True, text=True, env=_env(), check=True)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="training steps in the generated export")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "nsys_bench")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from dashboard.demo.nsys_export import ExportOptions, write_export

    export = args.folder / f"steps{args.steps}.sqlite"
    if not export.exists():
        export.parent.mkdir(parents=True, exist_ok=True)
        write_export(export, ExportOptions(steps=args.steps))
    megabytes = export.stat().st_size / 1e6
    print(f"export: {export} ({megabytes:.1f} MB, {args.steps:,} steps); load average {os.getloadavg()[0]:.2f}")
    runs = [collector_seconds(export) for _ in range(args.repeat)]
    walls = sorted(seconds for seconds, _ in runs)
    median = statistics.median(walls)
    print(f"  nsys collector: {walls[0]:.3f}-{walls[-1]:.3f} s = {megabytes / walls[-1]:.0f}-"
          f"{megabytes / walls[0]:.0f} MB/s, median {median:.3f} s = {megabytes / median:.0f} MB/s "
          f"(target >= 50 MB/s); rows {runs[0][1]}")
    ends = sorted(cli_seconds(export) for _ in range(args.repeat))
    print(f"  dashboard ingest (CLI, start to exit): {ends[0]:.2f}-{ends[-1]:.2f} s = "
          f"{megabytes / ends[-1]:.0f}-{megabytes / ends[0]:.0f} MB/s")


if __name__ == "__main__":
    main()
