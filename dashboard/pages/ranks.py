"""`/ranks`: step time per rank × step, the slowest ranks, and the kernels that set a rank apart.

State, charts and tables: views/ranks.py (per-rank summaries where a cluster ingest stored them, never
every kernel row). Clicking a heatmap cell opens /timeline on that rank and that step's window.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, dcc, html, no_update

from dashboard.analysis import rank_steps
from dashboard.analysis.kernel_names import kernel_labels
from dashboard.analysis.rank_summaries import STEP_DEFINITION
from dashboard.analysis.units import format_ns
from dashboard.figures.ranks import clicked_cell, heatmap_height
from dashboard.layouts.page import chart, page_href, run_page
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import url_state_store
from dashboard.layouts.static_html import StaticHtml, static_html
from dashboard.store import Run
from dashboard.views import ranks as view
from dashboard.views.params import format_window
from dashboard.views.text import counted

dash.register_page(__name__, path="/ranks", name="Ranks", order=3.5, title="Ranks · dashboard")

PATH = "/ranks"
EVIDENCE = "kernels"
SLOW_DEFINITION = ("mean step = mean of a rank's step times; vs median = its mean step minus the median over "
                   "ranks of the ranks' mean steps")
TYPICAL_DEFINITION = ("typical = per kernel, the median over ranks of each rank's total time in it (a rank "
                      "without the kernel counts 0); difference = this rank's total − typical")


def _signed(ns: float) -> str:
    return ("+" if ns > 0 else "−" if ns < 0 else "±") + format_ns(abs(ns))


def slowest_table(slowest: pl.DataFrame) -> StaticHtml:
    """Ranks by mean step; "vs median" only where there are ranks to take a median of."""
    several = slowest.height > 1
    header = html.Thead(html.Tr([html.Th("rank"), html.Th("steps"), html.Th("mean step"), html.Th("longest step"),
                                 *([html.Th("mean step vs median")] if several else [])]))
    rows = [html.Tr([html.Td(row["rank"]), html.Td(row["steps"]), html.Td(format_ns(row["mean_step_ns"])),
                     html.Td(format_ns(row["max_step_ns"])),
                     *([html.Td(_signed(row["vs_median_ns"]))] if several else [])])
            for row in slowest.iter_rows(named=True)]
    return static_html(dbc.Table([header, html.Tbody(rows)], size="sm", striped=True, className="ranks-table",
                                 id="ranks-slowest"))


ONE_RANK = ("One rank: there is no other rank to differ from. A multi-rank run lists here the kernels whose time "
            "on a rank differs most from the typical rank.")


def differing_table(differing: pl.DataFrame, rank: int, rank_count: int) -> html.Div | StaticHtml:
    """The kernels setting `rank` apart, named by the app's rule (full name on hover); a line, not a table of
    ±0, when the run has one rank."""
    if rank_count < 2:
        return html.Div(ONE_RANK, className="small text-muted", id="ranks-one-rank")
    if differing.height == 0:
        return html.Div(f"Rank {rank} has no kernels.", className="small text-muted")
    labels = kernel_labels(differing.get_column("name").to_list())
    header = html.Thead(html.Tr([html.Th("kernel"), html.Th(f"rank {rank} total"), html.Th("typical total"),
                                 html.Th("difference")]))
    rows = [html.Tr([html.Td(labels[row["name"]], title=row["name"], className="kernel-name"),
                     html.Td(format_ns(row["rank_ns"])), html.Td(format_ns(row["typical_ns"])),
                     html.Td(_signed(row["diff_ns"]))])
            for row in differing.iter_rows(named=True)]
    return static_html(dbc.Table([header, html.Tbody(rows)], size="sm", striped=True, className="ranks-table"))


@run_page("ranks", "Ranks", "Step time per rank and step; the slowest ranks and what differs", EVIDENCE, PATH)
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, chosen)
    steps, shown = view.steps(chosen), state.shown_rank(chosen)
    several = len(view.ranks(chosen)) > 1  # one rank: nothing to differ from, no median to stand against
    hidden = {} if several else {"display": "none"}
    picker = native_select("ranks-rank", [{"label": f"rank {r}", "value": r} for r in view.ranks(chosen)], shown,
                           min_width="140px", style=hidden)
    return html.Div([
        header,
        dcc.Store(id="ranks-run", data=chosen.id),
        dcc.Location(id="ranks-go", refresh=True),
        url_state_store("ranks", state.url_state()),
        html.Div([f"{counted(steps.get_column('rank').n_unique(), 'rank')} × "
                  f"{counted(steps.get_column('step').n_unique(), 'step')}. " if steps.height else
                  "No profiler step in this run: no step time per rank to draw. ",
                  f"{STEP_DEFINITION}. ", view.source_note(chosen)], className="small text-muted mb-2",
                 id="ranks-definition"),
        html.Div([  # no empty card: without steps the line above says why
            html.Small("Click a cell to open that rank and step on the timeline.", className="text-muted d-block"),
            html.Div(chart("ranks-heatmap", view.figures(chosen, state).get("ranks-heatmap"), f"{chosen.id}-ranks",
                           height=heatmap_height(steps.get_column("rank").n_unique())), className="chart-card"),
        ], style={} if steps.height else {"display": "none"}),
        dbc.Row([
            dbc.Col([html.H5("Slowest ranks", className="mt-3"),
                     html.Div(SLOW_DEFINITION + ".", className="small text-muted mb-1", style=hidden),
                     slowest_table(view.slowest(chosen))], lg=5),
            dbc.Col([html.Div([html.H5("Kernels that differ from the typical rank", className="mt-3 me-3"),
                               picker], className="d-flex align-items-center flex-wrap"),
                     html.Div(TYPICAL_DEFINITION + ".", className="small text-muted mb-1", style=hidden),
                     html.Div(differing_table(view.differing(chosen, state), shown, len(view.ranks(chosen)))
                              if shown is not None else None, id="ranks-differing")], lg=7),
        ]),
    ], id="ranks-page")


@callback(Output("ranks-go", "href"), Input("ranks-heatmap", "clickData"), State("ranks-run", "data"),
          prevent_initial_call=True)
def open_cell(click: dict | None, run_id: str) -> Any:
    cell = clicked_cell(click)
    if cell is None:
        return no_update
    rank, step = cell
    window = rank_steps.step_window(view.steps(current_store().open(run_id)), rank, step)
    return page_href("/timeline", run_id, rank=rank, window=format_window(*window) if window else None)


@callback(Output("ranks-differing", "children"), Output({"type": "url-state", "page": "ranks"}, "data"),
          Input("ranks-rank", "value"), State("ranks-run", "data"), prevent_initial_call=True)
def show_rank(rank_value: Any, run_id: str) -> tuple[Any, dict[str, Any]]:
    run = current_store().open(run_id)
    state = view.State.from_query({"rank": rank_value}, run)
    rank = state.shown_rank(run)
    if rank is None:
        return no_update, no_update
    return differing_table(view.differing(run, state), rank, len(view.ranks(run))), state.url_state()
