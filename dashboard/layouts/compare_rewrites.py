"""/compare's tinygrad section: two runs' rewrite contexts aligned by name, each pair's first differing step
(linked to /compiler on both sides), and the kernel time of each kernel context in A and B."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.analysis.compare import Side
from dashboard.analysis.compare_rewrites import ONLY_A, ONLY_B
from dashboard.analysis.units import format_ns
from dashboard.layouts.page import page_href
from dashboard.store import Run
from dashboard.views import compare_sections as sections

MAX_ROWS = 300
_ROW_CLASS = {ONLY_A: "table-danger", ONLY_B: "table-success"}


def _ns(value: int | None) -> str:
    return "–" if value is None else format_ns(value)


def _signed(value: int | None) -> str:
    return "–" if value is None else ("+" if value >= 0 else "−") + format_ns(abs(value))


def _step_link(run_id: str, context: int | None, step: int | None, label: str) -> Any:
    if context is None or step is None:
        return "–"
    return dcc.Link(label, href=page_href("/compiler", run_id, ctx=context, step=step))


def rewrites_section(run_a: Run, run_b: Run, a: Side, b: Side) -> html.Div:
    comparison = sections.rewrites_comparison(run_a, run_b, a.rank, b.rank)
    counts, first = comparison.counts, comparison.first
    summary = (f"Contexts: A {counts['contexts_a']:,}, B {counts['contexts_b']:,}, aligned by name: "
               f"{counts['both']:,} in both ({counts['differing']:,} differ), {counts['only_a']:,} only in A, "
               f"{counts['only_b']:,} only in B.")
    if comparison.not_compared:
        summary += f" {comparison.not_compared:,} pairs were not compared within the time allowed."
    if first is None:
        verdict: list[Any] = ["Every context both runs hold rewrote the same graphs with the same match counts."]
    else:
        verdict = [f"First difference: {first['name']}, step “{first['step_name']}” ({first['reason']}): ",
                   _step_link(run_a.id, first["context_a"], first["step_a"], "A"), " · ",
                   _step_link(run_b.id, first["context_b"], first["step_b"], "B")]
    rows = []
    for row in comparison.aligned.head(MAX_ROWS).iter_rows(named=True):
        if row["presence"] != "both":
            status: Any = row["presence"]
        elif row["differs"] is None:
            status = "not compared"
        elif row["differs"]:
            status = [f"step “{row['first_step']}”: {row['reason']} ",
                      _step_link(run_a.id, row["context_a"], row["first_step_a"], "A"), " ",
                      _step_link(run_b.id, row["context_b"], row["first_step_b"], "B")]
        else:
            status = "same"
        css = _ROW_CLASS.get(row["presence"], "table-warning" if row["differs"] else "")
        rows.append(html.Tr([
            html.Td(row["position"]), html.Td(row["name"], className="font-monospace"),
            html.Td(f"{row['steps_a'] if row['steps_a'] is not None else '–'} / "
                    f"{row['steps_b'] if row['steps_b'] is not None else '–'}"),
            html.Td(f"{row['matches_a'] if row['matches_a'] is not None else '–'} / "
                    f"{row['matches_b'] if row['matches_b'] is not None else '–'}"),
            html.Td(_ns(row["kernel_ns_a"])), html.Td(_ns(row["kernel_ns_b"])),
            html.Td(_signed(row["kernel_delta_ns"])),
            html.Td(status)], className=css))
    header = ["#", "context", "steps A / B", "matches A / B", "kernel time A", "kernel time B", "B − A",
              "first differing step"]
    more = comparison.aligned.height - MAX_ROWS
    return html.Div([
        html.H5("tinygrad rewrites: contexts aligned by name", className="mb-2"),
        html.Div(summary, id="compare-rewrites-counts", className="small mb-1"),
        html.Div(verdict, id="compare-rewrites-first", className="small mb-2"),
        html.Div("A step differs when its input graph differs (compared whole: ops, dtypes, arguments and sources), "
                 "its number of matches differs, or one side lacks it. Kernel time: every launch of the context's "
                 "kernel name in the run's profile.", className="small text-muted mb-2"),
        dbc.Table([html.Thead(html.Tr([html.Th(h) for h in header])), html.Tbody(rows)], size="sm",
                  className="small mb-1", id="compare-rewrites-contexts"),
        html.Small(f"… {more:,} more contexts (the CLI's compare --json lists them all)", className="text-muted")
        if more > 0 else None,
    ], id="compare-rewrites-section", className="chart-card")
