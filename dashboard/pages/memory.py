"""`/memory`: Device memory per operation: DRAM, L1, L1_SMALL, TRACE."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard.layouts.evidence_summary import run_summary
from dashboard.layouts.page import page_header, resolve_run

dash.register_page(__name__, path="/memory", name="Memory", order=4, title="Memory · dashboard")

PATH = "/memory"
EVIDENCE = "memory"


def layout(run: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Memory", chosen, "Device memory per operation: DRAM, L1, L1_SMALL, TRACE")
    if chosen is None:
        return html.Div([header, notice], id="memory-page")
    return html.Div([header, run_summary(chosen, ('op_memory', 'op_meta'))], id="memory-page")
