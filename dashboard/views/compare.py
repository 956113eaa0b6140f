"""`/compare`: where kernel time moved between two runs, or two ranks of one run, and a section per other
evidence kind both runs share.

URL state: run + rank (A, the baseline, as on every page), other + other_rank (B; by default another rank
of A's run, else the newest other run), sel (kernel keys, shared with /kernels and /timeline), top (bars
shown), layer + pass (a clicked layer bar, carried to /layers), group + other_group (planner dumps
compared), compile_a + compile_b + ir_pass (the compiles compared and the aligned pass diffed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go

from dashboard.analysis.compare import Side
from dashboard.analysis.units import format_ns, time_unit_for
from dashboard.figures.compare import delta_figure, layer_delta_figure, totals_scatter
from dashboard.figures.plain import plain_figures
from dashboard.store import Run, RunStore
from dashboard.views import compare_sections, params, run_views
from dashboard.views.cache import per_run
from dashboard.views.compare_sides import CompareView, choose_sides, compare_view
from dashboard.views.state import ViewState, param

TOP_CHOICES = (10, 20, 30, 50)
DEFAULT_TOP = 20
KERNEL_CHARTS = {"compare-delta": "compare-delta", "compare-scatter": "compare-scatter",
                 "compare-layers": "compare-layers"}
SECTION_CHARTS = {name: name for name in ("compare-passes", "compare-busy", "compare-memory", "compare-cuda-memory",
                                          "compare-liveness")}
CHARTS = {**KERNEL_CHARTS, **SECTION_CHARTS}


@dataclass(frozen=True)
class State(ViewState):
    rank: int | None = param(params.rank())
    other: str | None = param(params.text("other"))
    other_rank: int | None = param(params.rank("other_rank"))
    sel: tuple[str, ...] = param(params.keys(), ())
    top: int = param(params.top(DEFAULT_TOP), DEFAULT_TOP)
    layer: str | None = param(params.text("layer"))
    pass_: str | None = param(params.text("pass"))
    group: str | None = param(params.text("group"))
    other_group: str | None = param(params.text("other_group"))
    compile_a: str | None = param(params.text("compile_a"))
    compile_b: str | None = param(params.text("compile_b"))
    ir_pass: str | None = param(params.text("ir_pass"))

    def resolved(self, run: Run) -> Self:
        return self.replace(rank=params.resolve_rank(self.rank, run_views.kernel_ranks(run)))

    @property
    def chosen_layer(self) -> tuple[str, str] | None:
        return (self.layer, self.pass_ or "forward") if self.layer else None


def sides(store: RunStore, run: Run, state: State) -> tuple[Side, Side] | None:
    """(A, B) for this state (B checked against the runs there are), or None: nothing to compare with."""
    other_rank = None if state.other_rank is None else str(state.other_rank)
    return choose_sides(store, run, state.rank, state.other, other_rank)


def has_charts(run: Run) -> bool:
    """Whether the page compares anything for this run by default (another rank, the previous run of its name,
    its own compiles): else it asks for B and draws nothing."""
    return choose_sides(RunStore.containing(run), run, None, None, None) is not None


def both_have_kernels(store: RunStore, a: Side, b: Side) -> bool:
    return all(store.open(side.run_id).has_evidence("kernels") for side in (a, b))


def kernel_figures(view: CompareView, state: State) -> dict[str, go.Figure]:
    a, b = view.a.label, view.b.label
    selected = list(state.sel)
    return {"compare-delta": delta_figure(view.comparison, state.top, selected, a, b),
            "compare-scatter": totals_scatter(view.comparison, selected, a, b),
            "compare-layers": layer_delta_figure(view.layers, state.chosen_layer, a, b)}


def page_kernel_figures(store: RunStore, compared: CompareView, state: State) -> dict[str, dict[str, Any]]:
    """kernel_figures as the page sends them: plain JSON values cached per pair of runs, sides and state (never
    mutate); a load then serialises plain values instead of building and validating three figures again."""
    a_run = store.open(compared.a.run_id)
    b_run = a_run if compared.b.run_id == compared.a.run_id else store.open(compared.b.run_id)
    return _plain_kernel_figures(a_run, b_run, compared.a, compared.b, state)


@per_run(16)
def _plain_kernel_figures(a_run: Run, b_run: Run, a: Side, b: Side, state: State) -> dict[str, dict[str, Any]]:
    compared = compare_view(RunStore.containing(a_run), a, b)
    return plain_figures(kernel_figures(compared, state))


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """Every chart the page draws for this state: the kernel charts when both sides have kernels, then the
    sections both runs share."""
    store = RunStore.containing(run)
    chosen = sides(store, run, state)
    if chosen is None:
        return {}
    found: dict[str, go.Figure] = {}
    if both_have_kernels(store, *chosen):
        found.update(kernel_figures(compare_view(store, *chosen), state))
    found.update(compare_sections.section_figures(store, *chosen, (state.group, state.other_group)))
    return found


def summary_text(view: CompareView) -> str:
    totals = view.totals
    change = totals.change
    moved = f" ({change:+.1%})" if change is not None else ""
    return (f"Kernel time A: {format_ns(totals.total_a_ns)} in {totals.launches_a:,} launches · "
            f"B: {format_ns(totals.total_b_ns)} in {totals.launches_b:,} launches{moved} · "
            f"{totals.both} kernels on both sides, {totals.only_a} only in A, {totals.only_b} only in B"
            + (f" ({view.renamed.height} of them paired as one kernel renamed: same short name, and launch "
               "signature where it tells them apart; the table's match and A-name columns show each pairing)"
               if view.renamed.height else ""))


def table_rows(view: CompareView) -> tuple[list[dict[str, Any]], str]:
    """Rows in one time unit (named in the headers) and that unit."""
    frame = view.comparison
    largest = max(int(frame.get_column(c).abs().max() or 0) for c in ("total_a_ns", "total_b_ns", "delta_ns"))
    factor, unit = time_unit_for(largest)
    rows = frame.select(
        "key", "group", "label", "count_a", "count_b", "presence", "match", "renamed_from",
        *[(frame.get_column(c) / factor).round(4).alias(c.removesuffix("_ns")) for c in
          ("total_a_ns", "total_b_ns", "delta_ns")],
        (frame.get_column("ratio")).round(3).alias("ratio"),
    ).to_dicts()
    return rows, unit
