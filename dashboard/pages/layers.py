"""`/layers`: Per-layer runtime and throughput, forward and backward."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard.layouts.evidence_summary import run_summary
from dashboard.layouts.page import page_header, resolve_run

dash.register_page(__name__, path="/layers", name="Layers", order=2, title="Layers · dashboard")

PATH = "/layers"
EVIDENCE = "layers"


def layout(run: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Layers", chosen, "Per-layer runtime and throughput, forward and backward")
    if chosen is None:
        return html.Div([header, notice], id="layers-page")
    return html.Div([header, run_summary(chosen, ('ranges', 'kernels'))], id="layers-page")
