"""Time the /memory page's interactions on a generated 100 k-op Tenstorrent run.

    python benchmarks/memory_views.py [--ops 100000] [--reps 20] [--store DIR]

Generates the demo memory-profiler run at `--ops` ops (runtime log + profiler
JSON, dashboard/demo/tt_memory_log.py) and ingests it into a temp store (or
reuses the newest run of `--store`, which the first run leaves behind when
given), then times the server side of every interaction: the very functions
the callbacks call (`pages.memory.respond` for cross-filter events,
`views.memory.rows_block` for table blocks, the CSV export), p50 / p95 wall and p50 CPU
over `--reps` repetitions, and the bytes each response carries (what Dash
would serialise: figures, Patches, components, rows).

"cold" rows use a state not seen before in every repetition (a new range, a new
op), so the LRU caches cannot help; "warm" rows repeat states. First load and
the first unit / peak-view toggle build whole-run caches and are reported on
their own. CPU time is shown because on a shared machine wall time includes
waiting for a core. Target (issue 7): <= 100 ms per interaction.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dash import no_update  # noqa: E402
from plotly.io.json import to_json_plotly  # noqa: E402
from scratch import work_folder  # noqa: E402

from dashboard.ingest.pipeline import ingest_paths  # noqa: E402
from dashboard.store import RunStore  # noqa: E402

TARGET_MS = 100.0


def timed(function: Callable[[int], Any], reps: int) -> tuple[float, float, float, Any]:
    """p50 and p95 wall ms, p50 CPU ms of `function(i)` over reps calls, and its last result."""
    walls, cpus, result = [], [], None
    for i in range(reps):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function(i)
        walls.append((time.perf_counter() - wall) * 1e3)
        cpus.append((time.process_time() - cpu) * 1e3)
    walls.sort()
    p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
    return statistics.median(walls), p95, statistics.median(cpus), result


def payload(result: Any) -> int:
    """Bytes of a response as Dash sends it (no_update outputs are not sent)."""
    if isinstance(result, tuple):
        return sum(payload(item) for item in result if item is not no_update)
    if isinstance(result, str):
        return len(result.encode())
    return len(to_json_plotly(result).encode())


def build_store(ops: int, folder: Path) -> tuple[RunStore, str, float]:
    from dashboard.demo import tt_memory_log

    started = time.perf_counter()
    sources = tt_memory_log.write(folder / "sources", n_ops=ops)
    store = RunStore(folder / "data")
    run_id = ingest_paths(store, sources, name=f"memory-{ops}")
    return store, run_id, time.perf_counter() - started


def server_work(store: RunStore, run_id: str, reps: int) -> list[tuple[str, float, float, float, int, bool]]:
    # The page modules register callbacks with Dash: an app must exist first.
    from dashboard.app import create_app
    from dashboard.settings import Settings

    create_app(Settings(data_dir=store.data_dir, seed_demo=False))
    from dashboard.pages import memory as page
    from dashboard.pages.memory import respond
    from dashboard.views import memory as memory_view
    from dashboard.views import memory_data as view
    from dashboard.views import memory_events as events
    from dashboard.views.memory import State as ViewState

    rows: list[tuple[str, float, float, float, int, bool]] = []

    def add(label: str, function: Callable[[int], Any], repetitions: int = reps, interaction: bool = True) -> None:
        """Time `function` and the JSON encoding of what it returns (Dash does both on the server)."""
        p50, p95, cpu, size = timed(lambda i: payload(function(i)), repetitions)
        rows.append((label, p50, p95, cpu, size, interaction))

    add("first load: layout (cold: parquet read, prepare, figures)", lambda _: page.layout(run=run_id), 1, False)
    add("page load again: layout (warm)", lambda _: page.layout(run=run_id), 5, False)
    run = store.open(run_id)
    data = memory_view.memory_data(run, None)
    first, last = data.first_op, data.last_op
    rng = random.Random(0)
    base = ViewState()

    def span(_: int, smallest: int = 200, largest: int = 30_000) -> tuple[int, int]:
        start = rng.randrange(first, last - smallest)
        return start, min(last, start + rng.randrange(smallest, largest))

    def event(before: ViewState, kind: str, payload_: Any) -> tuple:
        state = events.after_event(data, before, kind, payload_)
        assert state is not None
        return respond(run, before, state, frozenset({kind}), 1)

    def brush(i: int) -> tuple:
        a, b = span(i)
        return event(base, "select", {"range": {"x": [a - 0.3, b + 0.3]}})

    def zoom(i: int) -> tuple:
        a, b = span(i, 100, 5_000)
        return event(base, "relayout", {"xaxis.range[0]": a, "xaxis.range[1]": b})

    zoomed = ViewState(ops=(first + 500, first + 1500), zoom=(first + 500, first + 1500))
    ops_with_meta = data.ops.filter(~data.ops["housekeeping"])["op_index"].to_list()

    def click(i: int) -> tuple:
        op = rng.choice(ops_with_meta)
        return event(base, "click", {"points": [{"x": op, "customdata": [op, "?"]}]})

    op_types = [name for name, _ in data.op_types]

    def optype(i: int) -> tuple:
        return event(base, "optype", [op_types[i % len(op_types)]])

    growth = view.growth_view(data, None, ())["op_index"].to_list()

    def growth_click(i: int) -> tuple:
        return event(ViewState(op=growth[(i + 1) % len(growth)]), "growth",
                     {"points": [{"customdata": [growth[i % len(growth)], "?"]}]})

    def program(i: int) -> tuple:
        name = data.programs[i % len(data.programs)][0]
        return event(base, "program", [name])

    add("brush a new op range (cold): patch + growth + stats + table count", brush)
    add("x-zoom into a new window (cold): patch with full-detail curves", zoom)
    add("reset the zoom (double-click)", lambda _: event(zoomed, "relayout", {"xaxis.autorange": True}))
    add("click a new op (cold): line + detail + growth outline", click)
    add("select an op type (highlight on every track + table)", optype)
    add("click a growth bar (op + its type)", growth_click)
    add("program filter", program)
    add("first unit toggle (builds the device-total figure)", lambda _: event(base, "unit", "device"), 1, False)
    add("unit toggle (warm)", lambda _: event(base, "unit", "device"))
    add("first peak-view toggle (builds that figure)", lambda _: event(base, "peaks", "profiler"), 1, False)
    add("peak-view toggle (warm)", lambda _: event(base, "peaks", "profiler"))

    def table_after_brush(i: int) -> dict:
        state = ViewState(ops=span(i))
        return memory_view.rows_block(run, state, {"startRow": 0, "endRow": 200, "sortModel": []})

    def table_sort(i: int) -> dict:
        columns = ("DRAM_delta", "L1_delta", "L1_allocated", "op_type", "loc")
        sort = [{"colId": columns[i % len(columns)], "sort": "desc" if i % 2 else "asc"}]
        return memory_view.rows_block(run, ViewState(ops=span(i)), {"startRow": 0, "endRow": 200, "sortModel": sort})

    def table_scroll(i: int) -> dict:
        start = rng.randrange(0, 50_000, 200)
        return memory_view.rows_block(run, base, {"startRow": start, "endRow": start + 200, "sortModel": []})

    add("table: first block after a new brush (cold)", table_after_brush)
    add("table: sort a new range by a column (cold)", table_sort)
    add("table: scroll to another block", table_scroll)
    add("CSV download of the whole table (50 k ops)",
        lambda _: memory_view.table_csv(run, base)[0], 3, False)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--store", type=Path, help="reuse (or create) the generated run in this folder")
    args = parser.parse_args()
    with work_folder(args.store) as folder:
        existing = RunStore(folder / "data").list_runs() if (folder / "data").exists() else []
        if existing:
            store, run_id, seconds = RunStore(folder / "data"), existing[0].id, 0.0
            print(f"reusing run {run_id} in {folder}")
        else:
            store, run_id, seconds = build_store(args.ops, folder)
            print(f"generated and ingested {args.ops:,} ops in {seconds:.1f} s")
        info = store.open(run_id).info
        print(f"run {run_id}: {info.row_counts.get('op_memory', 0):,} op_memory rows, "
              f"{info.row_counts.get('op_meta', 0):,} op_meta rows\n")
        rows = server_work(store, run_id, args.reps)
    width = max(len(label) for label, *_ in rows)
    print(f"{'interaction':<{width}}  {'p50 ms':>8}  {'p95 ms':>8}  {'cpu ms':>8}  {'payload':>10}  target")
    for label, p50, p95, cpu, size, interaction in rows:
        verdict = ("ok" if p95 <= TARGET_MS else "MISSED") if interaction else "n/a"
        print(f"{label:<{width}}  {p50:8.1f}  {p95:8.1f}  {cpu:8.1f}  {size / 1024:8.1f} K  {verdict}")


if __name__ == "__main__":
    main()
