"""`export RUN` (every chart of a run's pages as PNG) and `export-trace RUN` (Chrome-trace JSON for Perfetto)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dashboard.cli.common import DATA_OPTION, fail


@click.command("export-trace")
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
        fail(f"error: no run named {run_id!r} in {data_dir}")
    tables = {table: run.frame(table) for table in TRACE_TABLES if run.has(table)}
    if not tables:
        fail(f"error: run {run_id!r} has no kernels, copies, ranges or API calls to export")
    if out_path is not None and str(out_path) == "-":
        write_trace(tables, sys.stdout.buffer, run_id=run.id, flows=not no_flows)
        return
    target = out_path or Path(f"{run.id}.trace.json")
    with open(target, "wb") as out:
        size = write_trace(tables, out, run_id=run.id, flows=not no_flows)
    click.echo(f"wrote {target} ({size:,} bytes)", err=True)


@click.command("export")
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
        fail(f"error: {exc} in {data_dir}")
    unknown = [page for page in pages if page not in PAGES]
    if unknown:
        fail(f"error: unknown page(s) {', '.join(unknown)}; choose from {', '.join(PAGES)}")
    chosen = list(pages) or pages_for(run)
    target = out_dir or Path(f"{run.id}-png")
    state = dict(parse_qsl(query))
    try:
        for page in chosen:
            for path in write_pngs(page_figures(page, run, state), target, prefix=f"{run.id}-{page}-",
                                   caption=view_caption(run.id, page, state)):
                click.echo(path)
    except PngExportUnavailable as exc:
        fail(f"error: {exc}")
