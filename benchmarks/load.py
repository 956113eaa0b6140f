"""Load benchmark of a team server: gunicorn workers on loopback, simulated users, latency and errors.

    python benchmarks/load.py                      # 4 workers, 20 users, 60 s
    python benchmarks/load.py --users 5 --duration 10 --kernels 20000

It generates a data folder with one kernel run, starts
`gunicorn -w 4 dashboard.server.wsgi:server` on a free 127.0.0.1 port, and runs
simulated users in threads, each repeating what a browser does when a
person opens the Kernels page and picks a run: the page (GET /kernels?run=…),
`_dash-layout`, `_dash-dependencies`, the page router callback that renders
the Kernels page, the run-picker callback, and the Kernels page's own chart
callback. Callback payloads are built from the app's own
`_dash-dependencies` and layouts, as the browser builds them. It stops at the
duration or the request cap, whichever comes first, then prints p50 / p95
latency per kind of request, requests per second, and the error count.
Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.store import RunStore

HOST = "127.0.0.1"  # loopback only, by design
KERNEL_NAMES = [f"void kernel_{family}<{width}>(float*, int)" for family in ("gemm", "softmax", "layernorm",
                                                                               "attention", "elementwise")
                for width in (32, 64, 128, 256, 512, 1024, 2048, 4096)]


# ---- data ------------------------------------------------------------------
def write_kernel_run(data_dir: Path, kernels: int) -> str:
    """One run of `kernels` kernels on two ranks and four streams; returns its id."""
    names = dict(enumerate(KERNEL_NAMES))
    i = pl.col("i")
    frame = pl.DataFrame(pl.int_range(kernels, dtype=pl.Int64, eager=True).alias("i")).select(
        (i % 2).cast(pl.Int32).alias("rank"),
        pl.lit(0, dtype=pl.Int32).alias("device"),
        (7 + i % 4).alias("stream"),
        i.alias("correlation"),
        (i * 7919 % len(KERNEL_NAMES)).replace_strict(names, return_dtype=pl.String).alias("name"),
        (1_700_000_000_000_000_000 + i * 2_000).alias("start_ns"),
        (1_700_000_000_000_000_000 + i * 2_000 + 300 + i * 104_729 % 1_500).alias("end_ns"),
    )
    return RunStore(data_dir).write("load-kernels", {"kernels": frame})


# ---- Dash requests, built the way the browser builds them ------------------
def _outputs_of(output: str) -> list[str]:
    """'..a.b...c.d..' -> ['a.b', 'c.d']; 'a.b' -> ['a.b']."""
    if output.startswith("..") and output.endswith(".."):
        return output[2:-2].split("...")
    return [output]


def _split(spec: str) -> tuple[Any, str]:
    component, _, prop = spec.rpartition(".")
    prop = prop.split("@")[0]  # allow_duplicate outputs carry a hash suffix
    return (json.loads(component) if component.startswith("{") else component), prop


def _components(tree: Any, found: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every component with an id in a Dash layout tree: id key -> props."""
    found = {} if found is None else found
    if isinstance(tree, list):
        for item in tree:
            _components(item, found)
    elif isinstance(tree, dict):
        props = tree.get("props")
        if isinstance(props, dict):
            if "id" in props:
                found[_key(props["id"])] = props
            for value in props.values():
                _components(value, found)
    return found


def _key(component_id: Any) -> str:
    return json.dumps(component_id, sort_keys=True) if isinstance(component_id, dict) else str(component_id)


def _matches(pattern: dict, candidate: Any) -> bool:
    if not isinstance(candidate, dict) or set(candidate) != set(pattern):
        return False
    return all(value == ["ALL"] or candidate[k] == value for k, value in pattern.items())


def callback_request(dependency: dict, components: dict[str, dict], values: dict[str, Any],
                     changed: list[str]) -> dict:
    """The JSON body of one callback request; values override component props ('id.prop' keys)."""

    def expand(spec_id: Any, prop: str, with_value: bool) -> Any:
        if isinstance(spec_id, dict) and any(v == ["ALL"] for v in spec_id.values()):
            ids = [json.loads(k) for k in components if k.startswith("{") and _matches(spec_id, json.loads(k))]
            return [expand(concrete, prop, with_value) for concrete in ids]
        item: dict[str, Any] = {"id": spec_id, "property": prop}
        if with_value:
            key = f"{_key(spec_id)}.{prop}"
            item["value"] = values[key] if key in values else (
                spec_id if prop == "id" else components.get(_key(spec_id), {}).get(prop))
        return item

    def listed(entries: list[dict]) -> list[Any]:
        return [expand(json.loads(e["id"]) if e["id"].startswith("{") else e["id"], e["property"], True)
                for e in entries]

    outputs = [expand(*_split(spec), False) for spec in _outputs_of(dependency["output"])]
    return {"output": dependency["output"], "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": listed(dependency["inputs"]), "state": listed(dependency["state"]),
            "changedPropIds": changed}


def find_dependency(dependencies: list[dict], output_part: str) -> dict:
    return next(d for d in dependencies if output_part in d["output"] and d.get("clientside_function") is None)


# ---- HTTP --------------------------------------------------------------------
def request(base: str, path: str, body: dict | None = None, timeout: float = 60) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_gunicorn(data_dir: Path, workers: int, threads: int, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "DASHBOARD_DATA": str(data_dir), "DASHBOARD_SEED_DEMO": "0"}
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", str(workers), "--threads", str(threads),
             "-b", f"{HOST}:{port}", "--timeout", "120", "dashboard.server.wsgi:server"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    base = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{log_path.read_text()}")
        try:
            if request(base, "/health", timeout=5)[0] == 200:
                return process, base
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"gunicorn did not answer in time:\n{log_path.read_text()}")


# ---- the users ----------------------------------------------------------------
def scenario(base: str, run_id: str) -> list[tuple[str, str, dict | None]]:
    """One visit, as (kind, path, body): built once from the app's own dependencies and layouts."""
    dependencies = json.loads(request(base, "/_dash-dependencies")[1])
    shell = _components(json.loads(request(base, "/_dash-layout")[1]))
    search = f"?run={run_id}"
    router_dep = find_dependency(dependencies, "_pages_content.children")
    router = callback_request(router_dep, shell, {"_pages_location.pathname": "/kernels",
                                                  "_pages_location.search": search},
                              ["_pages_location.pathname"])
    status, rendered = request(base, "/_dash-update-component", router)
    if status != 200:
        raise RuntimeError(f"the router callback failed ({status}): {rendered[:300]!r}")
    page = _components(json.loads(rendered)["response"]["_pages_content"]["children"])
    components = {**shell, **page}
    picker_dep = find_dependency(dependencies, "run-picker.options")
    picker = callback_request(picker_dep, components, {"run-picker.value": run_id,
                                                       "_pages_location.search": search}, ["run-picker.value"])
    steps: list[tuple[str, str, dict | None]] = [
        ("GET /kernels", f"/kernels{search}", None),
        ("GET _dash-layout", "/_dash-layout", None),
        ("GET _dash-dependencies", "/_dash-dependencies", None),
        ("POST router (Kernels page)", "/_dash-update-component", router),
        ("POST run picker", "/_dash-update-component", picker),
    ]
    try:  # the Kernels page's chart callback: regroup the kernels
        charts_dep = find_dependency(dependencies, "kernels-bar.figure")
        charts = callback_request(charts_dep, components, {"kernels-top.value": 10}, ["kernels-top.value"])
        steps.append(("POST kernels charts", "/_dash-update-component", charts))
    except StopIteration:
        print("note: no Kernels chart callback found; left out", file=sys.stderr)
    return steps


def run_users(base: str, steps: list[tuple[str, str, dict | None]], users: int, duration: float,
              max_requests: int) -> tuple[dict[str, list[float]], list[str], int, float]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()
    sent = 0
    deadline = time.monotonic() + duration

    def take_ticket() -> bool:
        nonlocal sent
        with lock:
            if sent >= max_requests or time.monotonic() >= deadline:
                return False
            sent += 1
            return True

    def user(offset: int) -> None:
        step = offset
        while take_ticket():
            kind, path, body = steps[step % len(steps)]
            step += 1
            started = time.perf_counter()
            try:
                status, payload = request(base, path, body)
                problem = None if status == 200 else f"{kind}: HTTP {status} {payload[:120]!r}"
            except Exception as exc:  # a timeout or a dropped connection is an error, counted
                problem = f"{kind}: {type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - started
            with lock:
                latencies[kind].append(elapsed)
                if problem:
                    errors.append(problem)

    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(users)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=duration + 120)
    return latencies, errors, sent, time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report(latencies: dict[str, list[float]], errors: list[str], wall: float, out: Callable[[str], None]) -> dict:
    every = [v for values in latencies.values() for v in values]
    out(f"{'request':<30} {'count':>7} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}")
    for kind, values in latencies.items():
        out(f"{kind:<30} {len(values):>7} {percentile(values, .5) * 1e3:>9.1f} "
            f"{percentile(values, .95) * 1e3:>9.1f} {max(values) * 1e3:>9.1f}")
    summary = {"requests": len(every), "seconds": round(wall, 2), "requests_per_s": round(len(every) / wall, 1),
               "p50_ms": round(percentile(every, .5) * 1e3, 1), "p95_ms": round(percentile(every, .95) * 1e3, 1),
               "mean_ms": round(statistics.fmean(every) * 1e3, 1), "errors": len(errors)}
    out(f"{'all':<30} {len(every):>7} {summary['p50_ms']:>9.1f} {summary['p95_ms']:>9.1f} "
        f"{max(every) * 1e3:>9.1f}")
    out(f"{summary['requests_per_s']} requests/s over {wall:.1f} s; errors: {len(errors)}")
    for problem in errors[:10]:
        out(f"  error: {problem}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (at most)")
    parser.add_argument("--max-requests", type=int, default=20_000, help="stop after this many requests")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker")
    parser.add_argument("--kernels", type=int, default=200_000, help="kernels in the generated run")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="dashboard-load-") as folder:
        data_dir = Path(folder) / "data"
        run_id = write_kernel_run(data_dir, args.kernels)
        process, base = start_gunicorn(data_dir, args.workers, args.threads, Path(folder) / "gunicorn.log")
        try:
            steps = scenario(base, run_id)
            # Warm-up (not measured): every worker opens the run and renders the page once.
            run_users(base, steps, users=args.workers * 2, duration=30, max_requests=len(steps) * args.workers * 3)
            print(f"{args.users} users, {args.workers} workers x {args.threads} thread(s), run of "
                  f"{args.kernels:,} kernels, up to {args.duration:.0f} s / {args.max_requests:,} requests")
            latencies, errors, _sent, wall = run_users(base, steps, args.users, args.duration, args.max_requests)
            summary = report(latencies, errors, wall, print)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if summary["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
