"""Many ranks: ingest N per-rank Kineto traces with and without `--cluster local`, then open the pages.

    python benchmarks/many_ranks.py [--ranks 8 32 128] [--kernels 6000] [--workers 2] [--no-render]

For each N: writes N small traces (benchmarks/gen_kineto_trace.py, ~870 bytes per
kernel, a different seed per rank), then times `python -m dashboard.app ingest DIR`
end to end (process start to exit, under /usr/bin/time) in one process and with
`--cluster local --workers W`, and prints wall time, per-rank throughput (ranks/s
and MB/s of trace) and peak resident memory: of the single process; of the
cluster client (its own peak, recorded in run.json) and of the largest worker.
Then it serves the data folder and times the first render of /kernels and /ranks
on the cluster run in chromium (benchmarks/first_render.py's in-page probe):
"server cold" is the run's first visit in the server process (the server opens
the run and computes the page), "warm" a second visit from the same browser.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import first_render  # noqa: E402
from benchmarks.gen_kineto_trace import write_trace  # noqa: E402
from dashboard.store import RunStore  # noqa: E402

RENDER_PAGES = {
    "/kernels": "#kernels-page .js-plotly-plot .main-svg .cartesianlayer",
    "/ranks": "#ranks-page .js-plotly-plot .main-svg .cartesianlayer",
}


def write_ranks(folder: Path, ranks: int, kernels: int) -> int:
    """N traces in `folder`; returns their total size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        write_trace(folder / f"rank-{rank}.json", kernels, seed=rank, rank=rank)
    return sum(f.stat().st_size for f in folder.iterdir())


def timed_ingest(inputs: Path, data_dir: Path, *extra: str) -> dict[str, Any]:
    """Wall seconds and peak RSS (of the ingest process itself, GNU time's %M) of one CLI ingest."""
    command = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-m", "dashboard.app", "ingest", str(inputs),
               "--data", str(data_dir), *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ingest failed:\n{done.stderr}")
    wall, rss_kb = next(line for line in done.stderr.splitlines() if line.startswith("TIME ")).split()[1:]
    run_id = done.stdout.strip().splitlines()[-1]
    stats = RunStore(data_dir).open(run_id).info.metadata.get("cluster", {})
    return {"run": run_id, "wall_s": float(wall), "rss_mb": int(rss_kb) * 1024 / 1e6,
            "client_mb": stats.get("client_peak_rss_bytes", 0) / 1e6,
            "worker_mb": stats.get("worker_peak_rss_bytes", 0) / 1e6}


def render_times(data_dir: Path, run_id: str) -> dict[str, tuple[float, float]]:
    """page -> (server-cold s, warm s) until its charts are drawn."""
    from playwright.sync_api import sync_playwright

    probe = first_render.PROBE.replace(json.dumps(first_render.PAGES), json.dumps(RENDER_PAGES))
    port = first_render.free_port()
    server = first_render.start_server(data_dir, port, data_dir.parent / "server.log")
    times: dict[str, tuple[float, float]] = {}
    try:
        with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path="/usr/bin/chromium", args=first_render.FLAGS,
                viewport={"width": 1500, "height": 1000})
            context.add_init_script(probe)
            for path in RENDER_PAGES:
                url = f"http://127.0.0.1:{port}{path}?run={run_id}"
                cold = first_render.timed_visit(context, url)[0]
                warm = first_render.timed_visit(context, url)[0]
                times[path] = (cold, warm)
            context.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--kernels", type=int, default=6000, help="kernels per rank (2,000 per profiler step)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="workers of --cluster local")
    parser.add_argument("--no-render", action="store_true", help="skip the browser timings")
    parser.add_argument("--no-single", action="store_true", help="skip the one-process ingest")
    args = parser.parse_args()
    rows = []
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(prefix=f"many-ranks-{ranks}-") as folder:
            root = Path(folder)
            size = write_ranks(root / "ranks", ranks, args.kernels)
            single = None if args.no_single else timed_ingest(root / "ranks", root / "single")
            cluster = timed_ingest(root / "ranks", root / "data", "--cluster", "local", "--workers",
                                   str(args.workers))
            renders = {} if args.no_render else render_times(root / "data", cluster["run"])
            rows.append({"ranks": ranks, "mb": size / 1e6, "single": single, "cluster": cluster,
                         "render": renders})
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.kernels:,} kernels per rank; --cluster local with {args.workers} workers; "
          f"{os.cpu_count()} cores; wall = process start to exit\n")
    header = (f"{'ranks':>5} {'MB':>7} | {'1-proc s':>8} {'ranks/s':>7} {'MB/s':>6} {'RSS MB':>7} | "
              f"{'cluster s':>9} {'ranks/s':>7} {'MB/s':>6} {'client MB':>9} {'worker MB':>9} | "
              f"{'/kernels cold/warm s':>20} {'/ranks cold/warm s':>18}")
    print(header)
    print("-" * len(header))
    for row in rows:
        single, cluster, ranks, mb = row["single"], row["cluster"], row["ranks"], row["mb"]
        one = (f"{single['wall_s']:8.2f} {ranks / single['wall_s']:7.1f} {mb / single['wall_s']:6.1f} "
               f"{single['rss_mb']:7.0f}") if single else f"{'-':>8} {'-':>7} {'-':>6} {'-':>7}"
        render = "  ".join(f"{row['render'][p][0]:9.2f}/{row['render'][p][1]:<8.2f}" if p in row["render"]
                           else f"{'-':>18}" for p in RENDER_PAGES)
        print(f"{ranks:5d} {mb:7.1f} | {one} | {cluster['wall_s']:9.2f} {ranks / cluster['wall_s']:7.1f} "
              f"{mb / cluster['wall_s']:6.1f} {cluster['client_mb']:9.0f} {cluster['worker_mb']:9.0f} | {render}")
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"\n(measured {started}; MB are 10^6 bytes; RSS of the one-process ingest: GNU time's peak of it)")


if __name__ == "__main__":
    main()
