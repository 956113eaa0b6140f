"""Ingest speed of the Triton compiler-dump collector, and the /compiler step-change callback.

    python benchmarks/compiler_ingest.py [--size-mb 1000] [--folder DIR]

1. Compiles the demo kernels with the installed Triton under MLIR_ENABLE_DUMP=1
   (the generated demo log when Triton is absent) and concatenates that real log
   until it reaches --size-mb, renaming the kernels in each copy (`add_kernel_17`)
   so copies do not collapse into shared bodies: like a model with many kernels.
2. Times `triton_ir.COLLECTOR.collect` on it in a child process (wall, CPU, MB/s and
   the child's peak RSS against the file size). Targets: >= 100 MB/s, RSS <= 1x file.
3. Stores the run, then times the page's render (what one step change costs the
   server: panels, diff, source mapping) over every step of every compile, cold (first
   visit: text read, coloured, diffed, mapped) and warm. Target: p95 <= 100 ms.
CPU seconds are printed too: on a shared machine wall time includes waiting.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import work_folder

from dashboard.demo import triton_compile
from dashboard.ingest.pipeline import ingest_paths

_CHILD = """
import json, resource, sys, time
from pathlib import Path
from dashboard.collectors.base import no_progress
from dashboard.collectors.triton_ir import COLLECTOR
wall, cpu = time.perf_counter(), time.process_time()
collected = COLLECTOR.collect([Path(sys.argv[1])], no_progress)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rows": {name: frame.height for name, frame in collected.tables.items()}}))
"""


def make_log(folder: Path, size_mb: float) -> tuple[Path, Path]:
    """(a log of about `size_mb` made of renamed copies of a real compile log, the one real log)."""
    seed = triton_compile.write(folder / "seed")[0]
    text = seed.read_bytes()
    names = sorted({m.decode() for m in re.findall(rb"tt\.func public @(\w+)", text)})
    big = folder / "big_mlir_dump.txt"
    copies = 0
    with open(big, "wb") as out:
        while out.tell() < size_mb * 1e6:
            copy = text
            for name in names:
                copy = copy.replace(name.encode(), f"{name}_{copies}".encode())
            out.write(copy)
            copies += 1
    return big, seed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_render(data_dir: Path, seed: Path) -> None:
    from dashboard.layouts import server_state
    from dashboard.layouts.compiler_panels import panels
    from dashboard.settings import Settings
    from dashboard.views import compiler as compiler_view
    from dashboard.views.compiler_data import compiler_data

    store = server_state.configure(Settings(data_dir=data_dir, seed_demo=False))
    run_id = ingest_paths(store, [seed, seed.with_name(triton_compile.KERNELS)], name="bench-compiler")
    run = store.open(run_id)
    data = compiler_data(run)
    for label in ("cold", "warm"):
        times: list[float] = []
        for compile_index in data.kernels["compile"].to_list():
            for step in range(int(data.kernels.filter(data.kernels["compile"] == compile_index)["steps"][0])):
                state = compiler_view.State(compile=compile_index, step=step, pyline=18)
                started = time.perf_counter()
                panels(run, state)
                times.append((time.perf_counter() - started) * 1000)
        print(f"step change ({label}, {len(times)} steps of {data.kernels.height} compiles): "
              f"p50 {statistics.median(times):.1f} ms, p95 {percentile(times, 0.95):.1f} ms, "
              f"max {max(times):.1f} ms; target p95 <= 100 ms: "
              f"{'met' if percentile(times, 0.95) <= 100 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1000)
    parser.add_argument("--folder", type=Path, help="keep the generated log here (default: a temp folder)")
    args = parser.parse_args()
    with work_folder(args.folder) as folder:
        started = time.perf_counter()
        big, seed = make_log(folder, args.size_mb)
        size = big.stat().st_size
        print(f"generated {big.name}: {size / 1e6:.0f} MB from {seed.stat().st_size / 1e6:.1f} MB of real dumps "
              f"in {time.perf_counter() - started:.1f} s")
        done = subprocess.run([sys.executable, "-c", _CHILD, str(big)], capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().split("\n")[-1])
        print(f"triton_ir collector: {result['rows']}")
        print(f"  {result['wall']:.2f} s wall ({size / 1e6 / result['wall']:.0f} MB/s), {result['cpu']:.2f} s CPU "
              f"({size / 1e6 / result['cpu']:.0f} MB/s per CPU-second); target >= 100 MB/s: "
              f"{'met' if size / 1e6 / result['wall'] >= 100 else 'NOT met'}")
        print(f"  peak RSS {result['rss'] / 1e6:.0f} MB = {result['rss'] / size:.2f}x the file; target <= 1x: "
              f"{'met' if result['rss'] <= size else 'NOT met'}")
        big.unlink()
        time_render(folder / "data", seed)


if __name__ == "__main__":
    main()
