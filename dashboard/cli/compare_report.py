"""`dashboard compare A B`: the deltas of /compare as JSON or readable text, with a CI gate.

No Dash or plotly here: the command line must stay light. A section is written
for each evidence kind both runs share (kernels: kernels, passes, gpu_busy;
layers; memory; cuda_memory; planner; compiler; rewrites); times are ns, memory bytes per bank (cuda_memory: bytes
per device), B − A throughout.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from dashboard.analysis.compare import ONLY_A, ONLY_B, Side, comparison_totals, kernel_comparison, layer_comparison
from dashboard.analysis.compare_compiler import compare_compiles
from dashboard.analysis.compare_cuda_memory import cuda_memory_section
from dashboard.analysis.compare_kernels import match_renamed, merge_renamed
from dashboard.analysis.compare_memory import align_ops, aligned_curves, first_divergence, op_sequence, peak_comparison
from dashboard.analysis.compare_passes import STEP_DEFINITION, busy_comparison, pass_comparison
from dashboard.analysis.compare_planner import (
    buffer_changes,
    change_counts,
    channel_changes,
    default_groups,
    peak_changes,
)
from dashboard.analysis.compare_rewrites import compare_rewrites
from dashboard.analysis.planner_liveness import planner_groups
from dashboard.analysis.rank_steps import step_time
from dashboard.store import Run
from dashboard.views import run_views
from dashboard.views.compare_sides import memory_rank, shared_evidence
from dashboard.views.tinygrad_data import compare_side


def _clean(value: Any) -> Any:
    """JSON-safe: NaN / inf become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dicts()]


def kernel_section(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, Any]:
    comparison = kernel_comparison(run_views.kernel_view(run_a, a.rank, None, "name").summary,
                                   run_views.kernel_view(run_b, b.rank, None, "name").summary)
    totals = comparison_totals(comparison)
    matches = match_renamed(comparison)
    merged = merge_renamed(comparison, matches)
    return {
        "total_a_ns": totals.total_a_ns, "total_b_ns": totals.total_b_ns,
        "delta_ns": totals.total_b_ns - totals.total_a_ns, "change": _clean(totals.change),
        "launches_a": totals.launches_a, "launches_b": totals.launches_b,
        "only_a": merged.filter(pl.col("presence") == ONLY_A).get_column("group").to_list(),
        "only_b": merged.filter(pl.col("presence") == ONLY_B).get_column("group").to_list(),
        "renamed": _rows(matches),
        "rows": _rows(merged.select("group", "label", "presence", "renamed_from", "match", "count_a", "count_b",
                                    "total_a_ns", "total_b_ns", "delta_ns", "ratio")),
    }


def pass_section(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, Any]:
    kernels_a = run_views.filtered_kernels(run_a, a.rank, None)
    kernels_b = run_views.filtered_kernels(run_b, b.rank, None)
    (step_a, source_a), (step_b, source_b) = step_time(run_a, a.rank), step_time(run_b, b.rank)
    return {"rows": _rows(pass_comparison(kernels_a, kernels_b)), "step_a_ns": step_a, "step_b_ns": step_b,
            "step_delta_ns": step_b - step_a if step_a is not None and step_b is not None else None,
            "step_source_a": source_a, "step_source_b": source_b, "step_definition": STEP_DEFINITION}


def busy_section(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, Any]:
    rows = busy_comparison(run_views.gpu_busy_view(run_a, a.rank, None), run_views.gpu_busy_view(run_b, b.rank, None))
    side_a, side_b = _rows(rows)
    delta = None if side_a["busy_share"] is None or side_b["busy_share"] is None else \
        side_b["busy_share"] - side_a["busy_share"]
    return {"a": side_a, "b": side_b, "busy_share_delta": delta}


def layer_section(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, Any]:
    layers = layer_comparison(run_views.layer_view(run_a, a.rank, None).stats,
                              run_views.layer_view(run_b, b.rank, None).stats)
    return {"rows": _rows(layers)}


def memory_section(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, Any]:
    memory_a, memory_b = run_a.frame("op_memory"), run_b.frame("op_memory")
    rank_a, rank_b = memory_rank(run_a, a.rank), memory_rank(run_b, b.rank)
    alignment = align_ops(op_sequence(memory_a, rank_a), op_sequence(memory_b, rank_b))
    curves = aligned_curves(memory_a, memory_b, alignment, rank_a, rank_b)
    section: dict[str, Any] = {}
    for row in peak_comparison(memory_a, memory_b, rank_a, rank_b).to_dicts():
        section[row["buffer_type"]] = {
            "peak_a_bytes_per_bank": row["peak_a_bytes_per_bank"],
            "peak_b_bytes_per_bank": row["peak_b_bytes_per_bank"],
            "delta_bytes_per_bank": row["delta_bytes_per_bank"],
            "peak_op_a": _culprit(row, "a"), "peak_op_b": _culprit(row, "b"),
            "fragmentation_at_peak_a": _clean(row["fragmentation_at_peak_a"]),
            "fragmentation_at_peak_b": _clean(row["fragmentation_at_peak_b"]),
            "fragmentation_max_a": _clean(row["fragmentation_max_a"]),
            "fragmentation_max_b": _clean(row["fragmentation_max_b"]),
        }
    section["alignment"] = {"method": alignment.method, "matched": alignment.matched, "only_a": alignment.only_a,
                            "only_b": alignment.only_b, "rank_a": rank_a, "rank_b": rank_b}
    section["first_divergence"] = first_divergence(curves)
    return section


def _culprit(row: dict[str, Any], suffix: str) -> dict[str, Any] | None:
    """The op that allocated a side's peak (the op before the peak snapshot), or None when absent."""
    if row[f"peak_op_index_{suffix}"] is None:
        return None
    return {"snapshot_before_op": row[f"peak_op_index_{suffix}"], "op_index": row[f"culprit_op_index_{suffix}"],
            "op_type": row[f"culprit_op_type_{suffix}"]}


def planner_section(run_a: Run, run_b: Run, group_a: str | None = None, group_b: str | None = None) -> dict[str, Any]:
    tables_a = [run_a.frame(t) for t in ("ws_buffers", "ws_ops", "ws_channels")]
    tables_b = [run_b.frame(t) for t in ("ws_buffers", "ws_ops", "ws_channels")]
    groups_a, groups_b = planner_groups(*tables_a), planner_groups(*tables_b)
    chosen = default_groups(groups_a, groups_b)
    if chosen is None:
        return {"groups_a": groups_a, "groups_b": groups_b}
    group_a = group_a if group_a in groups_a else chosen[0]
    group_b = group_b if group_b in groups_b else chosen[1]
    buffers = buffer_changes(tables_a[0], group_a, tables_b[0], group_b)
    channels = channel_changes(tables_a[2], group_a, tables_b[2], group_b)
    return {"group_a": group_a, "group_b": group_b, "groups_a": groups_a, "groups_b": groups_b,
            "buffer_changes": change_counts(buffers), "channel_changes": change_counts(channels),
            "peaks": _rows(peak_changes(tables_a[0], group_a, tables_b[0], group_b)),
            "buffers": _rows(buffers.filter(pl.col("change") != "same")),
            "channels": _rows(channels.filter(pl.col("change") != "same"))}


def compiler_section(run_a: Run, run_b: Run, compile_a: int | None = None,
                     compile_b: int | None = None) -> dict[str, Any] | None:
    """The two chosen compiles (analysis/compare_compiler); None when a side has no compile."""
    comparison = compare_compiles(run_a, run_b, compile_a, compile_b)
    return None if comparison is None else comparison.summary()


def rewrites_section(run_a: Run, run_b: Run, rank_a: int | None = None,
                     rank_b: int | None = None) -> dict[str, Any]:
    """Two tinygrad runs' contexts aligned by name, each pair's first differing step, kernel times
    (analysis/compare_rewrites)."""
    return compare_rewrites(compare_side(run_a, rank_a), compare_side(run_b, rank_b)).summary()


def build_report(run_a: Run, run_b: Run, rank_a: int | None = None, rank_b: int | None = None,
                 compiles: tuple[int | None, int | None] = (None, None)) -> dict[str, Any]:
    """Every section both runs share, keyed by section name, plus the sides and the shared evidence
    (compiles: the compile of each side the compiler section compares, None for the default)."""
    a, b = Side(run_a.id, rank_a), Side(run_b.id, rank_b)
    shared = shared_evidence(run_a, run_b)
    report: dict[str, Any] = {"a": a.label, "b": b.label, "shared_evidence": shared}
    if "kernels" in shared:
        report["kernels"] = kernel_section(run_a, run_b, a, b)
        report["passes"] = pass_section(run_a, run_b, a, b)
        report["gpu_busy"] = busy_section(run_a, run_b, a, b)
    if "layers" in shared or "kernels" in shared:
        layers = layer_section(run_a, run_b, a, b)
        if layers["rows"]:
            report["layers"] = layers
    if "memory" in shared:
        report["memory"] = memory_section(run_a, run_b, a, b)
    if "cuda_memory" in shared:
        report["cuda_memory"] = cuda_memory_section(run_a, run_b, rank_a, rank_b)
    if "planner" in shared:
        report["planner"] = planner_section(run_a, run_b)
    if "compiler" in shared:
        report["compiler"] = compiler_section(run_a, run_b, *compiles)
    if "rewrites" in shared:
        report["rewrites"] = rewrites_section(run_a, run_b, rank_a, rank_b)
    return report


def slower_by(report: dict[str, Any]) -> float | None:
    """How much slower B is than A, in percent of A's kernel time (negative: faster); None without kernels."""
    kernels = report.get("kernels")
    if not kernels or not kernels["total_a_ns"]:
        return None
    return 100.0 * (kernels["total_b_ns"] - kernels["total_a_ns"]) / kernels["total_a_ns"]
