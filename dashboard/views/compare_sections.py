"""The charts of /compare's sections beyond kernels (passes and GPU busy, Tenstorrent device memory, CUDA
allocator memory, planner): one function per section, used by the page's sections (layouts.compare_sections)
and by the PNG export alike."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis import rank_steps
from dashboard.analysis.compare import Side
from dashboard.analysis.compare_compiler import CompilerComparison, compare_compiles
from dashboard.analysis.compare_cuda_memory import run_peak_deltas
from dashboard.analysis.compare_memory import align_ops, aligned_curves, first_divergence, op_sequence, peak_comparison
from dashboard.analysis.compare_passes import busy_comparison, pass_comparison
from dashboard.analysis.compare_planner import buffer_changes, default_groups
from dashboard.analysis.compare_rewrites import RewriteComparison, compare_rewrites
from dashboard.analysis.planner_liveness import planner_groups
from dashboard.figures.compare_cuda_memory import compare_cuda_memory_figure
from dashboard.figures.compare_memory import compare_memory_figure
from dashboard.figures.compare_passes import busy_figure, pass_figure
from dashboard.figures.compare_planner import liveness_figure
from dashboard.figures.plain import plain_figures
from dashboard.store import Run, RunStore
from dashboard.views import ranks, run_views
from dashboard.views.cache import per_run
from dashboard.views.compare_sides import memory_rank, shared_evidence
from dashboard.views.tinygrad_data import compare_side

PLANNER_TABLES = ("ws_buffers", "ws_ops", "ws_channels")


# The section charts are cached per pair of runs and sides (views.cache): a page load, its callbacks and the
# PNG export draw the same ones, and building a plotly figure (subplots, validation) costs ~0.1 s.
@per_run(16)
def passes_figures(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, go.Figure]:
    kernels_a = run_views.filtered_kernels(run_a, a.rank, None)
    kernels_b = run_views.filtered_kernels(run_b, b.rank, None)
    busy = busy_comparison(run_views.gpu_busy_view(run_a, a.rank, None), run_views.gpu_busy_view(run_b, b.rank, None))
    return {"compare-passes": pass_figure(pass_comparison(kernels_a, kernels_b), a.label, b.label),
            "compare-busy": busy_figure(busy, a.label, b.label)}


@per_run(16)
def page_passes_figures(run_a: Run, run_b: Run, a: Side, b: Side) -> dict[str, dict[str, Any]]:
    """passes_figures as the page sends them: plain JSON values (never mutate), so a load serialises plain
    values instead of validating and copying the figures again."""
    return plain_figures(passes_figures(run_a, run_b, a, b))


def step_time(run: Run, rank: int | None) -> tuple[float | None, str]:
    """analysis.rank_steps.step_time on the run's step matrix as /ranks keeps it (views.ranks.steps): finding the
    steps of every rank costs ~15 ms, too much for every load."""
    return rank_steps.step_time_of(ranks.steps(run), rank)


@per_run(16)
def compiler_comparison(run_a: Run, run_b: Run, wanted_a: Any, wanted_b: Any,
                        wanted_position: Any) -> CompilerComparison | None:
    """analysis.compare_compiler.compare_compiles, cached: aligning two compiles digests every IR text of both
    (~30 ms on an 18 k-line dump) and the section is drawn on every load and pick."""
    return compare_compiles(run_a, run_b, wanted_a, wanted_b, wanted_position)


@per_run(16)
def memory_figure(run_a: Run, run_b: Run, a: Side, b: Side) -> go.Figure:
    memory_a, memory_b = run_a.frame("op_memory"), run_b.frame("op_memory")
    rank_a, rank_b = memory_rank(run_a, a.rank), memory_rank(run_b, b.rank)
    curves = aligned_curves(memory_a, memory_b, align_ops(op_sequence(memory_a, rank_a),
                                                          op_sequence(memory_b, rank_b)), rank_a, rank_b)
    return compare_memory_figure(curves, peak_comparison(memory_a, memory_b, rank_a, rank_b),
                                 first_divergence(curves), a.label, b.label)


@per_run(16)
def cuda_peaks(run_a: Run, run_b: Run, rank_a: int | None, rank_b: int | None) -> tuple[pl.DataFrame, int, int]:
    """compare_cuda_memory.run_peak_deltas, once per pair (the section's table and chart both read it)."""
    return run_peak_deltas(run_a, run_b, rank_a, rank_b)


@per_run(16)
def cuda_memory_figure(run_a: Run, run_b: Run, a: Side, b: Side) -> go.Figure:
    return compare_cuda_memory_figure(cuda_peaks(run_a, run_b, a.rank, b.rank)[0], a.label, b.label)


def planner_groups_of(run: Run) -> list[str]:
    return planner_groups(*[run.frame(table) for table in PLANNER_TABLES])


def planner_choice(run_a: Run, run_b: Run, wanted: tuple[str | None, str | None]) -> tuple[str, str] | None:
    """The dump groups compared: the wanted ones where each side has them, else the default pair."""
    groups_a, groups_b = planner_groups_of(run_a), planner_groups_of(run_b)
    chosen = default_groups(groups_a, groups_b)
    if chosen is None:
        return None
    return (wanted[0] if wanted[0] in groups_a else chosen[0], wanted[1] if wanted[1] in groups_b else chosen[1])


@per_run(16)
def planner_figure(run_a: Run, run_b: Run, group_a: str, group_b: str, label_a: str, label_b: str) -> go.Figure:
    changes = buffer_changes(run_a.frame("ws_buffers"), group_a, run_b.frame("ws_buffers"), group_b)
    return liveness_figure(changes, label_a, label_b)


@per_run(maxsize=8)
def rewrites_comparison(run_a: Run, run_b: Run, rank_a: int | None, rank_b: int | None) -> RewriteComparison:
    """Two tinygrad runs' contexts aligned by name, each pair's first differing step, kernel time deltas."""
    return compare_rewrites(compare_side(run_a, rank_a), compare_side(run_b, rank_b))


def section_figures(store: RunStore, a: Side, b: Side,
                    groups: tuple[str | None, str | None] = (None, None)) -> dict[str, go.Figure]:
    """Chart id -> figure for every section both runs share, as the page draws them."""
    run_a, run_b = store.open(a.run_id), store.open(b.run_id)
    shared = shared_evidence(run_a, run_b)
    figures: dict[str, go.Figure] = {}
    if "kernels" in shared:
        figures.update(passes_figures(run_a, run_b, a, b))
    if "memory" in shared:
        figures["compare-memory"] = memory_figure(run_a, run_b, a, b)
    if "cuda_memory" in shared:
        figures["compare-cuda-memory"] = cuda_memory_figure(run_a, run_b, a, b)
    if "planner" in shared and (chosen := planner_choice(run_a, run_b, groups)) is not None:
        figures["compare-liveness"] = planner_figure(run_a, run_b, *chosen, a.label, b.label)
    return figures
