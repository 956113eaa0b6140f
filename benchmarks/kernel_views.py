"""Time the /kernels and /layers views on a 1 M-kernel run.

    python benchmarks/kernel_views.py [--kernels 1000000] [--reps 30]

Builds a synthetic run (benchmarks/synthetic_kernel_run.py) into a temp
store, then:

1. server work of every cross-filter callback: the page's `render` (the
   function both `layout` and the callback call: cached analysis + figures +
   table rows) for each kind of interaction, p50 / p95 over `--reps`
   repetitions. "cold" rows use a state not seen before (a new window, a new
   layer), so they include the recomputation the cache cannot save; "warm"
   rows are selection changes, which only re-style;
2. the size of every figure sent (len(fig.to_json())) and of the table rows;
(The first render of every page in a browser: benchmarks/first_render.py.)

Targets (issue 5): each callback <= 100 ms p95, each payload <= 2 MB.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import plotly.graph_objects as go  # noqa: E402
from dash import Patch  # noqa: E402

from benchmarks.synthetic_kernel_run import make_tables  # noqa: E402
from dashboard.store import Run, RunStore  # noqa: E402

TARGET_MS = 100.0
TARGET_BYTES = 2 * 1024 * 1024
METADATA = {"kineto": {"files": [{"rank": 0, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}]}}


def timed(function: Callable[[int], Any], reps: int) -> tuple[float, float, Any]:
    """p50 and p95 in ms of `function(i)` over reps calls, and the last result."""
    times, result = [], None
    for i in range(reps):
        started = time.perf_counter()
        result = function(i)
        times.append((time.perf_counter() - started) * 1e3)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], result


def payload(view: dict[str, Any], keys: tuple[str, ...]) -> int:
    """Bytes of the figures (and table rows) a callback sends."""
    size = 0
    for key in keys:
        value = view[key]
        if isinstance(value, go.Figure):
            size += len(value.to_json())
        elif isinstance(value, Patch):
            size += len(json.dumps(value.to_plotly_json(), default=str))
        else:
            size += len(json.dumps(value, default=str))
    return size


def server_work(run: Run, reps: int) -> list[tuple[str, float, float, int]]:
    # The page modules register themselves with Dash: an app must exist first.
    from dashboard.app import create_app
    from dashboard.settings import Settings

    create_app(Settings(data_dir=run.info.path.parents[1], seed_demo=False))
    from dashboard.analysis import kernels as kernel_analysis
    from dashboard.figures.kernels import keys_from_event
    from dashboard.pages import kernels as kernels_page
    from dashboard.views import layers as layers_view
    from dashboard.views import run_views

    rows: list[tuple[str, float, float, int]] = []
    kernel_out = ("bar", "scatter", "rows", "columns")
    layer_out = ("runtime", "throughput", "detail_bar", "detail_rows")
    start = int(run.scan("kernels").select("start_ns").min().collect().item())
    end = int(run.scan("kernels").select("end_ns").max().collect().item())
    rng = random.Random(0)

    def window(_: int) -> tuple[int, int]:
        a = rng.randrange(start, end)
        return a, min(end, a + rng.randrange((end - start) // 50, (end - start) // 4))

    # First load of the page: reads parquet, prepares, aggregates (nothing cached).
    def cold_kernels(_: int) -> dict:
        run_views.clear_caches()
        return kernels_page.render(Run(run.info), None, None, "name", 20, [])

    p50, p95, view = timed(cold_kernels, 3)
    rows.append(("kernels: first load (cold, incl. parquet read)", p50, p95, payload(view, kernel_out)))
    kernels_page.render(run, None, None, "name", 20, [])
    summary = run_views.kernel_view(run, None, None, "name").summary
    keys = summary.get_column("key").to_list()
    pairs = run_views.kernel_view(run, None, None, "name").pairs

    # Selection changes go through restyle_selection (patches), as the callback does.
    def bar_click(i: int) -> dict:
        chosen = kernel_analysis.keys_for_groups(pairs, keys_from_event({"points": [{"customdata": [keys[i % 20]]}]}))
        return kernels_page.restyle_selection(run, None, None, "name", 20, chosen)

    def scatter_select(i: int) -> dict:
        lasso = {"points": [{"customdata": [k]} for k in keys[i % 5: i % 5 + 40]]}
        return kernels_page.restyle_selection(run, None, None, "name", 20, kernel_analysis.keys_for_groups(
            pairs, keys_from_event(lasso)))

    def table_select(i: int) -> dict:
        return kernels_page.restyle_selection(run, None, None, "name", 20, keys[i % 7: i % 7 + 3])

    def regroup(i: int) -> dict:
        return kernels_page.render(run, None, None, ("op", "layer", "name")[i % 3], 20, keys[:2])

    def rank_change(i: int) -> dict:
        return kernels_page.render(run, i % 2, None, "name", 50, keys[:2])

    def window_kernels(i: int) -> dict:
        return kernels_page.render(run, None, window(i), "name", 20, keys[:2])

    for label, function, sent in (("kernels: bar click (selection)", bar_click, ("bar", "scatter")),
                                  ("kernels: scatter box select (40 kernels)", scatter_select, ("bar", "scatter")),
                                  ("kernels: table row selection", table_select, ("bar", "scatter"))):
        p50, p95, view = timed(function, reps)
        rows.append((label, p50, p95, payload(view, sent)))
    for label, function in (("kernels: group by op/layer/kernel (warm)", regroup),
                            ("kernels: rank 0/1, top 50 (warm)", rank_change),
                            ("kernels: new time window (cold, all ranks)", window_kernels)):
        if "warm" in label:  # fill the cache the way a first visit of each state does
            for i in range(3):
                function(i)
        p50, p95, view = timed(function, reps)
        rows.append((label, p50, p95, payload(view, kernel_out)))

    def render_layers(run: Run, rank: int | None, window: tuple[int, int] | None, selected: tuple[str, str] | None,
                      dtype: str) -> dict:
        """What the /layers callback sends for a new view: both box charts and the selected layer's kernels."""
        state = layers_view.State(rank=rank, window=window, dtype=dtype).select(selected)
        boxes, detail = layers_view.box_figures(run, state), layers_view.detail(run, state)
        return {"runtime": boxes["layer-runtime"], "throughput": boxes["layer-throughput"],
                "detail_bar": detail.figure or {}, "detail_rows": detail.rows}

    def cold_layers(_: int) -> dict:
        run_views.clear_caches()
        return render_layers(Run(run.info), None, None, None, "bf16")

    p50, p95, view = timed(cold_layers, 3)
    rows.append(("layers: first load (cold, incl. parquet read)", p50, p95, payload(view, layer_out)))
    render_layers(run, None, None, None, "bf16")
    layer_names = run_views.layer_view(run, None, None).stats.get_column("layer").unique().to_list()
    combos = [(layer, p) for layer in layer_names for p in ("forward", "backward")]

    def layer_click(i: int) -> dict:  # a layer not clicked before: its kernels are summarised afresh
        run_views.layer_kernel_view.cache_clear()
        state = layers_view.State().select(combos[i % len(combos)])
        detail = layers_view.detail(run, state)
        return {"shapes": layers_view.highlight(run, state), "detail_bar": detail.figure or {},
                "detail_rows": detail.rows}

    def dtype_change(i: int) -> dict:
        return render_layers(run, None, None, combos[0], ("bf16", "fp8", "tf32")[i % 3])

    def window_layers(i: int) -> dict:
        return render_layers(run, None, window(i), combos[0], "bf16")

    p50, p95, view = timed(layer_click, reps)
    rows.append(("layers: click a box (cold layer kernels)", p50, p95,
                 payload(view, ("shapes", "detail_bar", "detail_rows"))))
    for label, function in (("layers: peak dtype change (warm)", dtype_change),
                            ("layers: new time window (cold)", window_layers)):
        p50, p95, view = timed(function, reps)
        rows.append((label, p50, p95, payload(view, layer_out)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kernel-views-") as folder:
        data_dir = Path(folder) / "data"
        started = time.perf_counter()
        tables = make_tables(args.kernels, args.ranks)
        generated = time.perf_counter() - started
        store = RunStore(data_dir)
        run_id = store.write("bench", tables, metadata=METADATA)
        print(f"run: {args.kernels:,} kernels, {tables['ranges'].height:,} ranges, {args.ranks} ranks "
              f"(generated in {generated:.1f} s, stored in {time.perf_counter() - started - generated:.1f} s)")
        rows = server_work(store.open(run_id), args.reps)
        print(f"\n{'callback server work':<48} {'p50 ms':>8} {'p95 ms':>8} {'payload':>10}  ok")
        for label, p50, p95, size in rows:
            ok = (p95 <= TARGET_MS or "first load" in label) and size <= TARGET_BYTES
            print(f"{label:<48} {p50:8.1f} {p95:8.1f} {size / 1024:8.0f} KB  {'yes' if ok else 'NO'}")
        print("(first-load rows are the one-off cost of opening a run in a fresh process; target applies to "
              "the cross-filter rows)")


if __name__ == "__main__":
    main()
