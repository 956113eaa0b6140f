"""Soak: one server process opens many big runs in turn; its resident memory after each, against its budget.

    python benchmarks/soak_memory.py                          # 20 runs of 300 k kernels, a gunicorn worker
    python benchmarks/soak_memory.py --runs 8 --kernels 100000 --mode views --worker-mb 900

Issue 35: one gunicorn worker opening runs of a 300 k-kernel trace on /kernels, /timeline, /insights and
/layers went 107 -> 1,514 MB over nine runs and kept climbing (caches bounded by entries, not bytes).

`--mode server` (default): a gunicorn worker (`server.worker.HealthFirstWorker`, one process, two
threads) with `DASHBOARD_WORKER_MEMORY_MB`; each page is loaded the way Chromium loads it: the requests
a real browser made for it on the first run (recorded once with Playwright, `page_loads.py`) are replayed
for every run, its id swapped in. `--mode views`: this process calls the same view functions the pages
and their exports call (`exports.page_figures`) for each run; no browser or server needed (the test
suite's probe uses it).

Prints one line per run (RSS in MB, the caches' size) and a JSON summary; exits non-zero when the RSS
passed the budget by more than 10 %.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

PAGES = ("kernels", "timeline", "insights", "layers")


def make_runs(data_dir: Path, runs: int, kernels: int) -> list[str]:
    """`runs` synthetic training runs of `kernels` kernels (kept in `data_dir` for the next time)."""
    from benchmarks.synthetic_kernel_run import make_tables
    from dashboard.store import RunStore

    store = RunStore(data_dir)
    have = [info.id for info in store.list_runs() if info.name == f"soak-{kernels}"]
    for index in range(len(have), runs):
        have.append(store.write(f"soak-{kernels}", make_tables(kernels, ranks=2, seed=index)))
    return sorted(have)[:runs]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def soak_views(data_dir: Path, run_ids: list[str], worker_mb: float | None, out: list[dict]) -> float:
    """In this process: every page's views for each run. Returns the worker budget in MB."""
    from dashboard.exports.page_figures import page_figures
    from dashboard.settings import Settings
    from dashboard.store import RunStore

    memory = _memory_module()
    if memory is not None:  # a checkout without the byte budget runs as it is (to compare)
        settings = Settings(data_dir=data_dir, seed_demo=False, worker_memory_mb=worker_mb)
        memory.configure(settings.cache_bytes(memory.resident_bytes() or 0), settings.worker_memory_bytes())
    store = RunStore(data_dir)
    for index, run_id in enumerate(run_ids, start=1):
        run = store.open(run_id)
        started = time.perf_counter()
        for page in PAGES:
            page_figures(page, run, {})
        line = {"run": index, "rss_mb": round(rss_mb(os.getpid()), 1),
                "seconds": round(time.perf_counter() - started, 2)}
        if memory is not None:
            line["cache_mb"] = memory.CACHE.stats()["cache_mb"]
        out.append(line)
        print(json.dumps(line), flush=True)
    return worker_mb


def _memory_module() -> Any:
    """dashboard.store.memory, or None in a checkout without the byte budget (to compare with one)."""
    try:
        from dashboard.store import memory
    except ImportError:
        return None
    return memory


def soak_server(data_dir: Path, run_ids: list[str], worker_mb: float, out: list[dict], log_dir: Path) -> float:
    """A gunicorn worker; each page's browser requests (recorded on the first run) replayed for every run."""
    from benchmarks.page_loads import record_page_load, replay, start_gunicorn, stop_gunicorn

    env = {"DASHBOARD_WORKER_MEMORY_MB": str(worker_mb)}
    process, base = start_gunicorn(data_dir, workers=1, threads=2, log_path=log_dir / "soak-gunicorn.log", env=env)
    try:
        worker = json.loads(replay_get(base, "/health"))["pid"]
        record_page_load(base, f"/{PAGES[0]}?run={run_ids[0]}")  # the browser's first visit: not kept
        recorded = {page: record_page_load(base, f"/{page}?run={run_ids[0]}") for page in PAGES}
        for page, load in recorded.items():
            print(f"recorded /{page}: {[step.kind for step in load.steps]}", file=sys.stderr)
        for index, run_id in enumerate(run_ids, start=1):
            started = time.perf_counter()
            for page in PAGES:
                for step in recorded[page].with_run(run_ids[0], run_id):
                    status, _ = replay(base, step)
                    if status >= 500:
                        raise RuntimeError(f"{step.kind} answered {status} for run {run_id}")
            verbose = json.loads(replay_get(base, "/health?verbose=1"))
            line = {"run": index, "rss_mb": round(rss_mb(worker), 1), "cache_mb": verbose["memory"]["cache_mb"],
                    "seconds": round(time.perf_counter() - started, 2)}
            out.append(line)
            print(json.dumps(line), flush=True)
    finally:
        stop_gunicorn(process)
    return worker_mb


def replay_get(base: str, path: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(base + path, timeout=120) as response:
        return response.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--kernels", type=int, default=300_000)
    parser.add_argument("--mode", choices=("server", "views"), default="server")
    parser.add_argument("--worker-mb", type=float, default=1536.0, help="the worker's memory budget")
    parser.add_argument("--data", type=Path, help="keep the generated runs here (reused next time)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)

    from benchmarks.scratch import work_folder

    lines: list[dict] = []
    with work_folder(args.data) as folder:
        data_dir = folder / "data"
        started = time.perf_counter()
        run_ids = make_runs(data_dir, args.runs, args.kernels)
        print(f"{len(run_ids)} runs of {args.kernels:,} kernels ready in {time.perf_counter() - started:.0f} s; "
              f"mode {args.mode}, worker budget {args.worker_mb:.0f} MB", file=sys.stderr)
        if args.mode == "views":
            budget = soak_views(data_dir, run_ids, args.worker_mb, lines)
        else:
            budget = soak_server(data_dir, run_ids, args.worker_mb, lines, folder)
    peak = max(line["rss_mb"] for line in lines)
    summary = {"runs": len(lines), "kernels": args.kernels, "mode": args.mode, "budget_mb": round(budget),
               "peak_rss_mb": peak, "last_rss_mb": lines[-1]["rss_mb"],
               "within_budget_plus_10pct": peak <= budget * 1.1,
               "load": os.getloadavg()}
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": lines}, indent=2))
    return 0 if summary["within_budget_plus_10pct"] else 1


if __name__ == "__main__":
    sys.exit(main())
