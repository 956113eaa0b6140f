"""How long reopening an ingested run takes in a fresh process (target: <= 0.2 s).

Writes a generated 1 M-kernel run through the store once, then, in new
processes, times `RunStore.open` (run.json + lazy scans) and, separately,
reading the whole kernels table, so the figure is the cost a page pays when
a server process first touches a run.

    python benchmarks/reopen_run.py [--kernels 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROBE = """
import sys, time
t0 = time.perf_counter()
from dashboard.store import RunStore
t1 = time.perf_counter()
run = RunStore(sys.argv[1]).open(sys.argv[2])
schema = run.scan("kernels").collect_schema()
t2 = time.perf_counter()
rows = run.frame("kernels").height
t3 = time.perf_counter()
print(f"{t2 - t1:.4f} {t3 - t2:.4f} {rows} {t1 - t0:.4f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from benchmarks.synthetic_kernel_run import make_tables
    from dashboard.store import RunStore

    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(Path(folder) / "data")
        started = time.perf_counter()
        run_id = store.write("reopen-bench", make_tables(n_kernels=args.kernels))
        print(f"wrote {args.kernels:,}-kernel run in {time.perf_counter() - started:.1f} s")
        opens, reads = [], []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", PROBE, str(store.data_dir), run_id],
                                 capture_output=True, text=True, check=True).stdout.split()
            opens.append(float(out[0]))
            reads.append(float(out[1]))
        opens.sort()
        reads.sort()
        print(f"reopen (run.json + lazy scan schema), fresh process: median {opens[len(opens) // 2] * 1000:.1f} ms, "
              f"max {opens[-1] * 1000:.1f} ms  (target <= 200 ms: {'met' if opens[-1] <= 0.2 else 'NOT met'})")
        print(f"read the whole kernels table ({out[2]} rows): median {reads[len(reads) // 2] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
