"""Which pages have something to show for a run: the Runs page links those, Insights first, and no other.

A page is linked only when it would draw data for the run, not whenever the run holds the evidence kind the
page reads: a Nsight Systems export has NVTX ranges (so "layers" evidence) but no module ranges and no
kernel attributed to a layer, and /layers would show two empty cards. The checks read a column or the first
matching row of a table (parquet statistics and early stops), never a whole table, and are cached per run.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from dashboard.analysis.layers import LAYER_CATEGORIES
from dashboard.store import Run, RunInfo
from dashboard.views import run_views
from dashboard.views.cache import per_run

# (path, link text) in the order the Runs page lists them; Insights, what to fix first, leads.
PAGES: tuple[tuple[str, str], ...] = (
    ("/insights", "Insights"), ("/kernels", "Kernels"), ("/layers", "Layers"), ("/timeline", "Timeline"),
    ("/ranks", "Ranks"), ("/memory", "Memory"), ("/planner", "Planner"), ("/compiler", "Compiler"),
    ("/compare", "Compare"), ("/history", "History"),
)


def _any_row(frame: pl.LazyFrame) -> bool:
    return frame.head(1).collect().height > 0


def has_layers(run: Run) -> bool:
    """Module ranges, or kernels attributed to a layer: what /layers draws its boxes from."""
    if _any_row(run.scan("ranges").select("category").filter(pl.col("category").is_in(LAYER_CATEGORIES))):
        return True
    kernels = run.scan("kernels")
    return "layer" in kernels.collect_schema().names() and _any_row(
        kernels.select("layer").filter(pl.col("layer").is_not_null()))


@per_run(256)
def own_pages(run: Run) -> frozenset[str]:
    """The pages with data from this run alone (Compare and History also depend on the other runs)."""
    info = run.info
    pages = {"/insights"}  # every run has findings, or says it has none and why
    kernels = info.row_counts.get("kernels", 0) + info.row_counts.get("memcpy", 0) > 0
    if kernels:
        pages |= {"/kernels", "/timeline"}
    if run.has_evidence("layers") and has_layers(run):
        pages.add("/layers")
    if kernels and len(run_views.kernel_ranks(run)) >= 2:
        pages.add("/ranks")
    if run.has_evidence("memory") or run.has_evidence("cuda_memory"):
        pages.add("/memory")
    if run.has_evidence("planner"):
        pages.add("/planner")
    if run.has_evidence("compiler"):
        pages.add("/compiler")
    if "/ranks" in pages or run.has_evidence("compiler"):  # rank against rank, compile against compile
        pages.add("/compare")
    return frozenset(pages)


def run_links(run: Run, same_name: Mapping[str, int]) -> list[tuple[str, str, dict[str, str]]]:
    """(path, text, extra query) of every page with data for `run`, in PAGES order. `same_name`: how many
    runs carry each run name (Compare defaults to the previous run of the name, History draws the series)."""
    pages = set(own_pages(run))
    if same_name.get(run.info.name, 0) >= 2:
        pages |= {"/compare", "/history"}
    extra = {"/history": {"name": run.info.name}}
    return [(path, text, extra.get(path, {})) for path, text in PAGES if path in pages]


def name_counts(infos: list[RunInfo]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for info in infos:
        counts[info.name] = counts.get(info.name, 0) + 1
    return counts
