"""The charts of /compare's sections beyond kernels (passes, GPU busy, memory, planner), for the PNG zip."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from dashboard.analysis import run_views
from dashboard.analysis.compare import Side
from dashboard.analysis.compare_memory import align_ops, aligned_curves, first_divergence, op_sequence, peak_comparison
from dashboard.analysis.compare_passes import busy_comparison, pass_comparison
from dashboard.analysis.compare_planner import buffer_changes, default_groups
from dashboard.analysis.planner_liveness import planner_groups
from dashboard.compare_report import memory_rank, shared_evidence
from dashboard.figures.compare_memory import compare_memory_figure
from dashboard.figures.compare_passes import busy_figure, pass_figure
from dashboard.figures.compare_planner import liveness_figure
from dashboard.store import RunStore


def section_figures(store: RunStore, a: Side, b: Side, query: Mapping[str, Any]) -> dict[str, go.Figure]:
    """Chart id -> figure for every section both runs share, as the page draws them."""
    run_a, run_b = store.open(a.run_id), store.open(b.run_id)
    shared = shared_evidence(run_a, run_b)
    figures: dict[str, go.Figure] = {}
    if "kernels" in shared:
        kernels_a = run_views.filtered_kernels(run_a, a.rank, None)
        kernels_b = run_views.filtered_kernels(run_b, b.rank, None)
        figures["compare-passes"] = pass_figure(pass_comparison(kernels_a, kernels_b), a.label, b.label)
        busy = busy_comparison(run_views.gpu_busy_view(run_a, a.rank, None), run_views.gpu_busy_view(run_b, b.rank,
                                                                                                      None))
        figures["compare-busy"] = busy_figure(busy, a.label, b.label)
    if "memory" in shared:
        memory_a, memory_b = run_a.frame("op_memory"), run_b.frame("op_memory")
        rank_a, rank_b = memory_rank(run_a, a.rank), memory_rank(run_b, b.rank)
        curves = aligned_curves(memory_a, memory_b, align_ops(op_sequence(memory_a, rank_a),
                                                              op_sequence(memory_b, rank_b)), rank_a, rank_b)
        figures["compare-memory"] = compare_memory_figure(
            curves, peak_comparison(memory_a, memory_b, rank_a, rank_b), first_divergence(curves), a.label, b.label)
    if "planner" in shared:
        tables = ("ws_buffers", "ws_ops", "ws_channels")
        groups_a = planner_groups(*[run_a.frame(t) for t in tables])
        groups_b = planner_groups(*[run_b.frame(t) for t in tables])
        chosen = default_groups(groups_a, groups_b)
        if chosen is not None:
            group_a = query.get("group") if query.get("group") in groups_a else chosen[0]
            group_b = query.get("other_group") if query.get("other_group") in groups_b else chosen[1]
            changes = buffer_changes(run_a.frame("ws_buffers"), group_a, run_b.frame("ws_buffers"), group_b)
            figures["compare-liveness"] = liveness_figure(changes, a.label, b.label)
    return figures
