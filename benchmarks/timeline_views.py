"""Time the /timeline views on a 1 M-kernel run.

    python benchmarks/timeline_views.py [--kernels 1000000] [--reps 20] [--no-browser]

Builds a synthetic run (benchmarks/synthetic_kernel_run.py, plus Python
stack frames on rank 0) into a temp store, then measures:

1. indexing the run once (parquet read + lanes + per-lane sorted arrays),
   the cost of the first visit of a run in a server process;
2. the server work of every timeline callback: view (analysis) + figure +
   JSON encoding as Dash sends it, p50 / p95 over `--reps` repetitions, each
   on a window not seen before (nothing cached): the whole run, one rank, a
   mid zoom (1/20 of the run), a pan, a deep zoom (2 ms: exact events), a
   mid zoom with two kernels highlighted; with the figure payload (the
   JSON Dash sends, as long as len(fig.to_json()) of the same figure) and
   the marks sent;
3. in a browser: a zoom round trip (relayout -> callback -> new figure
   drawn). The first render of every page: benchmarks/first_render.py.

Targets (issue 5): each callback <= 100 ms p95, each payload <= 2 MB.
The machine's load average is printed with the table:
on a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from plotly.io.json import to_json_plotly  # noqa: E402

from benchmarks.first_render import FLAGS, free_port, start_server  # noqa: E402
from benchmarks.synthetic_kernel_run import CPU_THREAD, FLASH_FWD, GEMM_QKV, make_tables  # noqa: E402
from dashboard.analysis.kernel_keys import kernel_key  # noqa: E402
from dashboard.analysis.timeline import TimelineData, prepare_timeline, timeline_view  # noqa: E402
from dashboard.collectors.gc_pause import gc_paused  # noqa: E402
from dashboard.figures.timeline import timeline_figure_dict  # noqa: E402
from dashboard.store import Run, RunStore  # noqa: E402

TARGET_MS = 100.0
TARGET_BYTES = 2 * 1024 * 1024
FRAMES_PER_STEP = (1, 24, 4)  # a step frame, 24 block calls in it, 4 calls in each block


def stack_frames(ranges: pl.DataFrame) -> pl.DataFrame:
    """Python frames on rank 0's CPU thread: main, one per step, blocks and calls nested in each step."""
    steps = ranges.filter((pl.col("category") == "profiler_step") & (pl.col("rank") == 0)).sort("start_ns")
    start = steps.get_column("start_ns").to_numpy()
    end = steps.get_column("end_ns").to_numpy()
    blocks, calls = FRAMES_PER_STEP[1], FRAMES_PER_STEP[2]
    span = end - start
    block_start = (start[:, None] + span[:, None] * np.arange(blocks) // blocks).reshape(-1)
    block_end = block_start + np.repeat(span // blocks, blocks) * 9 // 10
    block_span = block_end - block_start
    call_start = (block_start[:, None] + block_span[:, None] * np.arange(calls) // calls).reshape(-1)
    call_end = call_start + np.repeat(block_span // calls, calls) * 8 // 10
    parts = [
        (["train.py(88): main"], [0], [int(start.min())], [int(end.max())]),
        (["train.py(61): train_step"] * len(start), [1] * len(start), start, end),
        (["model.py(140): forward_block"] * len(block_start), [2] * len(block_start), block_start, block_end),
        (["torch/nn/modules/module.py(1736): _call_impl"] * len(call_start), [3] * len(call_start), call_start,
         call_end),
    ]
    return pl.concat([pl.DataFrame({"rank": 0, "thread": CPU_THREAD, "function": names, "depth": depth,
                                    "start_ns": starts, "end_ns": ends},
                                   schema={"rank": pl.Int32, "thread": pl.Int64, "function": pl.String,
                                           "depth": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64})
                      for names, depth, starts, ends in parts])


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def index_run(run: Run) -> tuple[TimelineData, float, float]:
    """(data, seconds reading parquet, seconds indexing)."""
    started = time.perf_counter()
    frames = {table: Run(run.info).frame(table) for table in ("kernels", "memcpy", "ranges", "stack")}
    read = time.perf_counter() - started
    started = time.perf_counter()
    data = prepare_timeline(**frames)
    return data, read, time.perf_counter() - started


def callbacks(data: TimelineData, reps: int) -> list[dict[str, Any]]:
    """Server time of each kind of callback: view + figure + JSON, on windows never seen before."""
    start, end = data.start_ns, data.end_ns
    span = end - start
    rng = random.Random(0)
    selected = [kernel_key(FLASH_FWD), kernel_key(GEMM_QKV)]

    def random_window(width: int) -> tuple[int, int]:
        left = rng.randrange(start, end - width)
        return left, left + width

    pan_origin = random_window(span // 20)
    cases: list[tuple[str, Callable[[int], tuple[tuple[int, int] | None, int | None, list[str]]]]] = [
        ("whole run, all ranks", lambda i: (None, None, [])),
        ("whole run, rank 1", lambda i: (None, 1, [])),
        ("mid zoom (1/20 of the run)", lambda i: (random_window(span // 20), None, [])),
        ("pan a mid zoom by 5 %", lambda i: ((pan_origin[0] + (i + 1) * span // 400,
                                              pan_origin[1] + (i + 1) * span // 400), None, [])),
        ("deep zoom (2 ms: exact events)", lambda i: (random_window(2_000_000), None, [])),
        ("mid zoom, 2 kernels highlighted", lambda i: (random_window(span // 20), None, selected)),
    ]
    rows = []
    for label, state in cases:
        times: dict[str, list[float]] = {"view": [], "figure": [], "json": [], "total": [], "cpu": []}
        largest, marks, exact = 0, 0, 0
        for i in range(reps):
            window, rank, keys = state(i)
            cpu = time.process_time()
            t0 = time.perf_counter()
            with gc_paused():  # as the page's callback does
                view = timeline_view(data, window, rank, keys)
                t1 = time.perf_counter()
                figure = timeline_figure_dict(view, "Timeline of benchmark")
                t2 = time.perf_counter()
            body = to_json_plotly(figure)  # what Dash sends
            t3 = time.perf_counter()
            cpu = time.process_time() - cpu
            for key, value in (("view", t1 - t0), ("figure", t2 - t1), ("json", t3 - t2), ("total", t3 - t0),
                               ("cpu", cpu)):
                times[key].append(value * 1e3)
            largest = max(largest, len(body))
            marks = max(marks, view.marks)
            exact = max(exact, view.events.height)
        rows.append({"case": label, **{f"{k}_p50": percentiles(v)[0] for k, v in times.items()},
                     **{f"{k}_p95": percentiles(v)[1] for k, v in times.items()},
                     "payload": largest, "marks": marks, "exact": exact})
    return rows


# Arrow functions: the app's content security policy forbids evaluating bare expressions.
DRAWN = "() => document.querySelector('#timeline-graph .js-plotly-plot .main-svg .cartesianlayer') !== null"


def zoom_round_trips(data_dir: Path, run_id: str, reps: int) -> float:
    """Median seconds from a drag-zoom (relayout) to the new figure drawn."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = start_server(data_dir, port, data_dir.parent / "server.log")
    url = f"http://127.0.0.1:{port}/timeline?run={run_id}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(url)
            page.wait_for_function(DRAWN, timeout=120_000)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1_000)  # a relayout during the graph's first resize is not reported to Dash
            trips = []
            for i in range(reps):
                # Zoom as a drag does: relayout the x range, Dash sends relayoutData, a new figure comes back.
                started = time.perf_counter()
                page.evaluate("""(i) => { const plot = document.querySelector('#timeline-graph .js-plotly-plot');
                    window.__title = plot.layout.title.text;
                    const [a, b] = plot._fullLayout.xaxis.range; const w = (b - a) / 3;
                    Plotly.relayout(plot, {'xaxis.range': [a + w * (i % 2), a + w * (i % 2 + 1)]}); }""", i)
                page.wait_for_function("() => document.querySelector('#timeline-graph .js-plotly-plot').layout.title"
                                       ".text !== window.__title", timeout=60_000)
                trips.append(time.perf_counter() - started)
                page.locator("#timeline-reset").click()
                page.wait_for_function("() => document.querySelector('#timeline-graph .js-plotly-plot').layout"
                                       ".title.text.includes('whole run')", timeout=60_000)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    return statistics.median(trips)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--browser-reps", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="timeline-views-") as folder:
        data_dir = Path(folder) / "data"
        started = time.perf_counter()
        tables = make_tables(args.kernels, args.ranks)
        tables["stack"] = stack_frames(tables["ranges"])
        run_id = RunStore(data_dir).write("timeline-bench", tables)
        run = RunStore(data_dir).open(run_id)
        print(f"run: {args.kernels:,} kernels, {tables['ranges'].height:,} ranges, {tables['stack'].height:,} "
              f"stack frames, {tables['memcpy'].height:,} copies on {args.ranks} ranks "
              f"(generated and written in {time.perf_counter() - started:.1f} s)")
        data, read_s, index_s = index_run(run)
        print(f"first visit of the run in a server process: read parquet {read_s:.2f} s + index {index_s:.2f} s "
              f"({len(data.lanes)} lanes)\n")
        rows = callbacks(data, args.reps)
        header = (f"{'callback (server: view + figure + JSON)':<36} {'view':>7} {'figure':>7} {'json':>7} "
                  f"{'p50 ms':>7} {'p95 ms':>7} {'cpu p95':>8} {'payload':>9} {'marks':>6} {'exact':>6}  ok")
        print(header)
        print("-" * len(header))
        for row in rows:
            ok = row["total_p95"] <= TARGET_MS and row["payload"] <= TARGET_BYTES
            print(f"{row['case']:<36} {row['view_p50']:7.1f} {row['figure_p50']:7.1f} {row['json_p50']:7.1f} "
                  f"{row['total_p50']:7.1f} {row['total_p95']:7.1f} {row['cpu_p95']:8.1f} "
                  f"{row['payload'] / 1024:8.0f}K "
                  f"{row['marks']:6d} {row['exact']:6d}  {'yes' if ok else 'NO'}")
        print(f"\n(view / figure / json columns are p50 wall ms; cpu p95 is this process's CPU time, all its "
              f"threads;\n target: p95 <= {TARGET_MS:.0f} ms, payload <= {TARGET_BYTES // 1024 // 1024} MB)")
        if not args.no_browser:
            print()
            trip = zoom_round_trips(data_dir, run_id, args.browser_reps)
            print(f"{'zoom round trip: drag -> new figure drawn (median)':<52} {trip:6.2f} s")
            print("(first render of every page: benchmarks/first_render.py)")
        print(f"\nload average during the run: {' '.join(f'{v:.1f}' for v in os.getloadavg())} "
              f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
