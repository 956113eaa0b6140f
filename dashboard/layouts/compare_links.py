"""The Runs page's "Compare" and "History" buttons for the runs ticked in its grid."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc

from dashboard.layouts.page import page_href


def compare_buttons() -> list[dbc.Button]:
    return [
        dbc.Button("Compare selected", id="compare-runs", href="/compare", color="primary", outline=True, size="sm",
                   disabled=True, className="ms-2", title="Tick exactly two runs: the older is A (baseline)"),
        dbc.Button("History of selected", id="history-runs-link", href="/history", color="primary", outline=True,
                   size="sm", disabled=True, className="ms-2", title="Tick two or more runs: a trend, oldest first"),
    ]


def compare_links(selected: list[dict[str, Any]] | None) -> tuple[str, bool, str, bool]:
    """(compare href, disabled, history href, disabled): compare needs two ticked runs, history two or more."""
    rows = sorted(selected or [], key=lambda row: (row.get("created") or "", row.get("id") or ""))
    ids = [row["id"] for row in rows if row.get("id")]
    compare = page_href("/compare", ids[0], other=ids[1]) if len(ids) == 2 else "/compare"
    history = page_href("/history", None, runs=",".join(ids)) if len(ids) >= 2 else "/history"
    return compare, len(ids) != 2, history, len(ids) < 2
