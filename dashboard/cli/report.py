"""`report RUN`: what to fix first in a run, as text or JSON (the builders are `insights_report.py`)."""

from __future__ import annotations

from pathlib import Path

import click

from dashboard.cli.common import DATA_OPTION, fail


@click.command("report")
@click.argument("run_id")
@DATA_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON (gpu_time per rank, findings with their links).")
@click.option("--base-url", default="", help="Prefix for the findings' links, e.g. http://host:8050.")
def report(run_id: str, data_dir: Path, as_json: bool, base_url: str) -> None:
    """Print what to fix first in a run: GPU time per rank and the findings of /insights."""
    from dashboard.cli.insights_report import report_json, report_text  # polars and the analyses: only here
    from dashboard.store import RunNotFound, RunStore

    try:
        run = RunStore(data_dir).open(run_id)
    except RunNotFound:
        fail(f"error: no run named {run_id!r} in {data_dir}")
    click.echo(report_json(run, base_url) if as_json else report_text(run, base_url))
