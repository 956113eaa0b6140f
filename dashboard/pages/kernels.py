"""`/kernels`: Where GPU time goes: kernels by total time, launches and duration."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard.layouts.evidence_summary import run_summary
from dashboard.layouts.page import page_header, resolve_run

dash.register_page(__name__, path="/kernels", name="Kernels", order=1, title="Kernels · dashboard")

PATH = "/kernels"
EVIDENCE = "kernels"


def layout(run: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Kernels", chosen, "Where GPU time goes: kernels by total time, launches and duration")
    if chosen is None:
        return html.Div([header, notice], id="kernels-page")
    return html.Div([header, run_summary(chosen, ('kernels', 'memcpy', 'api_calls'))], id="kernels-page")
