"""`report RUN [--json]` on the demo runs: the documented schema, the page's numbers, no Dash on its path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dashboard.analysis.insights import run_insights
from dashboard.cli.main import cli
from dashboard.store import RunStore
from tests.support.demo_copy import demo_copy
from tests.support.triton_demo import requires_triton_demo

GPU_TIME_KEYS = {"rank", "span_ns", "idle_ns", "compute_ns", "communication_ns", "memory_ns"}
FINDING_KEYS = {"title", "severity", "evidence", "url"}


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> RunStore:
    return RunStore(demo_copy(demo_template, tmp_path_factory.mktemp("report") / "data"))


def check_schema(report: dict) -> None:
    assert isinstance(report["run"], str)
    for row in report["gpu_time"]:
        assert set(row) >= GPU_TIME_KEYS and all(isinstance(row[key], int) for key in GPU_TIME_KEYS)
        assert row["compute_ns"] + row["communication_ns"] + row["memory_ns"] + row["idle_ns"] == row["span_ns"]
    for row in report["gpu_time_hta"]:  # HTA's three parts in HTA's scope add up to its span too
        assert row["idle_ns"] + row["compute_ns"] + row["non_compute_ns"] == row["span_ns"]
    assert {row["rank"] for row in report["gpu_time_hta"]} <= {row["rank"] for row in report["gpu_time"]}
    assert set(report["step_time"]) == {"step_ns", "source", "definition"}
    by_rank = {}
    for row in report["idle_causes"]:  # one cause per idle ns: the causes add up to the idle time
        by_rank[row["rank"]] = by_rank.get(row["rank"], 0) + row["idle_ns"]
    assert by_rank == {row["rank"]: row["idle_ns"] for row in report["gpu_time"] if row["rank"] in by_rank}
    for finding in report["findings"]:
        assert set(finding) >= FINDING_KEYS
        assert finding["severity"] in {"high", "medium", "low", "info"}
        assert isinstance(finding["title"], str) and isinstance(finding["evidence"], dict)
        stakes = [key for key in ("at_stake_ns", "at_stake_bytes", "at_stake_ops") if key in finding]
        assert len(stakes) >= 1 and all(isinstance(finding[key], int) for key in stakes)
        assert finding["url"].startswith("/") and f"run={report['run']}" in finding["url"]


def test_report_json_of_every_demo_run(demo_store: RunStore) -> None:
    for info in demo_store.list_runs():
        result = CliRunner().invoke(cli, ["report", info.id, "--json", "--data", str(demo_store.data_dir)])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        check_schema(report)
        insights = run_insights(demo_store.open(info.id))
        assert report["run"] == info.id
        assert [row["idle_ns"] for row in report["gpu_time"]] == insights.by_rank.get_column("idle_ns").to_list()
        assert [f["title"] for f in report["findings"]] == [f.title for f in insights.findings]
        has_kernels = "kernels" in info.evidence
        assert bool(report["gpu_time"]) == has_kernels


@requires_triton_demo
def test_report_json_of_a_compiler_run_names_the_pass_that_grew_the_ir(demo_store: RunStore) -> None:
    run_id = next(info.id for info in demo_store.list_runs() if info.evidence == ["compiler"])
    result = CliRunner().invoke(cli, ["report", run_id, "--json", "--data", str(demo_store.data_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    check_schema(report)
    assert report["gpu_time"] == []
    growth = [f for f in report["findings"] if f["key"].startswith("compiler:growth:")]
    assert growth, report["findings"]
    for finding in growth:
        evidence = finding["evidence"]
        assert finding["at_stake_ops"] == evidence["ops after"] - evidence["ops before"] == evidence["ops added"]
        assert finding["url"].startswith(f"/compiler?run={run_id}&compile=") and "&step=" in finding["url"]


def test_report_text_and_base_url(demo_store: RunStore) -> None:
    run_id = next(info.id for info in demo_store.list_runs() if "memory" in info.evidence)
    result = CliRunner().invoke(cli, ["report", run_id, "--data", str(demo_store.data_dir),
                                      "--base-url", "http://team:8050/"])
    assert result.exit_code == 0, result.output
    first = run_insights(demo_store.open(run_id)).findings[0]
    assert f"  1. [{first.severity}] {first.title}" in result.stdout
    assert f"view: http://team:8050{first.url}" in result.stdout


def test_report_of_an_unknown_run_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "nope", "--data", str(tmp_path)])
    assert result.exit_code == 1 and result.stderr.strip().splitlines() == [f"error: no run named 'nope' in {tmp_path}"]


def test_report_path_loads_no_dash_or_plotly() -> None:
    code = ("import sys, dashboard.cli.insights_report; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dash', 'plotly', 'flask')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"
