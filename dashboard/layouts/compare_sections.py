"""/compare's sections beyond kernels: passes and GPU busy, device memory, CUDA allocator memory, planner,
compiler (one per shared evidence kind)."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
import polars as pl
from dash import html

from dashboard.analysis.compare import Side
from dashboard.analysis.compare_memory import (
    align_ops,
    aligned_curves,
    alignment_stretches,
    first_divergence,
    op_sequence,
    peak_comparison,
)
from dashboard.analysis.compare_passes import (
    PASS_DEFINITION,
    STEP_DEFINITION,
)
from dashboard.analysis.compare_planner import (
    buffer_changes,
    change_counts,
    channel_changes,
    peak_changes,
)
from dashboard.analysis.gpu_busy import BUSY_DEFINITION
from dashboard.analysis.units import format_bytes, format_ns
from dashboard.layouts.compare_compiler import compiler_section
from dashboard.layouts.compare_cuda_memory import cuda_memory_section
from dashboard.layouts.compare_rewrites import rewrites_section
from dashboard.layouts.page import chart, small_table
from dashboard.layouts.select import native_select
from dashboard.store import Run
from dashboard.views import compare_sections as sections
from dashboard.views.compare_sides import memory_rank, shared_evidence

MAX_STRETCHES = 40


def _signed(value: float | None, fmt: Any) -> str | None:
    if value is None:
        return None
    return ("+" if value >= 0 else "−") + fmt(abs(value))


def _card(title: str, section_id: str, *children: Any) -> html.Div:
    return html.Div([html.H5(title, className="mb-2"), *children], id=section_id, className="chart-card")


def passes_section(run_a: Run, run_b: Run, a: Side, b: Side) -> html.Div:
    figures = sections.page_passes_figures(run_a, run_b, a, b)
    (step_a, source_a), (step_b, source_b) = sections.step_time(run_a, a.rank), sections.step_time(run_b, b.rank)
    steps = (f"Step time A {format_ns(step_a)} · B {format_ns(step_b)}"
             + (f" · B − A {_signed(step_b - step_a, format_ns)}" if step_a is not None and step_b is not None else "")
             + f" (from A: {source_a}; B: {source_b})")
    return _card(
        "Passes and GPU busy", "compare-passes-section",
        html.Div(steps, id="compare-steps", className="small mb-1"),
        html.Div([html.Div(PASS_DEFINITION), html.Div(STEP_DEFINITION), html.Div(BUSY_DEFINITION)],
                 className="small text-muted mb-2"),
        dbc.Row([dbc.Col(chart("compare-passes", figures["compare-passes"], "compare-passes"), lg=7),
                 dbc.Col(chart("compare-busy", figures["compare-busy"], "compare-busy"), lg=5)],
                className="g-3"),
    )


def memory_section(run_a: Run, run_b: Run, a: Side, b: Side) -> html.Div:
    memory_a, memory_b = run_a.frame("op_memory"), run_b.frame("op_memory")
    rank_a, rank_b = memory_rank(run_a, a.rank), memory_rank(run_b, b.rank)
    alignment = align_ops(op_sequence(memory_a, rank_a), op_sequence(memory_b, rank_b))
    curves = aligned_curves(memory_a, memory_b, alignment, rank_a, rank_b)
    peaks = peak_comparison(memory_a, memory_b, rank_a, rank_b)
    parted = first_divergence(curves)
    peak_rows = [[row["buffer_type"], format_bytes(row["peak_a_bytes_per_bank"]),
                  format_bytes(row["peak_b_bytes_per_bank"]), _signed(row["delta_bytes_per_bank"], format_bytes),
                  _culprit(row, "a"), _culprit(row, "b"), _fragmentation(row, "a"), _fragmentation(row, "b")]
                 for row in peaks.to_dicts()]
    stretches = alignment_stretches(alignment.pairs)
    stretch_rows = [[f"{r['first_position']}–{r['last_position']}", r["presence"], _ops(r, "a"), _ops(r, "b")]
                    for r in stretches.head(MAX_STRETCHES).to_dicts()]
    parted_text = "The curves never part." if parted is None else _parted_text(parted)
    return _card(
        "Device memory", "compare-memory-section",
        html.Div(f"Ops aligned {alignment.method}: {alignment.matched:,} matched, {alignment.only_a:,} only in A, "
                 f"{alignment.only_b:,} only in B (rank {rank_a} against rank {rank_b}).",
                 id="compare-memory-alignment", className="small mb-1"),
        html.Div(parted_text, id="compare-memory-parted", className="small mb-2"),
        chart("compare-memory", sections.memory_figure(run_a, run_b, a, b), "compare-memory"),
        html.H6("Peaks per buffer type (bytes per bank; culprit = the op that allocated the peak, i.e. the one "
                "before the peak snapshot; fragmentation = 1 − largest free block / free, at the peak and worst)",
                className="mt-2"),
        small_table(["buffer", "peak A", "peak B", "B − A", "culprit A", "culprit B", "fragmentation A (peak / worst)",
                "fragmentation B (peak / worst)"], peak_rows, "compare-memory-peaks"),
        html.Details([html.Summary(f"Alignment: {stretches.height} stretches"
                                   + (f" (first {MAX_STRETCHES} shown)" if stretches.height > MAX_STRETCHES else "")),
                      small_table(["aligned ops", "found", "A ops", "B ops"], stretch_rows,
                                  "compare-memory-stretches")]),
    )


def _parted_text(parted: dict[str, Any]) -> str:
    where = f"The curves part at aligned op {parted['position']} ({parted['buffer_type']}): "
    if parted["op_index_b"] is None:
        return where + f"A runs op {parted['op_index_a']} {parted['op_type_a']}, which B does not."
    if parted["op_index_a"] is None:
        return where + f"B runs op {parted['op_index_b']} {parted['op_type_b']}, which A does not."
    return where + (f"before A's op {parted['op_index_a']} {parted['op_type_a']} {format_bytes(parted['allocated_a'])}"
                    f" per bank are allocated, before B's op {parted['op_index_b']} {parted['op_type_b']} "
                    f"{format_bytes(parted['allocated_b'])}.")


def _ops(row: dict[str, Any], suffix: str) -> str:
    first, last = row[f"first_op_{suffix}"], row[f"last_op_{suffix}"]
    return "–" if first is None else (f"{first}" if first == last else f"{first}–{last}")


def _culprit(row: dict[str, Any], suffix: str) -> str | None:
    index = row[f"culprit_op_index_{suffix}"]
    return None if index is None else f"op {index} {row[f'culprit_op_type_{suffix}']}"


def _fragmentation(row: dict[str, Any], suffix: str) -> str | None:
    at, worst = row[f"fragmentation_at_peak_{suffix}"], row[f"fragmentation_max_{suffix}"]
    return None if at is None else f"{at:.0%} / {worst:.0%}"


def planner_body(run_a: Run, run_b: Run, group_a: str, group_b: str, a: str, b: str) -> list[Any]:
    buffers_a, buffers_b = run_a.frame("ws_buffers"), run_b.frame("ws_buffers")
    changes = buffer_changes(buffers_a, group_a, buffers_b, group_b)  # counted below; the chart is the view's
    channels = channel_changes(run_a.frame("ws_channels"), group_a, run_b.frame("ws_channels"), group_b)
    peaks = peak_changes(buffers_a, group_a, buffers_b, group_b)
    peak_rows = [[r["memory"], r["unit"], r["peak_a"], r["peak_b"], _signed(r["delta"], str), r["at_op_a"],
                  r["at_op_b"], r["capacity"]] for r in peaks.to_dicts()]
    changed = channels.filter(pl.col("change") != "same")
    channel_rows = [[r["uid"], r["change"], f"{r['src_op_a']} → {r['dst_op_a']}", f"{r['src_op_b']} → {r['dst_op_b']}",
                     r["memory_a"] or r["memory_b"], r["name_a"] or r["name_b"]] for r in changed.to_dicts()]
    return [
        html.Div(f"Buffers: {_counts(change_counts(changes))} · channels: {_counts(change_counts(channels))}",
                 id="compare-planner-counts", className="small mb-2"),
        small_table(["memory", "unit", "peak A", "peak B", "B − A", "at op A", "at op B", "capacity"], peak_rows,
               "compare-planner-peaks"),
        chart("compare-liveness", sections.planner_figure(run_a, run_b, group_a, group_b, a, b), "compare-liveness"),
        html.H6("Channels changed (matched on uid)", className="mt-2"),
        small_table(["uid", "change", "A src → dst op", "B src → dst op", "memory", "name"], channel_rows)
        if channel_rows else html.Div("No channel changed.", className="small text-muted"),
    ]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {change}" for change, n in sorted(counts.items())) or "none"


def planner_section(run_a: Run, run_b: Run, a: Side, b: Side, wanted: tuple[str | None, str | None]) -> html.Div:
    chosen = sections.planner_choice(run_a, run_b, wanted)
    if chosen is None:
        return _card("Planner", "compare-planner-section", html.Div("A side has no planner dump group."))
    group_a, group_b = chosen
    groups_a, groups_b = sections.planner_groups_of(run_a), sections.planner_groups_of(run_b)
    pickers = html.Div([
        html.Span("A dump", className="me-2"),
        native_select("compare-group-a", [{"label": group, "value": group} for group in groups_a], group_a,
                      min_width="260px", class_name="me-3"),
        html.Span("B dump", className="me-2"),
        native_select("compare-group-b", [{"label": group, "value": group} for group in groups_b], group_b,
                      min_width="260px"),
    ], className="d-flex flex-wrap align-items-center mb-2")
    return _card("Planner: the same kernel's two dumps", "compare-planner-section", pickers,
                 html.Div(planner_body(run_a, run_b, group_a, group_b, a.label, b.label), id="compare-planner-body"))


def more_sections(run_a: Run, run_b: Run, a: Side, b: Side,
                  groups: tuple[str | None, str | None] = (None, None),
                  compiles: tuple[Any, Any, Any] = (None, None, None)) -> list[Any]:
    """A section per evidence kind beyond the kernel charts that both runs hold."""
    shared = shared_evidence(run_a, run_b)
    sections: list[Any] = []
    if "kernels" in shared:
        sections.append(passes_section(run_a, run_b, a, b))
    if "memory" in shared:
        sections.append(memory_section(run_a, run_b, a, b))
    if "cuda_memory" in shared:
        sections.append(cuda_memory_section(run_a, run_b, a, b))
    if "planner" in shared:
        sections.append(planner_section(run_a, run_b, a, b, groups))
    if "compiler" in shared:  # compiles chosen by the URL's compile_a, compile_b; ir_pass = the pass diffed
        sections.append(compiler_section(run_a, run_b, compiles))
    if "rewrites" in shared:  # tinygrad: contexts aligned by name, the first differing step, kernel time deltas
        sections.append(rewrites_section(run_a, run_b, a, b))
    if not shared:
        sections.append(dbc.Alert("These two runs share no kind of evidence: nothing to compare.", color="info"))
    return sections
