"""Load benchmark of a team server: real page loads of every page by many users, one big upload meanwhile.

    python benchmarks/load.py                                  # 20 users, 60 s, a 200 MB upload, 4 x 2 workers
    python benchmarks/load.py --users 5 --duration 20 --upload-mb 20 --data /tmp/load-data

The data folder holds the bundled demo (every page has something to show; kept with `--data`).
`gunicorn -k dashboard.server.worker.HealthFirstWorker -w 4 --threads 2` serves it on a free 127.0.0.1
port. Each page (the Runs page, Insights, Kernels, Layers, Timeline, Ranks, Memory, Planner, Compiler,
Compare, History) is first loaded once in Chromium, and every request the page made to the server is kept
(`page_loads.py`: the page, `_dash-layout`, `_dash-dependencies` and each callback with the body the
renderer sent; scripts and styles are cached by a browser and left out). Then `--users` simulated users
each load the pages in turn, replaying those requests in order, with `--think` seconds between pages (a
person reading; 0 for back-to-back). Meanwhile a prober asks `/health` every half second on a fresh
connection, and `--upload-after` seconds in, one `--upload-mb` MB PyTorch-profiler trace is uploaded
as the Runs page does (`assets/upload.js`: a PUT per file, streamed) and ingested; every worker's RSS is
sampled during its upload.

Prints p50 / p95 / p99 latency of each page's requests (and of whole page loads), `/health`'s worst,
the upload's figures, the error count and the machine's load; exits non-zero on an error, a page's p95
over `--p95-ms`, a `/health` over 1 s, or an upload that added more than 64 MB to a worker.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.page_loads import (
    HOST,
    PageLoad,
    Step,
    record_page_load,
    replay,
    start_gunicorn,
    stop_gunicorn,
    worker_pids,
)

PAGES = ("/", "/insights", "/kernels", "/layers", "/timeline", "/ranks", "/memory", "/planner", "/compiler",
         "/compare", "/history")
MIB = 1024 * 1024


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else float("nan")


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def prepare_data(folder: Path, upload_mb: int) -> tuple[Path, Path | None]:
    """The demo's runs and a trace of about `upload_mb` MB to upload (both kept in `folder`)."""
    from benchmarks.gen_kineto_trace import write_trace
    from dashboard.demo import seed_demo_if_empty
    from dashboard.store import RunStore

    data = folder / "data"
    seed_demo_if_empty(RunStore(data), stream=None)
    if upload_mb <= 0:
        return data, None
    trace = folder / f"upload-{upload_mb}mb.json"
    if not trace.exists():
        write_trace(trace, kernels=int(upload_mb * 1200))  # ~0.83 KB per kernel with its launch and op
    return data, trace


class Results:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, list[float]] = defaultdict(list)  # page -> request latencies
        self.loads: dict[str, list[float]] = defaultdict(list)  # page -> whole page loads
        self.kinds: dict[str, list[float]] = defaultdict(list)  # (page, request kind) -> latencies
        self.errors: list[str] = []
        self.health: list[float] = []
        self.upload: dict[str, Any] = {}


def run_users(base: str, recorded: dict[str, PageLoad], users: int, duration: float, think: float,
              results: Results) -> None:
    deadline = time.monotonic() + duration
    pages = list(recorded)

    def user(offset: int) -> None:
        turn = offset
        while time.monotonic() < deadline:
            page = pages[turn % len(pages)]
            turn += 1
            started = time.perf_counter()
            for step in recorded[page].steps:
                began = time.perf_counter()
                try:
                    status, body = replay(base, step)
                    problem = None if status in (200, 204) else f"{page} {step.kind}: HTTP {status} {body[:120]!r}"
                except Exception as exc:  # a timeout or a dropped connection is an error, counted
                    problem = f"{page} {step.kind}: {type(exc).__name__}: {exc}"
                elapsed = time.perf_counter() - began
                with results.lock:
                    results.requests[page].append(elapsed)
                    results.kinds[f"{page} {step.kind}"].append(elapsed)
                    if problem:
                        results.errors.append(problem)
            with results.lock:
                results.loads[page].append(time.perf_counter() - started)
            time.sleep(think * (0.5 + (turn * 7919 % 1000) / 1000))  # 0.5-1.5 x think, spread over users

    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=duration + 300)


def probe_health(base: str, until: threading.Event, results: Results) -> None:
    while not until.is_set():
        started = time.perf_counter()
        try:
            connection = http.client.HTTPConnection(HOST, int(base.rsplit(":", 1)[1]), timeout=30)
            connection.request("GET", "/health")
            response = connection.getresponse()
            response.read()
            connection.close()
            ok = response.status == 200
        except OSError as exc:
            ok = False
            with results.lock:
                results.errors.append(f"/health: {type(exc).__name__}: {exc}")
        with results.lock:
            results.health.append(time.perf_counter() - started)
            if not ok:
                results.errors.append("/health did not answer 200")
        until.wait(0.5)


def upload(base: str, trace: Path, workers: list[int], results: Results) -> None:
    """The Runs page's upload: a new upload, the file streamed in one PUT, then the ingest job, followed."""
    baseline = {pid: rss_mb(pid) for pid in workers}
    peak = dict(baseline)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid in workers:
                peak[pid] = max(peak[pid], rss_mb(pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    port = int(base.rsplit(":", 1)[1])
    started = time.perf_counter()
    try:
        connection = http.client.HTTPConnection(HOST, port, timeout=600)
        connection.request("POST", "/uploads", body=b"")
        opened = json.loads(connection.getresponse().read())
        with open(trace, "rb") as body:
            connection.request("PUT", f"/uploads/{opened['upload']}/files?name={trace.name}", body=body,
                               headers={"Content-Length": str(trace.stat().st_size),
                                        "Content-Type": "application/octet-stream"})
            response = connection.getresponse()
            answer = json.loads(response.read())
        sent = time.perf_counter() - started
        connection.request("POST", f"/uploads/{opened['upload']}/ingest", body=json.dumps({"name": "load-upload"}),
                           headers={"Content-Type": "application/json"})
        job = json.loads(connection.getresponse().read())["job"]
        connection.close()
    finally:
        done.set()
        sampler.join()
    added = {pid: peak[pid] - baseline[pid] for pid in workers}
    receiver = max(added, key=added.get)
    results.upload.update({"file_mb": round(trace.stat().st_size / MIB, 1), "status": response.status,
                           "stored_mb": round(answer.get("bytes", 0) / MIB, 1), "send_s": round(sent, 1),
                           "receiving_worker_rss_before_mb": round(baseline[receiver]),
                           "receiving_worker_rss_peak_mb": round(peak[receiver]),
                           "receiving_worker_added_mb": round(added[receiver], 1)})
    status = {"state": "running"}
    while status.get("state") == "running":  # the parse runs in a child process meanwhile
        time.sleep(1.0)
        _code, body = replay(base, Step("job", "GET", f"/uploads/jobs/{job}"))
        status = _job_state(body)
    results.upload.update({"ingest": status.get("state"), "ingest_s": round(time.perf_counter() - started - sent, 1),
                           "ingest_error": status.get("error")})


def _job_state(body: bytes) -> dict[str, Any]:
    try:
        return json.loads(body)
    except ValueError:
        return {"state": "unknown"}


def report(results: Results, wall: float, args: argparse.Namespace) -> dict[str, Any]:
    print(f"{'page':<12} {'loads':>6} {'requests':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'load p50':>9} {'load p95':>9}")
    pages = {}
    for page, latencies in results.requests.items():
        loads = results.loads[page]
        row = {"loads": len(loads), "requests": len(latencies),
               **{f"p{share}_ms": round(percentile(latencies, share / 100) * 1e3, 1) for share in (50, 95, 99)},
               "load_p50_ms": round(percentile(loads, .5) * 1e3), "load_p95_ms": round(percentile(loads, .95) * 1e3)}
        pages[page] = row
        print(f"{page:<12} {row['loads']:>6} {row['requests']:>9} {row['p50_ms']:>8} {row['p95_ms']:>8} "
              f"{row['p99_ms']:>8} {row['load_p50_ms']:>9} {row['load_p95_ms']:>9}")
    every = [value for values in results.requests.values() for value in values]
    slowest = sorted(((percentile(v, .95), k) for k, v in results.kinds.items()), reverse=True)[:5]
    summary = {
        "users": args.users, "workers": args.workers, "threads": args.threads, "think_s": args.think,
        "seconds": round(wall, 1), "requests": len(every), "requests_per_s": round(len(every) / wall, 1),
        "p50_ms": round(percentile(every, .5) * 1e3, 1), "p95_ms": round(percentile(every, .95) * 1e3, 1),
        "p99_ms": round(percentile(every, .99) * 1e3, 1), "errors": len(results.errors),
        "health_probes": len(results.health), "health_worst_ms": round(max(results.health, default=0) * 1e3, 1),
        "health_over_1s": sum(1 for value in results.health if value > 1.0), "upload": results.upload,
        "pages": pages, "slowest_requests_p95_ms": {kind: round(value * 1e3, 1) for value, kind in slowest},
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }
    print(f"{'all':<12} {'':>6} {len(every):>9} {summary['p50_ms']:>8} {summary['p95_ms']:>8} {summary['p99_ms']:>8}")
    print(f"{summary['requests_per_s']} requests/s over {wall:.0f} s; /health: {summary['health_probes']} probes, "
          f"worst {summary['health_worst_ms']} ms, {summary['health_over_1s']} over 1 s; errors: {len(results.errors)}")
    print(f"slowest requests (p95 ms): {summary['slowest_requests_p95_ms']}")
    if results.upload:
        print(f"upload: {json.dumps(results.upload)}")
    print(f"machine load average (1, 5, 15 min): {summary['load_average']} on {os.cpu_count()} CPUs")
    for problem in results.errors[:10]:
        print(f"  error: {problem}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds a user reads a page before the next")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2, help="gunicorn threads per worker")
    parser.add_argument("--upload-mb", type=int, default=200, help="the upload during the run (0: none)")
    parser.add_argument("--upload-after", type=float, default=5.0, help="seconds into the run")
    parser.add_argument("--p95-ms", type=float, default=300.0, help="the most any page's p95 may be")
    parser.add_argument("--data", type=Path, help="keep the demo data and the upload file here (reused)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)

    from benchmarks.scratch import work_folder

    with work_folder(args.data) as folder:
        data, trace = prepare_data(folder, args.upload_mb)
        fresh = folder / "served"  # the upload's run goes here, not into the kept demo folder
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(data, fresh, symlinks=True)
        # The parse of the upload in a child process, one decode helper, niced: the pages are served meanwhile.
        process, base = start_gunicorn(fresh, args.workers, args.threads, folder / "load-gunicorn.log",
                                       env={"DASHBOARD_INGEST_WORKERS": "1"})
        try:
            record_page_load(base, PAGES[0])  # the browser's and the server's first visit: not kept
            recorded = {page: record_page_load(base, page) for page in PAGES}
            for page, load in recorded.items():
                print(f"recorded {page}: {len(load.steps)} requests "
                      f"({', '.join(sorted({step.kind.split(' ')[0] for step in load.steps}))})", file=sys.stderr)
            warm = Results()  # every worker draws every page once before anything is measured
            run_users(base, recorded, users=args.workers * args.threads, duration=len(PAGES) * 2.0, think=0.0,
                      results=warm)
            results = Results()
            stop = threading.Event()
            prober = threading.Thread(target=probe_health, args=(base, stop, results), daemon=True)
            prober.start()
            uploader = None
            if trace is not None:
                def delayed_upload() -> None:
                    time.sleep(args.upload_after)
                    upload(base, trace, worker_pids(process), results)

                uploader = threading.Thread(target=delayed_upload, daemon=True)
                uploader.start()
            print(f"{args.users} users, {args.workers} workers x {args.threads} threads, {len(PAGES)} pages, "
                  f"{args.duration:.0f} s, think {args.think} s, upload {args.upload_mb} MB", file=sys.stderr)
            started = time.perf_counter()
            run_users(base, recorded, args.users, args.duration, args.think, results)
            if uploader is not None:
                uploader.join(timeout=900)
            stop.set()
            prober.join()
            summary = report(results, time.perf_counter() - started, args)
        finally:
            stop_gunicorn(process)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    upload_ok = not summary["upload"] or summary["upload"].get("receiving_worker_added_mb", 0) <= 64
    pages_ok = all(row["p95_ms"] <= args.p95_ms for row in summary["pages"].values())
    return 0 if summary["errors"] == 0 and pages_ok and summary["health_over_1s"] == 0 and upload_ok else 1


if __name__ == "__main__":
    sys.exit(main())
