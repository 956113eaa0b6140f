"""Benchmark: Kineto trace ingest speed and memory, against Holistic Trace Analysis.

    python benchmarks/kineto_ingest.py --kernels 200000
    python benchmarks/kineto_ingest.py --hta-python /tmp/htavenv/bin/python

Generates (and caches) a trace with `--kernels` kernels, CPU ops and runtime
calls (`gen_kineto_trace.py`; 1 M kernels is ~0.9 GB of JSON), then times
the kineto collector in a fresh subprocess (wall seconds, CPU seconds of the
process and its decode workers, peak RSS summed over the process tree), and, when an interpreter with HTA installed is
given (HTA lives in its own venv), HTA's `TraceAnalysis` load of the same
file. Prints MB/s, peak RSS as a multiple of the file size and the HTA /
ours time ratio. Targets: >= 100 MB/s, peak RSS <= 2x the file, >= 10x HTA.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_kineto_trace import cached_trace
from tree_rss import SELF_SAMPLER

_TREE_RSS = SELF_SAMPLER  # peak_kb[0]: the peak RSS of this process tree (tree_rss.py)

_OURS = _TREE_RSS + """
import json, resource, sys, time
from pathlib import Path
from dashboard.collectors.kineto.collector import COLLECTOR
import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
wall, cpu = time.perf_counter(), time.process_time()
result = COLLECTOR.collect([Path(sys.argv[1])], lambda fraction, message: None)
wall = time.perf_counter() - wall
cpu = time.process_time() - cpu
children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the decode workers, all exited by now
cpu += children.ru_utime + children.ru_stime
rss_kb = max(peak_kb[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": rss_kb * 1024 / 1e6,
                  "import_rss_mb": import_rss * 1024 / 1e6,
                  "rows": {name: frame.height for name, frame in result.tables.items()}}))
"""

_HTA = """
import json, logging, resource, sys, time
logging.disable(logging.INFO)
from hta.trace_analysis import TraceAnalysis
import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
wall, cpu = time.perf_counter(), time.process_time()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
frame = analysis.t.get_trace(0)
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6,
                  "import_rss_mb": import_rss * 1024 / 1e6, "rows": {"events": int(len(frame))}}))
"""


def _run(python: str, script: str, argument: Path, timeout: float) -> dict | None:
    try:
        done = subprocess.run([python, "-c", script, str(argument)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  gave up after {timeout:.0f} s")
        return None
    if done.returncode != 0:
        print(f"  failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _hta_available(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import hta.trace_analysis"], capture_output=True, text=True)
    return probe.returncode == 0


def _report(label: str, result: dict, megabytes: float) -> None:
    print(
        f"  {label}: {result['wall']:.2f} s wall ({megabytes / result['wall']:.0f} MB/s), "
        f"{result['cpu']:.2f} s CPU ({megabytes / result['cpu']:.0f} MB/s); peak RSS {result['rss_mb']:.0f} MB "
        f"= {result['rss_mb'] / megabytes:.2f}x the file (after imports {result['import_rss_mb']:.0f} MB); "
        f"rows {result['rows']}"
    )


def machine_check() -> float:
    """Seconds for a fixed pure-Python loop: shared machines change speed, so each report says how fast
    this one was when it ran (figures from runs whose checks differ are not comparable)."""
    started = time.perf_counter()
    total = 0
    for value in range(10_000_000):
        total += value
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=1_000_000, help="kernels (and CPU ops, runtime calls)")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kineto_bench")
    parser.add_argument("--hta-python", default="/tmp/htavenv/bin/python", help="interpreter with HTA installed")
    parser.add_argument("--hta-timeout", type=float, default=3600.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of our collector (the best is reported)")
    args = parser.parse_args()

    trace = cached_trace(args.folder, args.kernels)
    folder = trace.parent
    megabytes = trace.stat().st_size / 1e6
    print(f"machine check: a fixed 10 M-step Python loop took {machine_check():.2f} s")
    print(f"trace: {trace} ({megabytes:.0f} MB, {args.kernels:,} kernels)")

    runs = [_run(sys.executable, _OURS, trace, 3600.0) for _ in range(args.repeat)]
    ours = min((r for r in runs if r), key=lambda r: r["wall"], default=None)
    if ours is None:
        sys.exit("our collector failed")
    _report("dashboard kineto collector", ours, megabytes)

    if not (Path(args.hta_python).exists() and _hta_available(args.hta_python)):
        print(f"  HTA: not available ({args.hta_python} cannot import hta); "
              "install with: python -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install HolisticTraceAnalysis")
        return
    hta = _run(args.hta_python, _HTA, folder, args.hta_timeout)
    if hta is None:
        return
    _report("HTA TraceAnalysis", hta, megabytes)
    print(f"  speed-up over HTA: {hta['wall'] / ours['wall']:.1f}x wall, {hta['cpu'] / ours['cpu']:.1f}x CPU")


if __name__ == "__main__":
    main()
