"""`/timeline`: Kernels, copies, passes and call stacks per stream and thread."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard.layouts.evidence_summary import run_summary
from dashboard.layouts.page import page_header, resolve_run

dash.register_page(__name__, path="/timeline", name="Timeline", order=3, title="Timeline · dashboard")

PATH = "/timeline"
EVIDENCE = "kernels"


def layout(run: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Timeline", chosen, "Kernels, copies, passes and call stacks per stream and thread")
    if chosen is None:
        return html.Div([header, notice], id="timeline-page")
    return html.Div([header, run_summary(chosen, ('kernels', 'memcpy', 'ranges', 'stack'))], id="timeline-page")
