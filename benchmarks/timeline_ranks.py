"""/timeline on a many-rank cluster-ingested run, one rank at a time (benchmarks/timeline_views.py --cluster-ranks N).

Writes N per-rank Kineto traces (benchmarks/gen_kineto_trace.py: a cpu_op, its
cudaLaunchKernel and its kernel per unit), publishes them as a cluster ingest
lays them out (one folder per rank and table: the cluster's map step,
ingest.cluster_worker.parse_file, run in this process), then times what a user
of one rank waits for: indexing that rank (a filtered scan of the partitioned
tables), its whole-rank view, a search, a jump to a match with its details and
arrows, and a view of another rank.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.gen_kineto_trace import write_trace
from dashboard.analysis.rank_summaries import reduce_summaries
from dashboard.ingest.cluster_worker import TOKEN_FILE, parse_file
from dashboard.store import SUMMARY_PREFIX, RunStore
from dashboard.views import timeline as page_view
from dashboard.views.timeline_details import details_pane
from dashboard.views.timeline_find import jump


def cluster_run(folder: Path, ranks: int, kernels: int) -> tuple[RunStore, str, float]:
    """(store, run id, seconds to write and publish) of an N-rank run laid out as a cluster ingest."""
    started = time.perf_counter()
    traces = folder / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        write_trace(traces / f"rank-{rank}.json", kernels, seed=rank, rank=rank)
    store = RunStore(folder / "data")
    staging = store.new_staging("ranks")
    (staging / TOKEN_FILE).write_text("t", encoding="utf-8")
    files = sorted(traces.iterdir())
    parts = [parse_file(str(f), str(staging), "t", i, f"traces/{f.name}") for i, f in enumerate(files)]
    (staging / TOKEN_FILE).unlink()
    counts: dict[str, int] = {}
    for part in parts:
        for table, rows in part.row_counts.items():
            counts[table] = counts.get(table, 0) + rows
    reduced = reduce_summaries([part.summaries for part in parts])
    for summary, frame in reduced.items():
        frame.write_parquet(staging / f"{SUMMARY_PREFIX}{summary}.parquet")
    run_id = store.publish_staging(staging, "ranks", counts, [], [traces], metadata={"summaries": sorted(reduced)})
    return store, run_id, time.perf_counter() - started


def _timed(label: str, action: Any) -> tuple[dict[str, Any], Any]:
    started = time.perf_counter()
    result = action()
    return {"case": label, "ms": (time.perf_counter() - started) * 1e3}, result


def rank_views(store: RunStore, run_id: str, ranks: int) -> list[dict[str, Any]]:
    """Milliseconds of each step a user of one rank waits for, first visits (nothing cached)."""
    run = store.open(run_id)
    rank = ranks // 2
    rows = []
    row, state = _timed("open the run (rank menu, first rank)", lambda: page_view.State.from_query({}, run))
    rows.append({**row, "note": f"opens on rank {state.rank}"})
    asked = page_view.State.from_query({"rank": str(rank)}, run)
    row, _ = _timed(f"index rank {rank} (filtered scan of {ranks} ranks)", lambda: page_view.timeline_data(run, rank))
    rows.append(row)
    row, drawn = _timed(f"rank {rank}: whole-rank view", lambda: page_view.drawn(run, asked))
    rows.append({**row, "note": f"{drawn.view.marks:,} marks"})
    searched = asked.replace(find="sgemm")
    row, found = _timed(f"rank {rank}: find 'sgemm' (builds its index)", lambda: page_view.drawn(run, searched).found)
    rows.append({**row, "note": f"{found.count:,} matches"})
    row, moved = _timed(f"rank {rank}: next match, its view", lambda: page_view.drawn(run, jump(run, searched, 1)))
    rows.append({**row, "note": f"{moved.view.flows.height} arrows"})
    row, pane = _timed(f"rank {rank}: its details pane", lambda: details_pane(run, jump(run, searched, 1)))
    rows.append({**row, "note": pane.title if pane else "none"})
    other = page_view.State.from_query({"rank": str(rank + 1)}, run)
    row, _ = _timed(f"rank {rank + 1}: index + whole-rank view", lambda: page_view.drawn(run, other))
    rows.append(row)
    return rows
