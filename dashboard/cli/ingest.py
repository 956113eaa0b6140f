"""`ingest PATHS…` (one process, a budgeted child, or a Dask cluster) and `runs`."""

from __future__ import annotations

import atexit
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from dashboard.cli.common import DATA_OPTION, fail
from dashboard.ingest.progress import StderrProgress

# Set by `main()`, the console command: a caller embedding `cli` (tests, scripts) keeps its process.
LEAVE_AFTER_INGEST = {"enabled": False}


def _leave_now() -> None:
    """End the process at once after a successful ingest: its output is flushed and its exit handlers
    run, but the interpreter's teardown (freeing every object and table one by one, ~0.05 s after a
    260 MB trace) is skipped, as the memory goes back to the system with the process anyway."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    logging.shutdown()
    os._exit(0)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@DATA_OPTION
@click.option("--name", default=None, help="Run name (default: from the first input's file name).")
@click.option("--debug", is_flag=True, default=False, help="Show a traceback on errors.")
@click.option("--max-seconds", type=float, default=None, envvar="DASHBOARD_INGEST_MAX_SECONDS", show_envvar=True,
              help="Parse in a child process and stop it after this many seconds (0: no limit).")
@click.option("--max-memory-mb", type=float, default=None, envvar="DASHBOARD_INGEST_MAX_MEMORY_MB",
              show_envvar=True, help="Parse in a child process and stop it above this resident memory (0: no limit).")
@click.option("--cluster", default=None, envvar="DASHBOARD_CLUSTER", show_envvar=True,
              help="Parse each file on a Dask cluster: 'local' (a LocalCluster sized to this machine) or a "
                   "scheduler address tcp://host:8786. The data folder must be shared with the workers.")
@click.option("--workers", type=int, default=None, help="Workers of a --cluster local (default: one per core).")
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[Path, ...], data_dir: Path, name: str | None, debug: bool,
           max_seconds: float | None, max_memory_mb: float | None, cluster: str | None, workers: int | None) -> None:
    """Detect the format of each file or folder (by content; .gz is transparent) and store one run.

    Several files or a folder of per-rank traces become one run with a rank column.
    Prints the created run id on stdout; progress goes to stderr. With --max-seconds or
    --max-memory-mb the parse runs in a child process that is stopped at its budget.
    Symbolic links are not followed: a link given here is refused, a link inside a folder is skipped.
    """
    from dashboard.collectors.failures import ingest_failure, one_line
    from dashboard.store import RunStore

    debug = debug or bool(ctx.obj and ctx.obj.get("debug"))
    _log_tracebacks(debug)
    progress = StderrProgress("ingest")
    store = RunStore(data_dir)
    try:
        if cluster:
            run_id = _ingest_on_cluster(store, list(paths), cluster, workers, name, progress)
        elif max_seconds or max_memory_mb:
            from dashboard.ingest.budget import Budget, run_in_child

            run_id = run_in_child(data_dir, list(paths), name, Budget(max_seconds or None, max_memory_mb or None),
                                  debug=debug)
        else:
            from dashboard.ingest.pipeline import ingest_paths

            run_id = ingest_paths(store, list(paths), name=name, progress=progress)
    except KeyboardInterrupt:
        progress.done()
        fail("error: interrupted; no run was written", debug)
    except Exception as exc:  # every failure is one line naming the inputs (IngestError or not)
        progress.done()
        fail(f"error: {ingest_failure(exc, ', '.join(str(p) for p in paths))}", debug)
    else:
        progress.done()
        for warning in store.open(run_id).info.warnings:
            click.echo(f"warning: {one_line(warning)}", err=True)
        click.echo(run_id)
        if LEAVE_AFTER_INGEST["enabled"]:
            _leave_now()


def _ingest_on_cluster(store: Any, paths: list[Path], address: str, workers: int | None, name: str | None,
                       progress: StderrProgress) -> str:
    from dashboard.ingest.cluster import close, connect, ingest_on_cluster  # Dask loads only when asked for

    client = connect(address, workers)
    try:
        run_id, _stats = ingest_on_cluster(store, paths, client, name, progress)
    finally:
        close(client)
    return run_id


def _log_tracebacks(debug: bool) -> None:
    """Logged tracebacks (the collectors' safety net logs one) reach stderr only under --debug."""
    logger = logging.getLogger("dashboard")
    if debug:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    elif not logger.handlers:
        logger.addHandler(logging.NullHandler())  # else Python's last-resort handler prints them


@click.command("runs")
@DATA_OPTION
def list_runs(data_dir: Path) -> None:
    """List the runs in the data folder, newest first."""
    from dashboard.store import RunStore

    infos = RunStore(data_dir).list_runs()
    if not infos:
        click.echo(f"no runs in {data_dir}", err=True)
        return
    width = max(len(info.id) for info in infos)
    for info in infos:
        evidence = ",".join(info.evidence) or "-"
        click.echo(f"{info.id:<{width}}  {info.created}  {evidence:<28}  {info.total_rows:>10} rows")
