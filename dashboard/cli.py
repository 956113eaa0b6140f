"""The one entry point: `python -m dashboard.app` (or `dashboard`) and its subcommands.

click gives us `--help` for every flag and environment-variable fallbacks
(CLI > env > default) without hand-written parsing.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import click

from dashboard.allocator import choose_for_ingest, ingest_inputs, input_bytes

# The ingest options that take a value (their values are not inputs); a test checks them against the command.
INGEST_VALUE_OPTIONS = ("--data", "--name", "--max-seconds", "--max-memory-mb", "--cluster", "--workers")
if "ingest" in sys.argv[1:]:  # before anything loads polars (see dashboard.allocator); not for serving
    choose_for_ingest(input_bytes(ingest_inputs(sys.argv[sys.argv.index("ingest") + 1:], INGEST_VALUE_OPTIONS)))

from dashboard.settings import DEFAULT_HOST, DEFAULT_MAX_UPLOAD_MB, DEFAULT_PORT, Settings  # noqa: E402 (after the allocator)

DATA_OPTION = click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="data",
    show_default=True,
    envvar="DASHBOARD_DATA",
    show_envvar=True,
    help="Data folder holding runs/.",
)


# Set by `main()`, the console command: a caller embedding `cli` (tests, scripts) keeps its process.
_LEAVE_AFTER_INGEST = False


def _leave_now() -> None:
    """End the process at once after a successful ingest: its output is flushed and its exit handlers
    run, but the interpreter's teardown (freeing every object and table one by one, ~0.05 s after a
    260 MB trace) is skipped, as the memory goes back to the system with the process anyway."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    logging.shutdown()
    os._exit(0)


class StderrProgress:
    """Progress on stderr: a bar on a terminal, occasional lines elsewhere."""

    # Quick work prints nothing, so a failure stays one line on stderr (benchmarks set
    # DASHBOARD_PROGRESS_QUIET_S=0 to see every phase from the start).
    QUIET_SECONDS = float(os.environ.get("DASHBOARD_PROGRESS_QUIET_S") or 1.0)

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.started = time.monotonic()
        self.last_print = 0.0
        self.last_message = ""
        self.printed = False

    def __call__(self, fraction: float | None, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.QUIET_SECONDS:
            return
        if message == self.last_message and now - self.last_print < 0.5:
            return
        self.last_print, self.last_message = now, message
        percent = "" if fraction is None else f"{fraction * 100:5.1f}% "
        line = f"{self.label}: {percent}{message}"
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.printed = True

    def done(self) -> None:
        if self.tty and self.printed:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@DATA_OPTION
@click.option("--host", default=DEFAULT_HOST, show_default=True, envvar="DASHBOARD_HOST", show_envvar=True,
              help="Interface to bind; 0.0.0.0 exposes the server to the network.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, envvar="DASHBOARD_PORT",
              show_envvar=True, help="TCP port to serve on.")
@click.option("--debug/--no-debug", default=False, envvar="DASHBOARD_DEBUG", show_envvar=True,
              help="Dash debug mode (hot reload, dev tools); tracebacks on errors.")
@click.option("--max-upload-mb", default=DEFAULT_MAX_UPLOAD_MB, show_default=True, type=int,
              envvar="DASHBOARD_MAX_UPLOAD_MB", show_envvar=True, help="Largest accepted upload.")
@click.option("--no-demo", is_flag=True, help="Do not ingest the bundled demo into an empty data folder.")
@click.option("--users-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              envvar="DASHBOARD_USERS_FILE", show_envvar=True,
              help="Require a login: a file of 'user:<hash>' lines (make one with `hash-password`). "
                   "DASHBOARD_USERS='alice:<hash>,bob:<hash>' adds users too.")
@click.version_option(package_name="dashboard")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path, host: str, port: int, debug: bool, max_upload_mb: int,
        no_demo: bool, users_file: Path | None) -> None:
    """GPU-profiling dashboard: where do my GPU time and memory go, and why?

    Without a command, serves the dashboard for the data folder at http://HOST:PORT/.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if ctx.invoked_subcommand is not None:
        return
    settings = Settings(data_dir=data_dir, host=host, port=port, debug=debug,
                        max_upload_mb=max_upload_mb, seed_demo=not no_demo,
                        users_file=users_file, users=os.environ.get("DASHBOARD_USERS", ""))
    from dashboard.app import create_app  # Dash loads only when serving
    from dashboard.auth import UsersError

    try:
        app = create_app(settings)
    except UsersError as exc:  # never fall back to serving without the login asked for
        _fail(f"error: {exc}", debug)
    click.echo(f"dashboard: serving {settings.data_dir.resolve()} at http://{host}:{port}/", err=True)
    from dashboard.server_security import QuietRequestHandler  # no versions in `Server:`

    app.run(host=host, port=port, debug=debug, request_handler=QuietRequestHandler)


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    click.echo(message, err=True)
    sys.exit(1)


@cli.command()
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
            from dashboard.ingest_budget import Budget, run_in_child

            run_id = run_in_child(data_dir, list(paths), name, Budget(max_seconds or None, max_memory_mb or None),
                                  debug=debug)
        else:
            run_id = store.ingest(list(paths), name=name, progress=progress)
    except KeyboardInterrupt:
        progress.done()
        _fail("error: interrupted; no run was written", debug)
    except Exception as exc:  # every failure is one line naming the inputs (IngestError or not)
        progress.done()
        _fail(f"error: {ingest_failure(exc, ', '.join(str(p) for p in paths))}", debug)
    else:
        progress.done()
        for warning in store.open(run_id).info.warnings:
            click.echo(f"warning: {one_line(warning)}", err=True)
        click.echo(run_id)
        if _LEAVE_AFTER_INGEST:
            _leave_now()


def _ingest_on_cluster(store: Any, paths: list[Path], address: str, workers: int | None, name: str | None,
                       progress: StderrProgress) -> str:
    from dashboard.cluster_ingest import close, connect, ingest_on_cluster  # Dask loads only when asked for

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


@cli.command("runs")
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


@cli.command("hash-password")
@click.argument("user")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
def hash_password(user: str, password_stdin: bool) -> None:
    """Print a 'USER:<hash>' line for --users-file or DASHBOARD_USERS (the password is asked twice)."""
    from dashboard.auth import UsersError, make_user_line

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    try:
        click.echo(make_user_line(user, password))
    except UsersError as exc:
        _fail(f"error: {exc}", False)


@cli.command("export-trace")
@click.argument("run_id")
@DATA_OPTION
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (default: RUN_ID.trace.json here; '-' for stdout).")
@click.option("--no-flows", is_flag=True, help="Leave out the arrows from API calls to the kernels they launched.")
def export_trace(run_id: str, data_dir: Path, out_path: Path | None, no_flows: bool) -> None:
    """Write a run's kernels, copies, ranges and API calls as Chrome-trace JSON.

    Open the file in https://ui.perfetto.dev or chrome://tracing.
    """
    from dashboard.exports.perfetto import TRACE_TABLES, write_trace
    from dashboard.store import RunNotFound, RunStore

    try:
        run = RunStore(data_dir).open(run_id)
    except RunNotFound:
        _fail(f"error: no run named {run_id!r} in {data_dir}", False)
    tables = {table: run.frame(table) for table in TRACE_TABLES if run.has(table)}
    if not tables:
        _fail(f"error: run {run_id!r} has no kernels, copies, ranges or API calls to export", False)
    if out_path is not None and str(out_path) == "-":
        write_trace(tables, sys.stdout.buffer, run_id=run.id, flows=not no_flows)
        return
    target = out_path or Path(f"{run.id}.trace.json")
    with open(target, "wb") as out:
        size = write_trace(tables, out, run_id=run.id, flows=not no_flows)
    click.echo(f"wrote {target} ({size:,} bytes)", err=True)


@cli.command("export")
@click.argument("run_id")
@DATA_OPTION
@click.option("--page", "pages", multiple=True, help="Page(s) to export: kernels, layers, timeline, memory, "
              "planner (default: every page with charts for the run).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: ./<RUN_ID>-png).")
@click.option("--query", default="", help="View state as a URL query, e.g. 'rank=0&window=100-200'.")
def export_pngs(run_id: str, data_dir: Path, pages: tuple[str, ...], out_dir: Path | None, query: str) -> None:
    """Write every chart of the chosen pages of a run as PNG (2x), through kaleido and Chromium."""
    from urllib.parse import parse_qsl

    from dashboard.exports.page_figures import PAGES, page_figures, pages_for
    from dashboard.exports.png import PngExportUnavailable, write_pngs
    from dashboard.exports.routes import view_caption
    from dashboard.store import RunNotFound, RunStore

    try:
        run = RunStore(data_dir).open(run_id)
    except RunNotFound as exc:
        _fail(f"error: {exc} in {data_dir}", False)
    unknown = [page for page in pages if page not in PAGES]
    if unknown:
        _fail(f"error: unknown page(s) {', '.join(unknown)}; choose from {', '.join(PAGES)}", False)
    chosen = list(pages) or pages_for(run)
    target = out_dir or Path(f"{run.id}-png")
    state = dict(parse_qsl(query))
    try:
        for page in chosen:
            for path in write_pngs(page_figures(page, run, state), target, prefix=f"{run.id}-{page}-",
                                   caption=view_caption(run.id, page, state)):
                click.echo(path)
    except PngExportUnavailable as exc:
        _fail(f"error: {exc}", False)


@cli.command("report")
@click.argument("run_id")
@DATA_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON (gpu_time per rank, findings with their links).")
@click.option("--base-url", default="", help="Prefix for the findings' links, e.g. http://host:8050.")
def report(run_id: str, data_dir: Path, as_json: bool, base_url: str) -> None:
    """Print what to fix first in a run: GPU time per rank and the findings of /insights."""
    from dashboard.report import report_json, report_text
    from dashboard.store import RunNotFound, RunStore

    try:
        run = RunStore(data_dir).open(run_id)
    except RunNotFound:
        _fail(f"error: no run named {run_id!r} in {data_dir}", False)
    click.echo(report_json(run, base_url) if as_json else report_text(run, base_url))


@cli.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@DATA_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a section per evidence kind both runs share).")
@click.option("--rank-a", type=int, default=None, help="Rank of A (default: all ranks).")
@click.option("--rank-b", type=int, default=None, help="Rank of B (default: all ranks).")
@click.option("--compile-a", type=int, default=None,
              help="Compile of A compared (ir_kernels.compile; default: the first of a kernel both runs compile).")
@click.option("--compile-b", type=int, default=None, help="Compile of B compared (see --compile-a).")
@click.option("--fail-over", "fail_over", type=float, default=None, metavar="PCT",
              help="Exit 1 when B's kernel time exceeds A's by more than PCT percent; 2 when a run has none (for CI).")
def compare(run_a: str, run_b: str, data_dir: Path, as_json: bool, rank_a: int | None, rank_b: int | None,
            compile_a: int | None, compile_b: int | None, fail_over: float | None) -> None:
    """Where time and memory moved from run A (baseline) to run B: kernels, passes, layers, memory, planner,
    compiler."""
    import json

    from dashboard.compare_report import build_report, slower_by
    from dashboard.compare_text import format_report
    from dashboard.store import RunNotFound, RunStore

    store = RunStore(data_dir)
    try:
        runs = [store.open(run_a), store.open(run_b)]
    except RunNotFound as exc:
        _fail(f"error: {exc} in {data_dir}", False)
    report = build_report(*runs, rank_a, rank_b, (compile_a, compile_b))
    click.echo(json.dumps(report, indent=1, default=str) if as_json else format_report(report))
    if fail_over is None:
        return
    slower = slower_by(report)
    if slower is None:  # 2, not 1: a CI job must tell "cannot judge" from "slower"
        click.echo("error: --fail-over needs kernel time in both runs", err=True)
        sys.exit(2)
    if slower > fail_over:
        click.echo(f"fail: B's kernel time is {slower:.1f}% over A's (limit {fail_over:g}%)", err=True)
        sys.exit(1)


def _register_optional_commands() -> None:
    # Capture needs no GPU to be listed; it explains itself when CUPTI is absent.
    from dashboard.capture.command import capture_command, merge_command

    cli.add_command(capture_command)
    cli.add_command(merge_command)
    from dashboard.compile_capture import compile_capture_command

    cli.add_command(compile_capture_command)


_register_optional_commands()


def main() -> None:
    """Console-script entry point."""
    global _LEAVE_AFTER_INGEST
    _LEAVE_AFTER_INGEST = True
    cli(prog_name="dashboard")


if __name__ == "__main__":
    main()
