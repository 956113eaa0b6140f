"""/compare's compiler section: two compiles' pass lists side by side, the first differing pass, its diff."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
import polars as pl
from dash import dcc, html

from dashboard.analysis.compare_compiler import BOTH, DIFFERS, ONLY_A, CompilerComparison
from dashboard.analysis.compiler import MAX_DIFF_LINES
from dashboard.layouts.ir_code import MAX_RENDER_LINES, unified_html
from dashboard.layouts.select import native_select
from dashboard.layouts.static_html import static_html
from dashboard.store import Run
from dashboard.views.compare_sections import compiler_comparison

MAX_PASS_ROWS = 400  # longer pass lists show their first rows (the differing ones are listed above the table)
_ROW_CLASS = {ONLY_A: "table-danger", "only B": "table-success"}


def _options(run: Run) -> list[dict[str, Any]]:
    kernels = run.frame("ir_kernels").sort("compile")
    return [{"label": f"#{row['compile']} {row['kernel'] or '(unnamed)'} · {row['num_warps']} warps · "
                      f"{row['num_stages']} stages · {row['steps']} steps", "value": row["compile"]}
            for row in kernels.iter_rows(named=True)]


def _counts(row: dict[str, Any], suffix: str) -> str:
    if row[f"step_{suffix}"] is None:
        return "–"
    return f"step {row[f'step_{suffix}']} · {row[f'lines_{suffix}'] or 0} lines · {row[f'ops_{suffix}'] or 0} ops"


def _pass_table(comparison: CompilerComparison) -> dbc.Table:
    rows = []
    for row in comparison.aligned.head(MAX_PASS_ROWS).iter_rows(named=True):
        chosen = row["position"] == comparison.position
        status = row["presence"] if row["presence"] != BOTH else f"IR {row['ir']}"
        css = _ROW_CLASS.get(row["presence"], "table-warning" if row["ir"] == DIFFERS else "")
        rows.append(html.Tr([html.Td(row["position"]), html.Td(f"{row['stage']} · {row['kind']}"),
                             html.Td(html.Strong(row["pass_name"]) if chosen else row["pass_name"]),
                             html.Td(_counts(row, "a")), html.Td(_counts(row, "b")), html.Td(status)],
                            className=css, **{"data-position": str(row["position"])}))
    header = ["#", "stage · dump", "pass", "A (step · lines · ops)", "B (step · lines · ops)", "IR"]
    return dbc.Table([html.Thead(html.Tr([html.Th(h) for h in header])), html.Tbody(rows)], size="sm",
                     className="small mb-2", id="compare-compiler-passes")


def _metadata_table(comparison: CompilerComparison) -> dbc.Table:
    labels = {"num_warps": "warps", "num_ctas": "CTAs", "num_stages": "pipeline stages",
              "shared": "shared memory (bytes)", "tmem_size": "tensor memory (columns)"}
    rows = [html.Tr([html.Td(label), html.Td(_dash(meta["a"])), html.Td(_dash(meta["b"])),
                     html.Td(_dash(meta["delta"]) if meta["delta"] is None else f"{meta['delta']:+,}")])
            for field, label in labels.items() for meta in [comparison.metadata[field]]]
    return dbc.Table([html.Thead(html.Tr([html.Th(h) for h in ("metadata", "A", "B", "B − A")])), html.Tbody(rows)],
                     size="sm", striped=True, className="small mb-2", id="compare-compiler-metadata")


def _dash(value: Any) -> str:
    return "–" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _first_text(comparison: CompilerComparison) -> str:
    first = comparison.first
    if first is None:
        return "The IR is the same at every pass both compiles ran."
    return (f"First pass where the IR differs: {first['pass_name']} ({first['stage']}, IR {first['kind']} the pass) "
            f"at step {first['step_a']} of A and step {first['step_b']} of B.")


def compiler_body(run_a: Run, run_b: Run, wanted: tuple[Any, Any, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The section's content for the wanted (compile A, compile B, aligned position) and what it chose:
    compile_a, compile_b, ir_pass (the aligned position diffed) and pass_options (the positions both ran)."""
    comparison = compiler_comparison(run_a, run_b, *wanted)
    if comparison is None:
        return [html.Div("A side has no compile.", className="small")], {"pass_options": []}
    aligned = comparison.aligned
    pass_options = [{"label": f"{row['position']} · {row['stage']} · {row['pass_name']}"
                     + (" (IR differs)" if row["ir"] == DIFFERS else ""), "value": row["position"]}
                    for row in aligned.filter(pl.col("presence") == BOTH).iter_rows(named=True)]
    only_a, only_b = comparison.names(ONLY_A), comparison.names("only B")
    diff, diff_note = "", ""
    if comparison.position is not None and comparison.diff is not None:
        row = aligned.row(comparison.position, named=True)
        diff = unified_html(comparison.diff.unified)
        diff_note = (f"{row['pass_name']}: A step {row['step_a']} ({row['lines_a'] or 0} lines, {row['ops_a'] or 0} "
                     f"ops) → B step {row['step_b']} ({row['lines_b'] or 0} lines, {row['ops_b'] or 0} ops): "
                     f"−{comparison.diff.removed} / +{comparison.diff.added} lines (the first {MAX_DIFF_LINES:,} "
                     f"lines of each side compared, {2 * MAX_RENDER_LINES:,} diff lines shown)")
    body = [
        html.Div(f"A #{comparison.compile_a} {comparison.kernel_a.get('kernel')} ({comparison.steps_a} steps) "
                 f"against B #{comparison.compile_b} {comparison.kernel_b.get('kernel')} ({comparison.steps_b} steps):"
                 f" {aligned.height} passes aligned by stage, dump kind and pass name; only in A: "
                 f"{', '.join(only_a) or 'none'}; only in B: {', '.join(only_b) or 'none'}.",
                 id="compare-compiler-summary", className="small mb-1"),
        dbc.Alert(_first_text(comparison), id="compare-compiler-first",
                  color="warning" if comparison.first else "light", className="small py-1 mb-2"),
        static_html(_metadata_table(comparison)),
        html.Div(diff_note, id="compare-compiler-diff-note", className="small text-muted mb-1"),
        html.Div(dcc.Markdown(diff, id="compare-compiler-diff", dangerously_allow_html=True),
                 className="ir-panel mb-2"),
        html.H6("Passes side by side (yellow: IR differs; red: only in A; green: only in B)"
                + (f"; first {MAX_PASS_ROWS} of {aligned.height} shown" if aligned.height > MAX_PASS_ROWS else ""),
                className="mt-2"),
        static_html(_pass_table(comparison)),
    ]
    return body, {"compile_a": comparison.compile_a, "compile_b": comparison.compile_b,
                  "ir_pass": comparison.position, "pass_options": pass_options}


def compiler_section(run_a: Run, run_b: Run, wanted: tuple[Any, Any, Any]) -> html.Div:
    body, chosen = compiler_body(run_a, run_b, wanted)
    pickers = html.Div([
        html.Span("A compile", className="me-2"),
        native_select("compare-compile-a", _options(run_a), chosen.get("compile_a"), min_width="320px",
                      class_name="me-3"),
        html.Span("B compile", className="me-2"),
        native_select("compare-compile-b", _options(run_b), chosen.get("compile_b"), min_width="320px",
                      class_name="me-3"),
        html.Span("diff of pass", className="me-2"),
        native_select("compare-ir-pass", chosen["pass_options"], chosen.get("ir_pass"), min_width="380px"),
    ], className="d-flex flex-wrap align-items-center gap-1 mb-2")
    return html.Div([html.H5("Compiler: two compiles pass by pass", className="mb-2"), pickers,
                     html.Div(body, id="compare-compiler-body")], id="compare-compiler-section", className="chart-card")
