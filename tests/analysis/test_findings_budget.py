"""Counted once: on every demo run (and every shared Kineto sample), a rank's findings claim at most its span,
its idle findings at most its idle time, and every GPU-time finding says whose time it is."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import ranks, time_findings
from dashboard.analysis.finding import BUSY, IDLE
from dashboard.analysis.insights import Insights, run_insights
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> RunStore:
    return RunStore(demo_copy(demo_template, tmp_path_factory.mktemp("budget") / "data"))


def check_budget(insights: Insights) -> int:
    """Asserts the budget of every rank; returns how many GPU-time findings it checked."""
    timed = [f for f in insights.findings if f.at_stake_ns is not None]
    for finding in timed:
        assert finding.rank is not None and finding.budget in (IDLE, BUSY), finding.key
        assert finding.at_stake_ns >= 0, finding.key
    for row in insights.by_rank.iter_rows(named=True):
        mine = [f for f in timed if f.rank == row["rank"]]
        idle = sum(f.at_stake_ns or 0 for f in mine if f.budget == IDLE)
        busy = sum(f.at_stake_ns or 0 for f in mine if f.budget == BUSY)
        assert idle <= row["idle_ns"], (insights.run_id, row["rank"], [(f.key, f.at_stake_ns) for f in mine])
        assert busy <= row["busy_ns"], (insights.run_id, row["rank"], [(f.key, f.at_stake_ns) for f in mine])
        assert idle + busy <= row["span_ns"]
    ranks = set(insights.by_rank.get_column("rank").to_list())
    assert {f.rank for f in timed} <= ranks
    # The idle causes are one partition of the idle time.
    if insights.idle_causes.height:
        per_rank = insights.idle_causes.group_by("rank").agg(pl.col("idle_ns").sum())
        assert per_rank.join(insights.by_rank.select("rank", pl.col("idle_ns").alias("idle")), on="rank").filter(
            pl.col("idle_ns") != pl.col("idle")).height == 0
    return len(timed)


def test_findings_claim_at_most_each_ranks_span_on_every_demo_run(demo_store: RunStore) -> None:
    for info in demo_store.list_runs():
        check_budget(run_insights(demo_store.open(info.id)))


def test_every_rule_firing_still_claims_at_most_each_ranks_span(demo_store: RunStore,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With every threshold at zero each rule raises its finding (the demo's GPUs are too busy to cross the
    real ones), and the findings together still stay within each rank's span and idle time."""
    for name in ("CAUSE_SHARE_MIN", "EXPOSED_COMMUNICATION_SHARE_MIN"):
        monkeypatch.setattr(time_findings, name, -1.0)
    for name in ("PAGEABLE_MIN_BYTES", "SYNC_COPY_MIN_COUNT", "SMALL_COPY_MIN_COUNT"):
        monkeypatch.setattr(time_findings, name, 0)
    monkeypatch.setattr(ranks, "STRAGGLER_MARGIN", -1.0)
    monkeypatch.setattr(ranks, "UNEVEN_COLLECTIVE_SHARE", -1.0)
    checked = {info.id: check_budget(run_insights(demo_store.open(info.id))) for info in demo_store.list_runs()}
    training = next(count for run_id, count in checked.items() if run_id.startswith("demo-training"))
    assert training >= 2 * 3 + 1  # per rank: its idle causes; exposed communication, copies, a straggler


@pytest.mark.shared
def test_findings_claim_at_most_each_ranks_span_on_the_shared_kineto_samples(shared_dir: Path,
                                                                              tmp_path: Path) -> None:
    folder = shared_dir / "samples" / "kineto"
    store = RunStore(tmp_path / "data")
    for paths in ([folder / "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"],
                  sorted(folder.glob("hta_trace_filter_sampled_rank-*.json.gz"))):
        assert check_budget(run_insights(store.open(ingest_paths(store, paths))))
