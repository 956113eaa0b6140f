"""`/planner`: Triton warp-specialization memory planner: SMEM/TMEM liveness and channels."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard.layouts.evidence_summary import run_summary
from dashboard.layouts.page import page_header, resolve_run

dash.register_page(__name__, path="/planner", name="Planner", order=5, title="Planner · dashboard")

PATH = "/planner"
EVIDENCE = "planner"
TABLES = ("ws_buffers", "ws_ops", "ws_channels", "dot_nodes", "dot_edges")


def layout(run: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Planner", chosen, "Warp-specialization planner: SMEM/TMEM liveness and channels")
    if chosen is None:
        return html.Div([header, notice], id="planner-page")
    return html.Div([header, run_summary(chosen, TABLES)], id="planner-page")
