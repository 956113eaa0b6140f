"""The one command line: `python -m dashboard.app` (or `dashboard`) and its subcommands.

click gives us `--help` for every flag and environment-variable fallbacks
(CLI > env > default) without hand-written parsing. Without a subcommand the
group serves the app; how to serve is handed in by the entry (`dashboard.app.main`),
so the command line never imports the Dash app it starts (no circle between the two).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from dashboard.ingest.allocator import choose_for_ingest, ingest_inputs, input_bytes

# The ingest options that take a value (their values are not inputs); a test checks them against the command.
INGEST_VALUE_OPTIONS = ("--data", "--name", "--max-seconds", "--max-memory-mb", "--cluster", "--workers")
if "ingest" in sys.argv[1:]:  # before anything loads polars (see dashboard.ingest.allocator); not for serving
    choose_for_ingest(input_bytes(ingest_inputs(sys.argv[sys.argv.index("ingest") + 1:], INGEST_VALUE_OPTIONS)))

# After the allocator: the commands' modules may load polars.
from dashboard.capture.command import capture_command, merge_command  # noqa: E402
from dashboard.cli.common import DATA_OPTION, fail  # noqa: E402
from dashboard.cli.compare import compare  # noqa: E402
from dashboard.cli.compile_capture import compile_capture_command  # noqa: E402
from dashboard.cli.exports import export_pngs, export_trace  # noqa: E402
from dashboard.cli.ingest import LEAVE_AFTER_INGEST, ingest, list_runs  # noqa: E402
from dashboard.cli.report import report  # noqa: E402
from dashboard.settings import DEFAULT_HOST, DEFAULT_MAX_UPLOAD_MB, DEFAULT_PORT, Settings  # noqa: E402

# Serves the app for these settings until stopped (the entry's `serve`); None where the caller cannot serve.
Serve = Callable[[Settings], None]


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
@click.option("--public-url", default="", envvar="DASHBOARD_PUBLIC_URL", show_envvar=True,
              help="The URL users reach this server at (behind a proxy or under a path prefix); page exports "
                   "load pages from it and nowhere else. Default: the address the server is bound on.")
@click.version_option(package_name="dashboard")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path, host: str, port: int, debug: bool, max_upload_mb: int,
        no_demo: bool, users_file: Path | None, public_url: str) -> None:
    """GPU-profiling dashboard: where do my GPU time and memory go, and why?

    Without a command, serves the dashboard for the data folder at http://HOST:PORT/.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if ctx.invoked_subcommand is not None:
        return
    serve: Serve | None = ctx.obj.get("serve")
    if serve is None:
        fail("error: serving needs the app: run `python -m dashboard.app` (or `dashboard`)")
    from dashboard.server.auth import UsersError

    # What the options name, over the DASHBOARD_* environment (ingest budgets, caches: settings.py).
    settings = dataclasses.replace(Settings.from_env(), data_dir=data_dir, host=host, port=port, debug=debug,
                                   max_upload_mb=max_upload_mb, seed_demo=not no_demo, users_file=users_file,
                                   users=os.environ.get("DASHBOARD_USERS", ""), public_url=public_url.strip())
    try:
        serve(settings)
    except UsersError as exc:  # never fall back to serving without the login asked for
        fail(f"error: {exc}", debug)


@cli.command("hash-password")
@click.argument("user")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
def hash_password(user: str, password_stdin: bool) -> None:
    """Print a 'USER:<hash>' line for --users-file or DASHBOARD_USERS (the password is asked twice)."""
    from dashboard.server.auth import UsersError, make_user_line

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    try:
        click.echo(make_user_line(user, password))
    except UsersError as exc:
        fail(f"error: {exc}")


for _command in (ingest, list_runs, export_trace, export_pngs, report, compare,
                 # Capture needs no GPU to be listed; it explains itself when CUPTI is absent.
                 capture_command, merge_command, compile_capture_command):
    cli.add_command(_command)


def main(serve: Serve | None = None) -> None:
    """The console command: runs `cli`, ending the process right after a successful ingest."""
    LEAVE_AFTER_INGEST["enabled"] = True
    cli(prog_name="dashboard", obj={"serve": serve})
