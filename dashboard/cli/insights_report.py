"""What `report RUN` prints: the /insights page as text or JSON, for terminals and CI (no Dash, no plotly on this path).

JSON: {"run", "gpu_time": [per rank: span_ns, idle_ns, compute_ns, communication_ns, memory_ns, ... shares],
"gpu_time_hta": [per rank in HTA's scope: span_ns, idle_ns, compute_ns, non_compute_ns and their shares, the
numbers HTA's get_temporal_breakdown prints], "steps": [the same as gpu_time per rank and profiler step],
"step_time": {"step_ns" (the one step time: rank_summaries.median_step_ns), "source", "definition"},
"idle_causes": [rank, cause, gaps, idle_ns: one cause per idle ns, adding up to idle_ns],
"findings": [title, severity, at_stake_ns, at_stake_bytes or at_stake_ops (compiler: IR operations), share,
share_of, evidence, url, advice, key],
"skipped": [analyses not run, with why]}. Links are relative to the dashboard (prefix them with `base_url`).
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from dashboard.analysis.breakdown import BREAKDOWN_DEFINITION, HTA_SCOPE_DEFINITION
from dashboard.analysis.compare_passes import STEP_DEFINITION
from dashboard.analysis.finding import Finding
from dashboard.analysis.idle_causes import CAUSE_DEFINITION
from dashboard.analysis.insights import Insights, run_insights
from dashboard.analysis.rank_steps import step_time
from dashboard.analysis.units import format_ns
from dashboard.store import Run

GPU_TIME_COLUMNS = ("rank", "span_ns", "idle_ns", "compute_ns", "communication_ns", "memory_ns", "busy_ns",
                    "communication_total_ns", "overlap_ns", "idle_share", "compute_share", "non_compute_share")
HTA_COLUMNS = ("rank", "span_ns", "idle_ns", "compute_ns", "non_compute_ns", "idle_share", "compute_share",
               "non_compute_share")


def _records(frame: pl.DataFrame, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    return frame.select([c for c in columns if c in frame.columns]).to_dicts()


def report_data(run: Run, base_url: str = "") -> dict[str, Any]:
    """The report of `run` as plain JSON-ready data."""
    insights = run_insights(run)
    findings = []
    for finding in insights.findings:
        data = finding.to_json()
        data["url"] = base_url.rstrip("/") + finding.url
        findings.append(data)
    step_ns, source = step_time(run) if run.has_evidence("kernels") else (None, "no kernels")
    return {
        "run": run.id,
        "definition": BREAKDOWN_DEFINITION,
        "gpu_time": _records(insights.by_rank, GPU_TIME_COLUMNS),
        "gpu_time_hta": _records(insights.time.hta, HTA_COLUMNS),
        "hta_definition": HTA_SCOPE_DEFINITION,
        "steps": _records(insights.by_step, ("rank", "step", *GPU_TIME_COLUMNS[1:])),
        "step_time": {"step_ns": step_ns, "source": source, "definition": STEP_DEFINITION},
        "idle_causes": insights.idle_causes.to_dicts(),
        "idle_cause_definition": CAUSE_DEFINITION,
        "findings": findings,
        "skipped": insights.skipped,
    }


def report_json(run: Run, base_url: str = "") -> str:
    return json.dumps(report_data(run, base_url), indent=2, default=str)


def _at_stake(finding: Finding) -> str:
    amount = finding.at_stake_text
    return f"{amount} · {finding.share:.1%} of {finding.share_of}"


def _gpu_time_lines(insights: Insights) -> list[str]:
    if insights.by_rank.height == 0:
        return []
    lines = ["GPU time per rank (shares of the span)",
             f"  {'rank':>4}  {'span':>10}  {'compute':>8}  {'communication':>13}  {'memory':>7}  {'idle':>6}"]
    for row in insights.by_rank.iter_rows(named=True):
        span = row["span_ns"] or 1
        lines.append(f"  {row['rank']:>4}  {format_ns(row['span_ns']):>10}  {row['compute_ns'] / span:>8.1%}  "
                     f"{row['communication_ns'] / span:>13.1%}  {row['memory_ns'] / span:>7.1%}  "
                     f"{row['idle_ns'] / span:>6.1%}")
    lines += [f"  ({BREAKDOWN_DEFINITION})", "", "Idle time by cause (one cause per idle ns)"]
    causes = insights.idle_causes.filter(pl.col("idle_ns") > 0)
    for row in causes.join(insights.by_rank.select("rank", pl.col("idle_ns").alias("rank_idle")), on="rank"
                           ).iter_rows(named=True):
        share = row["idle_ns"] / row["rank_idle"] if row["rank_idle"] else 0.0
        lines.append(f"  rank {row['rank']:>4}  {row['cause']:<20} {format_ns(row['idle_ns']):>10}  {share:>6.1%} "
                     "of its idle time")
    lines += [f"  ({CAUSE_DEFINITION})", "", "In HTA's scope (HTA's temporal breakdown)",
              f"  {'rank':>4}  {'span':>10}  {'idle':>6}  {'compute':>8}  {'non-compute':>11}"]
    for row in insights.time.hta.iter_rows(named=True):
        lines.append(f"  {row['rank']:>4}  {format_ns(row['span_ns']):>10}  {row['idle_share']:>6.1%}  "
                     f"{row['compute_share']:>8.1%}  {row['non_compute_share']:>11.1%}")
    return [*lines, f"  ({HTA_SCOPE_DEFINITION})", ""]


def report_text(run: Run, base_url: str = "") -> str:
    """A readable summary: the breakdown per rank, then the findings, most at stake first."""
    insights = run_insights(run)
    lines = [f"Run {run.id}", "", *_gpu_time_lines(insights)]
    if run.has_evidence("kernels"):
        step_ns, source = step_time(run)
        lines += [f"Step time {format_ns(step_ns)} (from {source}; {STEP_DEFINITION})", ""]
    lines.append(f"Findings ({len(insights.findings)}), most at stake first" if insights.findings
                 else "No finding: nothing crosses a threshold.")
    for number, finding in enumerate(insights.findings, start=1):
        evidence = "; ".join(f"{label} {value}" for label, value in finding.evidence.items())
        lines += [f"{number:>3}. [{finding.severity}] {finding.title}",
                  f"     at stake: {_at_stake(finding)}",
                  f"     evidence: {evidence}",
                  f"     try: {finding.advice}",
                  f"     view: {base_url.rstrip('/')}{finding.url}"]
    if insights.skipped:
        lines += ["", "Not analysed: " + "; ".join(insights.skipped) + "."]
    return "\n".join(lines)

