"""Every chart of a page for one run and view state, without Dash, for PNG export.

The CLI `export` command and the pages' "charts (zip)" both use this. Each page's
charts come from its view module, `views.<page>.figures(run, State.from_query(query, run))`:
the functions and the state parsing the page itself uses, so a zip holds what the
page shows for the same URL (tests/views/test_export_equals_screen.py checks it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import plotly.graph_objects as go

from dashboard.store import Run

Query = Mapping[str, str]
PageFigures = Callable[[Run, Query], dict[str, go.Figure]]


def _view_module(run: Run, page: str) -> Any:
    if page == "memory":  # as the page: CUDA allocator memory and no Tenstorrent memory, else Tenstorrent's
        cuda = importlib.import_module("dashboard.views.memory_cuda")
        return cuda if cuda.shows(run) else importlib.import_module("dashboard.views.memory")
    return importlib.import_module(f"dashboard.views.{page}")


def _drawn(page: str) -> PageFigures:
    def figures(run: Run, query: Query) -> dict[str, go.Figure]:
        view = _view_module(run, page)  # imported when asked for: the CLI's other commands need no plotly
        drawn = view.figures(run, view.State.from_query(query, run))
        return {name: figure for name, figure in drawn.items() if figure.data}  # e.g. no kernel on both sides
    return figures


PAGES: dict[str, PageFigures] = {page: _drawn(page) for page in (
    "insights", "kernels", "layers", "timeline", "ranks", "memory", "planner", "compare", "compiler")}
# Export-only sizing (px), applied to the view's figures: on screen the chart fills its card, on paper a
# timeline's lanes need the width.
EXPORT_WIDTHS = {"timeline": 1800}
# Which evidence a page needs before it has charts to export (any one of a tuple).
PAGE_EVIDENCE: dict[str, str | tuple[str, ...]] = {
    "insights": "kernels", "kernels": "kernels", "layers": "layers", "timeline": "kernels", "ranks": "kernels",
    "memory": ("memory", "cuda_memory"), "planner": "planner", "compare": "kernels", "compiler": "compiler"}


def pages_for(run: Run) -> list[str]:
    """The pages that have charts for this run: its evidence, and what the view asks more (`has_charts`)."""
    def has(page: str, evidence: str | tuple[str, ...]) -> bool:
        if not any(run.has_evidence(kind) for kind in ((evidence,) if isinstance(evidence, str) else evidence)):
            return False
        has_charts = getattr(_view_module(run, page), "has_charts", None)
        return has_charts is None or bool(has_charts(run))
    return [page for page, evidence in PAGE_EVIDENCE.items() if has(page, evidence)]


def page_state(page: str, run: Run, query: Query) -> dict[str, str]:
    """The page's view state for a query, parsed by the page's own `State` and written again: only keys
    the page knows, each in the form the page writes it (what an export's browser is sent to)."""
    return dict(_view_module(run, page).State.from_query(query, run).to_query())


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
