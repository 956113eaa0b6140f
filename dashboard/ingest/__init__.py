"""From a user's paths to a published run.

- `pipeline.py`: one process: inputs checked, the collectors' registry detects and parses, the store publishes.
- `budget.py` + `child.py`: the same in a child process stopped at a time / memory budget (uploads, `--max-*`).
- `jobs.py`: the server's uploads as jobs on disk (progress, failures, retry), each parsed by such a child.
- `cluster.py` + `cluster_worker.py`: many ranks mapped over a Dask cluster, per-rank summaries reduced.
- `sources.py`: inputs never read through a link, and the run's default name.
- `allocator.py`: polars' allocator setting for an ingest, chosen before polars loads.
- `progress.py`: progress lines on stderr and the phases an upload went through.

This package's `__init__` imports nothing: `allocator` must be importable before polars loads.
"""
