"""`compare A B`: where time and memory moved between two runs, as text, JSON or a CI gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from dashboard.cli.common import DATA_OPTION, fail


@click.command("compare")
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
    from dashboard.cli.compare_report import build_report, slower_by
    from dashboard.cli.compare_text import format_report
    from dashboard.store import RunNotFound, RunStore

    store = RunStore(data_dir)
    try:
        runs = [store.open(run_a), store.open(run_b)]
    except RunNotFound as exc:
        fail(f"error: {exc} in {data_dir}")
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
