"""Ingest a job's per-rank traces on a Dask cluster: map on the workers, reduce on the client.

`ingest DIR --cluster local` starts a `dask.distributed.LocalCluster` sized to
this machine; `--cluster tcp://host:8786` joins an existing scheduler (started
by dask-jobqueue on SLURM, or the Dask Helm chart on Kubernetes: docs/scaling.md).

1. the client detects the inputs' formats (a sniff of each file's head) and
   opens a staging folder in the data folder, as a single-process ingest does;
2. it writes a token there, and every worker must read it back: the data
   folder has to be on a filesystem all workers share (else one clear error);
3. map: each input file is parsed on a worker (cluster_worker.parse_file),
   which writes its tables partitioned by rank into the staging folder;
4. reduce: the client joins the per-file summaries (analysis/rank_summaries.py)
   into `summary_<name>.parquet`, sums the row counts, and publishes the run
   with one rename (store.publish_staging), exactly as a single-process ingest.

Dask is an optional extra (`pip install -e ".[cluster]"`), imported here only.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dashboard.analysis.rank_summaries import reduce_summaries
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, ProgressFn, no_progress
from dashboard.ingest.archives import UNPACKED_DIR, named_in, remove_unpacked, unpack_inputs
from dashboard.ingest.cluster_worker import (
    TOKEN_FILE,
    FolderNotShared,
    PartResult,
    check_shared,
    parse_file,
    peak_rss_bytes,
)
from dashboard.ingest.sources import default_name, refuse_symlink_inputs
from dashboard.store import SUMMARY_PREFIX, RunStore

CONNECT_TIMEOUT_S = 10.0
SETTLE_TIMEOUT_S = 120.0  # how long a failed ingest waits for running workers before removing its staging


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise IngestError("--cluster", 'needs Dask: pip install -e ".[cluster]" (dask[distributed])') from None
    return distributed


def connect(address: str, workers: int | None = None, timeout_s: float | None = None) -> Any:
    """A dask Client on a new LocalCluster (`local`) or on the scheduler at `address`."""
    distributed = _dask()
    timeout_s = timeout_s or CONNECT_TIMEOUT_S
    if address == "local":
        cpus = os.cpu_count() or 1
        count = workers or cpus
        # One thread per worker process (parsing holds the GIL in places); the cores a worker
        # gets for polars and the Kineto decoder are shared out so workers do not oversubscribe.
        share = str(max(1, cpus // count))
        with _fork_warm_workers(distributed):
            cluster = distributed.LocalCluster(
                n_workers=count, threads_per_worker=1, processes=True, dashboard_address=":0",
                silence_logs=logging.CRITICAL, env={"POLARS_MAX_THREADS": share, "DASHBOARD_INGEST_WORKERS": share})
        return distributed.Client(cluster)
    try:
        return distributed.Client(address, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError) as exc:
        raise IngestError(address, f"cannot reach the Dask scheduler within {timeout_s:g} s "
                                   f"({type(exc).__name__}); is it running and is the address right?") from None


@contextmanager
def _fork_warm_workers(distributed: Any) -> Iterator[None]:
    """Start local workers from a fork server that has imported the parser once.

    Spawned workers (Dask's default) each re-import the parent's main module, which for
    `python -m dashboard.app` is the whole Dash app, and then polars and the collectors;
    forked from a warm server they start with those already loaded. Not on Windows (no fork).
    """
    if sys.platform == "win32":
        yield
        return
    import dask

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        context = distributed.utils.get_mp_context()  # Dask sets its own preload list on first use
        context.set_forkserver_preload(["distributed", "polars", "dashboard.ingest.cluster_worker",
                                        *registry.COLLECTOR_MODULES])
        yield


def close(client: Any) -> None:
    """Close the client and, for `local`, the cluster it started."""
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def source_names(inputs: Sequence[Path], files: Sequence[Path]) -> dict[Path, str]:
    """Where each file goes under `source/`: as copy_sources lays out the same inputs."""
    names: dict[Path, str] = {}
    taken: set[str] = set()
    for index, root in enumerate(inputs):
        base = root.name if root.name not in taken else f"{index}/{root.name}"
        taken.add(root.name)
        for file in files:
            if file == root:
                names[file] = base
            elif root.is_dir() and file.is_relative_to(root):
                names[file] = f"{base}/{file.relative_to(root).as_posix()}"
    return names


def _write_token(staging: Path) -> str:
    token = uuid.uuid4().hex
    (staging / TOKEN_FILE).write_text(token, encoding="utf-8")
    return token


def check_workers_share(client: Any, staging: Path, token: str) -> int:
    """How many workers see the staging folder; FolderNotShared (one line) when one does not."""
    try:
        hosts = client.run(check_shared, str(staging), token)
    except FolderNotShared:
        raise
    except Exception as exc:  # a worker that died, or an exception Dask could not ship back
        raise IngestError(staging, f"a Dask worker could not check the data folder: {exc}") from exc
    if not hosts:
        raise IngestError(str(client.scheduler.address), "the Dask cluster has no workers")
    return len(hosts)


def _merge_metadata(parts: Sequence[PartResult]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        for collector, meta in part.metadata.items():
            target = merged.setdefault(collector, {})
            for key, value in meta.items():
                if isinstance(value, list) and isinstance(target.get(key), list):
                    target[key] = target[key] + [v for v in value if v not in target[key]]
                elif isinstance(value, dict) and isinstance(target.get(key), dict):
                    target[key] = {**target[key], **value}
                else:
                    target.setdefault(key, value)
    return merged


def _shared_rank_warnings(parts: Sequence[PartResult]) -> list[str]:
    owner: dict[int, str] = {}
    warnings = []
    for part in parts:
        for rank in part.ranks:
            if rank in owner:
                warnings.append(f"{part.file}: rank {rank} is also claimed by {Path(owner[rank]).name}; "
                                f"both are kept under rank {rank}")
            owner.setdefault(rank, part.file)
    return warnings


def ingest_on_cluster(store: RunStore, paths: Sequence[Path | str], client: Any, name: str | None = None,
                      progress: ProgressFn = no_progress) -> tuple[str, dict[str, Any]]:
    """Parse the inputs on the cluster behind `client` and publish one run; returns (run id, cluster stats)."""
    inputs = [Path(p) for p in paths]
    if not inputs:
        raise IngestError("(no input)", "nothing to ingest: give at least one file or folder")
    store.remove_stale_staging()
    refuse_symlink_inputs(inputs)
    staging = store.new_staging(name or default_name(inputs))
    try:
        # Archives opened like folders inside the staging folder, which the workers share; the run's source
        # keeps each archive itself, not its members (a member's source name is empty: the worker copies nothing).
        unpacked = unpack_inputs(inputs, staging / UNPACKED_DIR, progress=progress)
        progress(0.0, "detecting formats")
        detection = registry.detect(unpacked.inputs)
        files = sorted(f for group in detection.groups.values() for f in group)
        names = source_names(inputs, [f for f in [*files, *detection.ignored] if not unpacked.is_member(f)])
        names |= {f: "" for f in [*files, *detection.ignored] if unpacked.is_member(f)}
        names |= source_names(inputs, list(unpacked.folders.values()))
        token = _write_token(staging)
        workers = check_workers_share(client, staging, token)
        progress(0.0, f"parsing {len(files)} files on {workers} Dask workers")
        count = len(files)  # client.map maps positional sequences only
        futures = client.map(parse_file, [str(f) for f in files], [str(staging)] * count, [token] * count,
                             list(range(count)), [names[f] for f in files], pure=False)
        parts = _gather(client, futures, staging, progress)
        # Kept as sources, as a single-process ingest keeps them: unrecognised files, and each archive.
        for kept in [*(f for f in detection.ignored if names[f]), *unpacked.folders.values()]:
            target = staging / "source" / names[kept]
            if not target.exists():  # an archive inside an input folder is copied once
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(kept, target)
        row_counts: dict[str, int] = {}
        for part in parts:
            for table, rows in part.row_counts.items():
                row_counts[table] = row_counts.get(table, 0) + rows
        if not any(row_counts.values()):
            raise IngestError(inputs[0], "recognised, but it holds no events or records to show")
        progress(None, "reducing per-rank summaries")
        summaries = reduce_summaries([part.summaries for part in parts])
        for summary, frame in summaries.items():
            frame.write_parquet(staging / f"{SUMMARY_PREFIX}{summary}.parquet", compression="zstd")
        (staging / TOKEN_FILE).unlink()
        # Peaks so far: the client's own (it holds only summaries) and the largest worker's.
        stats = {"workers": workers, "files": len(files), "client_peak_rss_bytes": peak_rss_bytes(),
                 "worker_peak_rss_bytes": max(client.run(peak_rss_bytes).values(), default=0)}
        metadata = named_in({**_merge_metadata(parts), "summaries": sorted(summaries), "cluster": stats}, unpacked)
        warnings = unpacked.warnings + [f"{p}: not recognised, kept as a source but not parsed"
                                        for p in detection.ignored]
        warnings += _shared_rank_warnings(parts) + [w for part in parts for w in part.warnings]
        warnings = [unpacked.name(w) for w in warnings]
        remove_unpacked(staging / UNPACKED_DIR)
        collectors = sorted({c for part in parts for c in part.collectors})
        progress(None, "publishing run")
        copied = [names[f] for f in [*files, *detection.ignored, *unpacked.folders.values()] if names.get(f)]
        run_id = store.publish_staging(staging, name or default_name(inputs), row_counts,
                                       sorted(set(copied)), inputs,
                                       sum(p.parse_seconds for p in parts), collectors, metadata, warnings)
        return run_id, stats
    finally:
        store.drop_staging(staging)


def _gather(client: Any, futures: list[Any], staging: Path, progress: ProgressFn) -> list[PartResult]:
    distributed = _dask()
    parts: list[PartResult] = []
    try:
        for done, future in enumerate(distributed.as_completed(futures), start=1):
            parts.append(future.result())
            progress(done / len(futures), f"parsed {done} of {len(futures)} files")
    except BaseException:
        _stop_writers(client, futures, staging)
        raise
    return sorted(parts, key=lambda part: part.file)


def _stop_writers(client: Any, futures: list[Any], staging: Path) -> None:
    """Before a failed ingest removes its staging folder: no worker may still be writing into it.

    Dask cannot interrupt a running task, so: the token goes first (a worker checks it before
    each file it writes, and stops), tasks not started are cancelled, and the running ones are
    waited for (a bounded time).
    """
    (staging / TOKEN_FILE).unlink(missing_ok=True)
    try:
        running = {key for keys in client.processing().values() for key in keys}
        client.cancel([future for future in futures if future.key not in running])
        _dask().wait([future for future in futures if future.key in running], timeout=SETTLE_TIMEOUT_S)
    except Exception:  # a lost scheduler or the timeout: the cleanup goes on regardless
        pass
