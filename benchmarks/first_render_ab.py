"""First render of two checkouts of the dashboard, timed in turns on one data folder: a fair before / after.

    python benchmarks/first_render_ab.py --before ../wt/base --after . [--rounds 3] [--reps 2]
           [--pages "synthetic:/kernels,hta-ddp:/insights,demo-memory:/memory"] [--kernels 1000000]

This machine's speed drifts by more than many changes are worth (two `first_render.py` runs minutes apart
differ by ±25 %): comparing two separate runs compares the machine. Here each round starts the `before`
checkout's server, times the pages (`first_render.measure`: cold and warm, as `first_render.py` does), stops
it, then does the same with the `after` checkout, on the same store (built once, as `first_render.py`
builds it: the demo, a synthetic run of `--kernels`, the shared samples when present). Prints the median of
every round per page and side, and the machine's load while it ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.first_render import build_store, free_port, measure, start_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the dashboard (its repo root)")
    parser.add_argument("--after", type=Path, default=REPO)
    parser.add_argument("--pages", default="synthetic:/kernels,hta-ddp:/insights,demo-memory:/memory",
                        help="comma-separated run:path (the run's label as first_render.py prints it, first word)")
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--samples", type=Path, default=REPO.parent / "shared" / "samples")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    wanted = [page.strip() for page in args.pages.split(",") if page.strip()]
    with tempfile.TemporaryDirectory(prefix="first-render-ab-") as folder:
        data_dir = Path(folder) / "data"
        cases = [case for case in build_store(data_dir, args.kernels, args.samples)
                 if f"{case.label.split()[0]}:{case.path}" in wanted]
        if not cases:
            raise SystemExit(f"none of {wanted} is in the store")
        times: dict[str, dict[str, dict[str, list[float]]]] = {
            side: {f"{case.label} {case.path}": {"cold": [], "warm": []} for case in cases} for side in sides}
        loads: list[float] = []
        for _ in range(args.rounds):
            for side, tree in sides.items():
                port = free_port()
                server = start_server(data_dir, port, Path(folder) / f"{side}.log", tree)
                try:
                    for row in measure(f"http://127.0.0.1:{port}", cases, args.reps, False):
                        key = f"{row['case'].label} {row['case'].path}"
                        times[side][key]["cold"].append(row["cold_0"])
                        times[side][key]["warm"].append(row["warm_0"])
                finally:
                    server.terminate()
                    server.wait(timeout=20)
                loads.append(os.getloadavg()[0])
    print(f"first render, charts drawn (s): {args.rounds} rounds in turns x {args.reps} reps, medians; "
          f"1-min load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    print(f"{'page':<40} {'before cold':>11} {'after cold':>11} {'before warm':>12} {'after warm':>11}")
    for key in times["after"]:
        cold = [statistics.median(times[side][key]["cold"]) for side in sides]
        warm = [statistics.median(times[side][key]["warm"]) for side in sides]
        print(f"{key[:40]:<40} {cold[0]:11.2f} {cold[1]:11.2f} {warm[0]:12.2f} {warm[1]:11.2f}")


if __name__ == "__main__":
    main()
