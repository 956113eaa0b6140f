"""`/insights`: what to fix first. The GPU time breakdown per rank and step, then findings ranked by what
is at stake, each opening to its evidence and to the view that shows it.

URL state: run (any run: kernel traces give GPU-time findings, memory logs and planner dumps give theirs) and
`scope=hta` (the switch "HTA's scope": the breakdown as Holistic Trace Analysis computes it).
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, dcc, html, no_update

from dashboard.analysis import cuda_findings, device_findings, ir_growth, planner_sharing, time_findings
from dashboard.analysis.breakdown import BREAKDOWN_DEFINITION, HTA_SCOPE_DEFINITION
from dashboard.analysis.finding import HIGH_SHARE, MEDIUM_SHARE, Finding
from dashboard.analysis.idle_causes import CAUSE_DEFINITION
from dashboard.analysis.insights import Insights
from dashboard.analysis.units import format_ns
from dashboard.layouts.page import chart, page_header, resolve_run, unopened_notice
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.layouts.static_html import static_html
from dashboard.store import Run, RunNotFound
from dashboard.views import insights as view

dash.register_page(__name__, path="/insights", name="Insights", order=0.5, title="Insights · dashboard")

PATH = "/insights"
EVIDENCE = "kernels"  # the default run; a run named in the URL may hold any evidence
# With no kernel run, the newest run with other evidence that has findings (memory, planner, compiler) opens.
FALLBACK_EVIDENCE = ("memory", "cuda_memory", "planner", "compiler")
SEVERITY_COLOURS = {"high": "danger", "medium": "warning", "low": "secondary", "info": "info"}
HTA_NOTE = ("Compared with Holistic Trace Analysis (get_temporal_breakdown): the same span, idle, compute and "
            "non-compute definitions, on every event of the run. HTA leaves out the last profiler step and "
            "GPU work whose launch is not in the trace, and counts only nccl…Kernel names as communication; "
            "switch on \u201cHTA's scope\u201d to see its numbers (they agree with HTA within 0.5 percentage "
            "points, checked in CI on real traces). HTA also counts CUDA synchronisation events recorded on a GPU "
            "stream (cuda_sync, newer PyTorch) as busy non-compute time; they are not kernels or copies and are "
            "not counted here.")


def _open_run(run_id: str | None) -> tuple[Run | None, html.Div | None]:
    if not run_id:
        run, notice = resolve_run(None, EVIDENCE, PATH)
        if run is None:
            fallback = [info.id for info in current_store().list_runs()
                        if any(evidence in info.evidence for evidence in FALLBACK_EVIDENCE)]
            if fallback:
                return current_store().open(fallback[0]), None
        return run, notice
    try:
        return current_store().open(run_id), None
    except RunNotFound as exc:
        return None, unopened_notice(run_id, exc, EVIDENCE, PATH)


def at_stake_text(finding: Finding) -> str:
    amount = finding.at_stake_text
    return f"{amount} · {finding.share:.1%} of {finding.share_of}"


def finding_item(finding: Finding, index: int) -> html.Details:
    """One finding: severity, title and what is at stake; it opens to its evidence, advice and view link."""
    summary = html.Summary([
        dbc.Badge(finding.severity, color=SEVERITY_COLOURS[finding.severity], className="me-2"),
        html.Span(finding.title, className="fw-semibold me-2"),
        html.Small(at_stake_text(finding), className="text-muted"),
    ])
    rows = [html.Tr([html.Th(label, className="fw-normal text-muted pe-3"), html.Td(str(value))])
            for label, value in finding.evidence.items()]
    body = html.Div([
        html.Table(html.Tbody(rows), className="table table-sm w-auto mb-2 finding-evidence"),
        html.P(["What to try: ", finding.advice], className="small mb-2"),
        dcc.Link("Open the view that shows it →", href=finding.url, className="btn btn-sm btn-outline-primary "
                 "finding-link"),
    ], className="ms-4 mt-2 mb-3")
    return html.Details([summary, body], className="finding mb-2", id=f"finding-{index}",
                        **{"data-key": finding.key})


def small_table(headers: list[str], rows: list[list[Any]], class_name: str) -> html.Table:
    return html.Table([html.Thead(html.Tr([html.Th(h) for h in headers])),
                       html.Tbody([html.Tr([html.Td(cell) for cell in row]) for row in rows])],
                      className=f"table table-sm w-auto small {class_name}")


def _share(part: float | None, whole: float | None) -> str:
    return f"{part / whole:.1%}" if part is not None and whole else "–"


def _cause_table(insights: Insights) -> html.Table | None:
    causes = insights.idle_causes.join(insights.by_rank.select("rank", "span_ns", "idle_ns").rename(
        {"idle_ns": "rank_idle_ns"}), on="rank")
    if causes.height == 0:
        return None
    return small_table(["rank", "cause", "gaps", "idle", "of the idle time", "of the span"], [
        [rank, cause, f"{gaps:,}", format_ns(idle), _share(idle, rank_idle), _share(idle, span)]
        for rank, cause, gaps, idle, rank_idle, span in causes.select(
            "rank", "cause", "gaps", "idle_ns", "rank_idle_ns", "span_ns").rows()], "idle-causes")


def _hta_table(insights: Insights) -> html.Table:
    """HTA's temporal breakdown per rank, in HTA's scope: the numbers HTA itself prints."""
    def part(row: dict[str, Any], column: str) -> str:
        return f"{format_ns(row[column])} ({_share(row[column], row['span_ns'])})"

    return small_table(["rank", "span", "idle", "compute", "non-compute"], [
        [row["rank"], format_ns(row["span_ns"]), part(row, "idle_ns"), part(row, "compute_ns"),
         part(row, "non_compute_ns")] for row in insights.time.hta.iter_rows(named=True)], "hta-breakdown")


def _overlap_table(insights: Insights) -> html.Table | None:
    """Communication / computation overlap per rank and step (HTA's: overlapped ÷ communication time)."""
    steps = insights.by_step.filter(pl.col("communication_total_ns") > 0).head(view.MAX_STEP_BARS)
    if steps.height == 0:
        return None
    return small_table(["rank", "step", "communication", "under compute", "overlap", "exposed"], [
        [rank, "–" if step is None else step, format_ns(total), format_ns(overlap), _share(overlap, total),
         format_ns(exposed)]
        for rank, step, total, overlap, exposed in steps.select("rank", "step", "communication_total_ns",
                                                                "overlap_ns", "communication_ns").rows()],
        "comm-overlap")


def _launch_table(insights: Insights) -> html.Table | None:
    if insights.launch.height == 0:
        return None
    return small_table(["rank", "kernels", "short (< 10 µs)", "of the count", "of kernel time", "median launch delay",
                        "p95 launch delay"], [
        [row["rank"], f"{row['kernels']:,}", f"{row['short_kernels']:,}", _share(row["short_count_share"], 1),
         _share(row["short_time_share"], 1), format_ns(row["median_delay_ns"]), format_ns(row["p95_delay_ns"])]
        for row in insights.launch.iter_rows(named=True)], "launch-stats")


def _thresholds() -> html.Details:
    items = {**time_findings.THRESHOLDS, **device_findings.THRESHOLDS, **cuda_findings.THRESHOLDS,
             "planner sharing": planner_sharing.THRESHOLD, "IR growth": ir_growth.THRESHOLD,
             "severity": f"high at {HIGH_SHARE:.0%} of its total or more, medium at {MEDIUM_SHARE:.0%}, else low"}
    return html.Details([
        html.Summary("Thresholds: when a finding is raised", className="small"),
        html.Ul([html.Li([html.Strong(f"{name}: "), text]) for name, text in items.items()], className="small"),
        html.P(f"Idle causes: {CAUSE_DEFINITION}.", className="small"),
    ], className="mb-3 insights-thresholds")


def breakdown_charts(run: Run, state: view.State) -> list[Any]:
    """The breakdown in the state's scope: ours per rank and step, or HTA's per rank with its table."""
    figures = view.figures(run, state)
    if state.hta_scope:
        return [html.P(HTA_SCOPE_DEFINITION, className="small text-muted mb-1 breakdown-definition"),
                chart("insights-breakdown", figures["insights-breakdown"], "gpu-time-per-rank-hta", height=380),
                static_html(_hta_table(view.insights(run)))]
    parts: list[Any] = [
        html.P(BREAKDOWN_DEFINITION, className="small text-muted mb-1 breakdown-definition"),
        html.P(HTA_NOTE, className="small text-muted"),
        chart("insights-breakdown", figures["insights-breakdown"], "gpu-time-per-rank", height=380),
    ]
    if "insights-breakdown-steps" in figures:
        parts.append(chart("insights-breakdown-steps", figures["insights-breakdown-steps"], "gpu-time-per-step",
                           height=400))
    return parts


def breakdown_section(run: Run, state: view.State) -> html.Div:
    switch = dbc.Switch(id="insights-hta-scope", label="HTA's scope", value=state.hta_scope,
                        className="ms-3 small")
    return html.Div([
        html.Div([html.H5("GPU time breakdown", className="mb-0"), switch], className="d-flex align-items-center"),
        html.Div(breakdown_charts(run, state), id="insights-breakdown-section"),
    ], className="mb-4")


@callback(Output("insights-breakdown-section", "children"), Output({"type": "url-state", "page": "insights"}, "data"),
          Input("insights-hta-scope", "value"), State("insights-run", "data"), prevent_initial_call=True)
def switch_scope(hta: bool | None, run_id: str | None) -> tuple[Any, Any]:
    if not run_id:
        return no_update, no_update
    run = current_store().open(run_id)
    state = view.State(scope="hta" if hta else "all")
    return breakdown_charts(run, state), state.url_state()


def details_section(insights: Insights) -> html.Div:
    """The numbers behind the findings: idle by cause, overlap per rank and step, launch statistics."""
    parts: list[Any] = [html.H5("Details", className="mt-4")]
    tables = (("Idle time by cause", _cause_table(insights), "one cause per idle nanosecond; the causes of a rank "
                                                             "add up to its idle time (definitions: Thresholds)"),
              ("Communication / computation overlap", _overlap_table(insights),
               "overlap = collective time during which compute kernels also run, ÷ collective time; "
               "exposed = collective time with no compute under it"),
              ("Kernel launches", _launch_table(insights),
               "launch delay = kernel start − end of the API call that launched it (queueing ahead of the GPU "
               "is normal; near zero with idle gaps means the CPU cannot keep up)"))
    for title, table, note in tables:
        if table is not None:
            parts += [html.H6(title, className="mt-2"), html.P(note, className="small text-muted mb-1"), table]
    return html.Div(static_html(parts), className="mb-4")


def findings_section(insights: Insights) -> html.Div:
    heading = html.H5(f"Findings ({len(insights.findings)}), most at stake first")
    items: list[Any] = [finding_item(finding, index) for index, finding in enumerate(insights.findings)]
    if not items:
        items = [html.P("Nothing crosses a threshold: no finding for this run.", className="text-muted")]
    skipped = ([html.P(["Not analysed: ", "; ".join(insights.skipped), "."], className="small text-muted")]
               if insights.skipped else [])
    # Read-only markup (a few hundred elements on a real trace): one component, see layouts/static_html.py.
    return html.Div([heading, static_html([_thresholds(), html.Div(items, id="insights-findings"), *skipped])])


def layout(run: str | None = None, **query: Any) -> html.Div:
    chosen, notice = _open_run(run if isinstance(run, str) else None)
    header = page_header("Insights", chosen, "What to fix first: where GPU time goes, and findings with their "
                                            "evidence")
    if chosen is None:
        return html.Div([header, notice], id="insights-page")
    state = view.State.from_query(query, chosen)
    insights = view.insights(chosen)
    sections: list[Any] = [header, dcc.Store(id="insights-run", data=chosen.id),
                           url_state_store("insights", state.url_state())]
    gpu_time = view.has_gpu_time(chosen)
    if gpu_time:
        sections.append(breakdown_section(chosen, state))
    sections.append(findings_section(insights))
    if gpu_time:
        sections.append(details_section(insights))
    return html.Div(sections, id="insights-page")
