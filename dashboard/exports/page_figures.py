"""Every chart of a page for one run and view state, without Dash, for PNG export.

The CLI `export` command and the pages' "Export page as PNG" both use this,
so a zip of a page holds what the page shows for the same URL state (run,
rank, window, selection, group, layer, ...). Each builder calls the same
analysis and figure functions as its page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import plotly.graph_objects as go

from dashboard.analysis.selection import parse_keys
from dashboard.store import Run

Query = Mapping[str, str]
PageFigures = Callable[[Run, Query], dict[str, go.Figure]]


def _rank(query: Query) -> int | None:
    value = query.get("rank")
    try:
        return int(value) if value not in (None, "", "all") else None
    except ValueError:
        return None


def _int(query: Query, key: str, default: int) -> int:
    try:
        return int(query.get(key) or default)
    except ValueError:
        return default


def _layer(query: Query) -> tuple[str, str] | None:
    return (query["layer"], query.get("pass") or "forward") if query.get("layer") else None


def kernels_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.views import kernels

    return kernels.figures(run, kernels.State.from_query(query, run))


def layers_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.views import layers

    return layers.figures(run, layers.State.from_query(query, run))


def timeline_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.views import timeline

    return timeline.figures(run, timeline.State.from_query(query, run))


def memory_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.analysis.memory import top_growth, with_deltas
    from dashboard.analysis.memory_view import parse_range
    from dashboard.figures.memory import memory_curves_figure, top_growth_figure

    op_memory = run.frame("op_memory")
    rank = _rank(query) or 0
    per_bank = query.get("unit") != "device"
    op = query.get("op")
    curves = memory_curves_figure(op_memory, per_bank=per_bank, rank=rank,
                                  selected_op=int(op) if op and op.isdigit() else None,
                                  op_range=parse_range(query.get("ops")))
    growth = top_growth(with_deltas(op_memory.filter(op_memory["rank"] == rank)), n=10)
    return {"memory-curves": curves, "top-growth": top_growth_figure(growth, per_bank=per_bank)}


def planner_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.analysis.liveness import planner_groups
    from dashboard.figures.planner import live_memory_figure, liveness_timeline

    buffers, ops, channels = run.frame("ws_buffers"), run.frame("ws_ops"), run.frame("ws_channels")
    groups = planner_groups(buffers, ops, channels)
    if not groups:
        return {}
    group = query.get("group") if query.get("group") in groups else groups[0]
    figures = {}
    for memory in ("SMEM", "TMEM"):
        figures[f"{memory.lower()}-liveness"] = liveness_timeline(buffers, group, memory)
        figures[f"{memory.lower()}-live"] = live_memory_figure(buffers, group, memory)
    return figures


def compare_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.analysis.compare_view import choose_sides, compare_view
    from dashboard.exports.compare_sections import section_figures
    from dashboard.figures.compare import delta_figure, layer_delta_figure, totals_scatter
    from dashboard.store import RunStore

    store = RunStore.containing(run)
    sides = choose_sides(store, run, _rank(query), query.get("other"), query.get("other_rank"))
    if sides is None:
        return {}
    view = compare_view(store, *sides)
    selected = parse_keys(query.get("sel"))
    a, b = view.a.label, view.b.label
    figures = {
        "compare-delta": delta_figure(view.comparison, _int(query, "top", 20), selected, a, b),
        "compare-scatter": totals_scatter(view.comparison, selected, a, b),
        "compare-layers": layer_delta_figure(view.layers, _layer(query), a, b),
        **section_figures(store, view.a, view.b, query),  # passes, busy, memory, planner: what both runs share
    }
    return {name: figure for name, figure in figures.items() if figure.data}  # e.g. no kernel on both sides


def compiler_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    from dashboard.views import compiler

    return compiler.figures(run, compiler.State.from_query(query, run))


def insights_figures(run: Run, query: Query) -> dict[str, go.Figure]:
    import polars as pl

    from dashboard.analysis.insights import run_insights
    from dashboard.figures.insights import breakdown_figure

    insights = run_insights(run)
    by_step = insights.by_step.filter(pl.col("step").is_not_null())
    figures = {"insights-breakdown": breakdown_figure(insights.by_rank)}
    if by_step.height:
        figures["insights-breakdown-steps"] = breakdown_figure(by_step, by_step=True)
    return figures


PAGES: dict[str, PageFigures] = {
    "insights": insights_figures,
    "kernels": kernels_figures,
    "layers": layers_figures,
    "timeline": timeline_figures,
    "memory": memory_figures,
    "planner": planner_figures,
    "compare": compare_figures,
    "compiler": compiler_figures,
}
# Export-only sizing (px), applied to the view's figures: on screen the chart fills its card, on paper a
# timeline's lanes need the width.
EXPORT_WIDTHS = {"timeline": 1800}
# Which evidence a page needs before it has charts to export.
PAGE_EVIDENCE = {"insights": "kernels", "kernels": "kernels", "layers": "layers", "timeline": "kernels",
                 "memory": "memory", "planner": "planner", "compare": "kernels", "compiler": "compiler"}


def pages_for(run: Run) -> list[str]:
    """The pages that have charts for this run."""
    return [page for page, evidence in PAGE_EVIDENCE.items() if run.has_evidence(evidence)]


def page_figures(page: str, run: Run, query: Query | None = None) -> dict[str, go.Figure]:
    """The charts of one page for a run and view state (the page's URL query), sized for export."""
    try:
        builder = PAGES[page]
    except KeyError:
        raise KeyError(f"unknown page {page!r}; pages with charts: {', '.join(PAGES)}") from None
    figures = builder(run, query or {})
    if page in EXPORT_WIDTHS:
        for figure in figures.values():
            figure.update_layout(width=EXPORT_WIDTHS[page])
    return figures
