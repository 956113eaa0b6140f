"""Benchmark: /compiler's UOp graph on the largest tinygrad file: how long a step click and a match step take.

    python benchmarks/tinygrad_graph.py --data DATA --run RUN          # an ingested tinygrad run
    python benchmarks/tinygrad_graph.py --files DIR                    # ingest rewrites.pkl (+ profile.pkl) first
    python benchmarks/tinygrad_graph.py --data DATA --run RUN --browser --serve

Finds the step whose input graph VIZ would draw the most nodes of (every step's graph rebuilt once: the
search time is printed apart) and the step with the most matches x nodes, then times what the page
waits for, each in the view function the page calls (`views.tinygrad.graph_view`: replay, folding,
bound, layout, cytoscape elements), caches cleared where a first visit would find them empty:

- cold: the first graph of the run (the UOp table read from parquet included);
- step click: the biggest step's input graph, the table already read;
- next match: the mean over its first 20 matches, stepping forward as the page does;
- "n more": the graph after its first match at 300, 1,200 and every node;
- last match of the heaviest step: requests of REPLAY_BUDGET_S each until the last graph is drawn.

`--browser` times the click on the biggest step in the step list, then five clicks on "next", each
until the graph and its note are redrawn (the server's work, the transfer and cytoscape's draw).

`--serve` (needs tinygrad): tinygrad's own VIZ server code on the same steps in a child process
(`get_full_rewrite`: its first two graphs as JSON, before its browser lays them out), the peer the ratio
is against. `--browser` (Debian chromium): the real page in a real browser, from the click on "next"
to the redrawn graph with its changed nodes framed.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import polars as pl  # noqa: E402

from dashboard.analysis.uop_graph import NodePool, UOpColumns, toposort  # noqa: E402
from dashboard.analysis.uop_shown import _drawable, excluded_nodes  # noqa: E402
from dashboard.store import Run, RunStore  # noqa: E402
from dashboard.views import tinygrad as view  # noqa: E402
from dashboard.views import tinygrad_data  # noqa: E402

SERVE = """
import json, sys, time
from tinygrad.uop.ops import RewriteTrace
from tinygrad.viz import serve as viz
data = viz.VizData(viz.load_pickle(sys.argv[1], default=RewriteTrace([], [], {})))
viz.load_rewrites(data)
out = {}
for key in sys.argv[2:]:
    context, step = map(int, key.split(":"))
    started = time.perf_counter()
    graphs = viz.get_full_rewrite(data, data.trace.rewrites[context][step])
    first = next(graphs)
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    second = next(graphs, None)
    out[key] = {"first_graph_s": first_s, "next_graph_s": time.perf_counter() - started,
                "nodes": len(first["graph"])}
json.dump(out, sys.stdout)
"""


def clear_caches() -> None:
    for function in (tinygrad_data.step_replay, tinygrad_data.uop_columns, tinygrad_data.rewrite_tables):
        function.cache_clear()


def biggest_steps(run: Run, rank: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """((context, step, drawable nodes) of the biggest input graph, (context, step, matches) of the heaviest)."""
    table = UOpColumns(run.scan("rewrite_uops").filter(pl.col("rank") == rank).collect())
    steps = run.scan("rewrite_steps").filter(pl.col("rank") == rank).collect()
    pool = NodePool()
    best, heaviest = (0, 0, -1), (0, 0, -1, -1)
    for context, step, sink, matches in steps.select("context", "step", "sink", "matches").iter_rows():
        if sink is None:
            continue
        root = pool.from_trace(table, sink)
        order = toposort(pool, root)
        drawable = len(_drawable(pool, root, excluded_nodes(pool, order, root))[0])
        if drawable > best[2]:
            best = (context, step, drawable)
        if (matches or 0) * drawable > heaviest[3]:
            heaviest = (context, step, matches or 0, (matches or 0) * drawable)
    return best, heaviest[:3]


def timed(run: Run, query: dict[str, str]) -> tuple[float, view.GraphView]:
    state = view.State.from_query(query, run)
    started = time.perf_counter()
    shown = view.graph_view(run, state)
    return time.perf_counter() - started, shown


def server_side(run: Run, biggest: tuple[int, int, int], heaviest: tuple[int, int, int]) -> dict[str, object]:
    context, step, _ = biggest
    base = {"ctx": str(context), "step": str(step)}
    clear_caches()
    cold, _ = timed(run, {"ctx": str(context), "step": "0"})
    tinygrad_data.step_replay.cache_clear()
    click, shown = timed(run, base)
    steps = [timed(run, {**base, "match": str(k)})[0] for k in range(1, min(20, shown.matches) + 1)]
    more = {nodes: timed(run, {**base, "match": "1", "nodes": str(nodes)})
            for nodes in (300, 1200, view.NODES_MAX)}
    hctx, hstep, hmatches = heaviest
    tinygrad_data.step_replay.cache_clear()
    requests, last_total, last = 0, 0.0, None
    while True:
        seconds, last = timed(run, {"ctx": str(hctx), "step": str(hstep), "match": str(hmatches)})
        requests += 1
        last_total += seconds
        if not last.pending or requests > 500:
            break
    return {
        "biggest_step": {"ctx": context, "step": step, "drawable_nodes": shown.drawable, "matches": shown.matches},
        "cold_first_graph_s": round(cold, 3),
        "step_click_s": round(click, 3), "step_click_nodes_drawn": shown.shown,
        "next_match_mean_s": round(statistics.mean(steps), 4) if steps else None,
        "next_match_max_s": round(max(steps), 4) if steps else None,
        "n_more_s": {str(nodes): {"s": round(seconds, 3), "drawn": drawn.shown} for nodes, (seconds, drawn)
                     in more.items()},
        "heaviest_step": {"ctx": hctx, "step": hstep, "matches": hmatches},
        "last_match_total_s": round(last_total, 2), "last_match_requests": requests,
        "last_match_drawn_nodes": last.shown if last else None,
    }


SERVE_TIMEOUT_S = 600


def serve_peer(rewrites: Path, steps: list[tuple[int, int]]) -> dict[str, object] | None:
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", SERVE, str(rewrites), *(f"{c}:{s}" for c, s in steps)],
                              capture_output=True, text=True, timeout=SERVE_TIMEOUT_S, check=True)
    except subprocess.TimeoutExpired:
        return {"error": f"tinygrad's VIZ code gave no first graph of these steps in {SERVE_TIMEOUT_S} s"}
    except (subprocess.SubprocessError, OSError) as exc:
        return {"error": f"{str(exc)[:300]} after {time.perf_counter() - started:.0f} s"}
    return json.loads(done.stdout)


def browser(data: Path, run: Run, biggest: tuple[int, int, int]) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO / "tests" / "browser"))
    from conftest import CHROMIUM_FLAGS, chromium_path, start_server

    server = start_server(data, data / "benchmark-server.log", "--no-demo")
    cy = "document.querySelector('#tg-graph')._cyreg.cy"
    try:
        with sync_playwright() as playwright:
            chrome = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            page = chrome.new_page(viewport={"width": 1600, "height": 1200})
            page.goto(f"{server.url}/compiler?run={run.id}&ctx={biggest[0]}&step=0", timeout=300_000)
            page.wait_for_function(f"() => {{ const el = document.querySelector('#tg-graph'); "
                                   f"return el && el._cyreg && {cy}.nodes().length > 0; }}", timeout=300_000)
            before = page.evaluate("() => document.querySelector('#tg-graph-note').innerText")
            started = time.perf_counter()
            page.locator(f"#tg-steps [data-tg-step='{biggest[1]}']").click()
            page.wait_for_function(f"before => document.querySelector('#tg-graph-note').innerText !== before "
                                   f"&& {cy}.nodes().length > 0", arg=before, timeout=300_000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            click = time.perf_counter() - started
            times = []
            for _ in range(5):
                before = page.evaluate("() => document.querySelector('#tg-graph-note').innerText")
                started = time.perf_counter()
                page.locator("#tg-next").click()
                page.wait_for_function(f"before => document.querySelector('#tg-graph-note').innerText !== before "
                                       f"&& {cy}.nodes().length > 0", arg=before, timeout=300_000)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                times.append(time.perf_counter() - started)
            chrome.close()
    finally:
        server.stop()
    return {"step_click_in_browser_s": round(click, 3), "next_match_in_browser_s": [round(t, 3) for t in times],
            "next_match_median_s": round(statistics.median(times), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--run")
    parser.add_argument("--files", type=Path, help="a folder with rewrites.pkl (and profile.pkl) to ingest first")
    parser.add_argument("--serve", action="store_true", help="time tinygrad's own VIZ code on the same steps")
    parser.add_argument("--browser", action="store_true", help="time the page in chromium")
    args = parser.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="tinygrad-graph-"))
    store = RunStore(data)
    run_id = args.run
    if args.files:
        from dashboard.ingest.pipeline import ingest_paths

        run_id = ingest_paths(store, [args.files], name="tinygrad-graph")
    if run_id is None:
        raise SystemExit("name a run (--data DATA --run RUN) or files to ingest (--files DIR)")
    run = store.open(run_id)
    started = time.perf_counter()
    biggest, heaviest = biggest_steps(run)
    report: dict[str, object] = {"run": run_id, "uops": run.info.row_counts.get("rewrite_uops"),
                                 "search_s": round(time.perf_counter() - started, 1)}
    report.update(server_side(run, biggest, heaviest))
    rewrites = next((Path(item["rewrites"]) for item in run.info.metadata.get("tinygrad", {}).get("runs", [])
                     if item.get("rewrites")), None)
    source = run.info.path / "source"
    if args.serve:
        local = next(iter(sorted(source.rglob("rewrites.pkl*"))), rewrites) if source.is_dir() else rewrites
        report["serve"] = serve_peer(local, [biggest[:2], heaviest[:2]]) if local else {"error": "no rewrites.pkl"}
    if args.browser:
        report["browser"] = browser(data, run, biggest)
    report["load"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
