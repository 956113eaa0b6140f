"""`/kernels`: where GPU time goes, kernels by total time, launches and duration.

URL state: run, rank (int or "all"), sel (kernel keys), window (from the
timeline brush), group (name / op / layer), top (bars shown), only (1 = the
table lists only the selection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go

from dashboard.analysis import kernels as kernel_analysis
from dashboard.analysis import summary_views
from dashboard.analysis.breakdown import breakdown_text
from dashboard.analysis.units import format_ns
from dashboard.figures.kernels import duration_scatter_figure, selected_points, top_kernels_figure
from dashboard.store import Run
from dashboard.views import insights as insights_view
from dashboard.views import params, run_views
from dashboard.views.kernel_table import busy_text, kernel_column_defs, kernel_rows
from dashboard.views.state import ViewState, param

GROUP_CHOICES = {"name": "kernel", "op": "launching op", "layer": "layer"}
TOP_CHOICES = (10, 20, 30, 50, 100)
DEFAULT_TOP = 20
# Export name of each chart -> the page's component id.
CHARTS = {"top-kernels": "kernels-bar", "duration-vs-launches": "kernels-scatter"}


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())
    group: str = param(params.choice("group", GROUP_CHOICES, "name"), "name")
    top: int = param(params.top(DEFAULT_TOP), DEFAULT_TOP)
    sel: tuple[str, ...] = param(params.keys(), ())
    window: tuple[int, int] | None = param(params.window())
    only: bool = param(params.flag("only"), False)

    def resolved(self, run: Run) -> Self:
        return self.replace(rank=params.resolve_rank(self.rank, run_views.kernel_ranks(run)))


def view(run: Run, state: State) -> run_views.KernelView:
    return run_views.kernel_view(run, state.rank, state.window, state.group)  # cached per (run, rank, window, group)


def highlighted(run: Run, state: State) -> list[str]:
    """Row keys to highlight: the kernels themselves, or the ops / layers that launched them."""
    selected = list(state.sel)
    return selected if state.group == "name" else kernel_analysis.groups_touching(view(run, state).pairs, selected)


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    kernels = view(run, state)
    marked = highlighted(run, state)
    return {
        "top-kernels": top_kernels_figure(kernels.summary, state.top, marked, kernels.spread, state.group),
        "duration-vs-launches": duration_scatter_figure(kernels.summary, marked, state.group),
    }


def selection_points(run: Run, state: State) -> dict[str, list[int]]:
    """A selection change only re-styles: the `selectedpoints` of each chart instead of new charts."""
    keys = view(run, state).summary.get_column("key").to_list()
    marked = highlighted(run, state)
    return {"top-kernels": selected_points(keys[:state.top], marked),
            "duration-vs-launches": selected_points(keys, marked)}


def _spread_ranks(kernels: run_views.KernelView) -> int:
    """How many ranks the table's sums add up (rank_spread counts a rank without the kernel as 0)."""
    if kernels.spread is None or kernels.spread.height == 0:
        return 1
    return int(kernels.spread.get_column("ranks").list.len().max())  # type: ignore[arg-type]


def table(run: Run, state: State) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The grid's rows and column definitions (only the selection's rows when `only` is on)."""
    kernels = view(run, state)
    rows, units = kernel_rows(kernels.summary, kernels.spread)
    marked = highlighted(run, state)
    if state.only and marked:
        chosen = set(marked)
        rows = [row for row in rows if row["key"] in chosen]
    columns = kernel_column_defs(state.group, units, kernels.spread is not None, _spread_ranks(kernels))
    return rows, columns


def totals_text(run: Run, state: State) -> str:
    kernels = view(run, state)
    count = len(state.sel)
    share = f" · selection: {count} kernel{'s' if count != 1 else ''}" if count else ""
    busy = busy_text(run_views.gpu_busy_view(run, state.rank, state.window))
    busy_part = f" · {busy}" if busy else ""
    source = f" · numbers {kernels.source}" if kernels.source else ""
    return (f"{kernels.launches:,} launches · {format_ns(kernels.gpu_time_ns)} of kernel time{busy_part} · "
            f"{kernels.summary.height} {GROUP_CHOICES[state.group]}s{share}{source}")


def breakdown_line(run: Run) -> str:
    """The breakdown's headline, except at many ranks with summaries: it merges every kernel's interval,
    which opening this page never reads there (analysis/summary_views.py)."""
    ranks = summary_views.summary_ranks(run)
    if ranks is not None and len(ranks) > summary_views.SUMMARY_MIN_RANKS:
        return f"per rank on Insights ({len(ranks)} ranks: it reads every kernel's interval, this page only summaries)"
    return breakdown_text(insights_view.breakdown(run))
