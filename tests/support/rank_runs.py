"""Multi-rank runs for tests: generated per-rank Kineto traces, and a run laid out as a cluster ingest lays it.

`partitioned_run` runs the cluster's map step (cluster_worker.parse_file) in this
process and publishes the staging folder with the reduced summaries, exactly as
cluster_ingest does, without needing Dask.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.gen_kineto_trace import write_trace
from dashboard.analysis.rank_summaries import reduce_summaries
from dashboard.ingest.cluster_worker import TOKEN_FILE, parse_file
from dashboard.store import SUMMARY_PREFIX, RunStore


def rank_traces(folder: Path, count: int, kernels: int = 2500) -> Path:
    """`count` traces rank-0.json … in `folder`; a different seed per rank, so ranks differ."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(count):
        write_trace(folder / f"rank-{rank}.json", kernels, seed=rank, rank=rank)
    return folder


def partitioned_run(store: RunStore, inputs: Path, name: str = "parted", summaries: bool = True) -> str:
    """Publish the traces in `inputs` as a rank-partitioned run (with its summaries unless told not to)."""
    staging = store.new_staging(name)
    (staging / TOKEN_FILE).write_text("t", encoding="utf-8")
    files = sorted(inputs.iterdir())
    parts = [parse_file(str(f), str(staging), "t", i, f"{inputs.name}/{f.name}") for i, f in enumerate(files)]
    (staging / TOKEN_FILE).unlink()
    counts: dict[str, int] = {}
    for part in parts:
        for table, rows in part.row_counts.items():
            counts[table] = counts.get(table, 0) + rows
    reduced = reduce_summaries([part.summaries for part in parts]) if summaries else {}
    for summary, frame in reduced.items():
        frame.write_parquet(staging / f"{SUMMARY_PREFIX}{summary}.parquet")
    return store.publish_staging(staging, name, counts, [], [inputs], metadata={"summaries": sorted(reduced)})
