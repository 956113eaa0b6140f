"""The timeline's lane key as drawn in the browser (figures.timeline_legend.key_annotation)."""

from __future__ import annotations

from playwright.sync_api import Locator, Page

from dashboard.figures.timeline_legend import LANE_KEY

GRAPH = "#timeline-graph .js-plotly-plot"


def lane_key(page: Page, graph: str = GRAPH) -> Locator:
    """The key's text element: one `tspan.line` per group title or entry (an entry starts with its square)."""
    index = page.evaluate(f"""() => document.querySelector('{graph}').layout.annotations
        .findIndex(note => note.name === '{LANE_KEY}')""")
    assert index >= 0, "the figure has no lane key"
    return page.locator(f"{graph} g.annotation[data-index='{index}'] text.annotation-text")
