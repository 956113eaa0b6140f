"""`/compiler`: Triton's IR pass by pass and stage by stage, back to the Python line.

URL state (views/compiler.py): run, compile (one kernel compile), step (a snapshot
of it), cmp (what the diff compares against: empty = the previous step, `12` =
step 12, `3:12` = step 12 of compile 3), view (unified / side), pyline (a line of
the kernel's Python file). Clicking a bar of the pass chart picks a step; clicking
a Python line lights up its IR lines in the step and in every stage; clicking an
IR line picks its Python line. Only the visible step's text and the diff are
sent to the browser (layouts/compiler_panels.py).

One callback folds every input (dropdowns, chart click, line clicks) into the
URL state; one renders the state.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, clientside_callback, ctx, dcc, html

from dashboard.layouts.compiler_launches import launches_section
from dashboard.layouts.compiler_panels import PANELS, links, panels
from dashboard.layouts.html_panel import HtmlPanel
from dashboard.layouts.page import chart, run_page
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import URL_STATE, url_state_store
from dashboard.layouts.tinygrad_panels import body as tinygrad_body
from dashboard.store import Run
from dashboard.views import compiler as view

dash.register_page(__name__, path="/compiler", name="Compiler", order=5.5, title="Compiler · dashboard")

PATH = "/compiler"
EVIDENCE = "compiler"
STATE = {"type": URL_STATE, "page": "compiler"}


@run_page("compiler", "Compiler", "Triton IR pass by pass and stage by stage, mapped to Python lines", EVIDENCE, PATH,
          also="rewrites")
def layout(chosen: Run, header: html.Div, query: dict[str, Any]) -> html.Div:
    if not chosen.has_evidence(EVIDENCE):  # a tinygrad run: VIZ's rewrite views (layouts/tinygrad_panels.py)
        return tinygrad_body(chosen, query)
    state = view.State.from_query(query, chosen)
    # The first view is rendered here, not by initial callbacks: the page arrives drawn.
    parts = panels(chosen, state)

    def labelled(label: str, control: Any, width: str) -> html.Div:
        return html.Div([html.Small(label, className="text-muted d-block"), control], style={"minWidth": width},
                        className="me-3 mb-2")

    controls = html.Div([
        labelled("Kernel compile", native_select("compiler-compile", view.compile_options(chosen), state.compile),
                 "420px"),
        labelled("Step", native_select("compiler-step", parts["step_options"], parts["step"]), "420px"),
        labelled("Compare with", native_select("compiler-compare", parts["compare_options"], parts["compare"]),
                 "320px"),
        labelled("Diff view", dbc.RadioItems(id="compiler-view", value=state.diff_view, inline=True,
                                             options=[{"label": "unified", "value": "unified"},
                                                      {"label": "side by side", "value": "side"}]), "200px"),
    ], className="d-flex flex-wrap align-items-end")

    def panel(title: str, name: str) -> html.Div:
        # The code is one HTML string the browser parses natively: drawn with the page (HtmlPanel), then
        # each later step's arrives in the store and CODE_PANELS_JS writes it in; React never owns the lines.
        # Rendered by dcc.Markdown, an 18k-line IR step took 3-4 s of the browser's time per step change.
        return html.Div([
            html.Div([html.Strong(title, className="me-2"),
                      html.Small(parts[f"{name}_note"], id=f"compiler-{name}-note", className="text-muted")],
                     className="mb-1"),
            dcc.Store(id=f"compiler-{name}-html"),  # empty until a later step: the panel holds the first
            html.Div(HtmlPanel(id=f"compiler-{name}", html=parts[name], className="ir-html"), className="ir-panel"),
        ], className="mb-3")

    return html.Div([
        header,
        dcc.Store(id="compiler-run", data=chosen.id),
        dcc.Store(id="compiler-click"),
        dcc.Store(id="compiler-scroll"),
        url_state_store("compiler", state.url_state()),
        controls,
        html.Div(links(chosen, state), id="compiler-links", className="mb-2 small"),
        chart("compiler-pass-chart", parts["chart"], "compiler-passes", height=300),
        html.Div(parts["summary"], id="compiler-step-summary", className="small mb-2"),
        dbc.Row([
            dbc.Col([panel("Python source", "python"), panel("The Python line in every stage", "stages")], md=5),
            dbc.Col([panel("IR at this step", "ir"),
                     html.Div([html.Button("Download this step's IR", id="compiler-download-button",
                                           className="btn btn-sm btn-outline-secondary mb-2"),
                               dcc.Download(id="compiler-download")]),
                     panel("Diff", "diff")], md=7),
        ]),
        chart("compiler-memory", view.memory_chart(chosen, state.compile), "compiler-memory-plan"),
        html.Div(launches_section(chosen, state.compile), id="compiler-launches"),
    ], id="compiler-page")


@callback(
    Output(STATE, "data"),
    Input("compiler-compile", "value"),
    Input("compiler-step", "value"),
    Input("compiler-compare", "value"),
    Input("compiler-view", "value"),
    Input("compiler-pass-chart", "clickData"),
    Input("compiler-click", "data"),
    State(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def update_state(compile_value: Any, step_value: Any, compare_value: Any, view_value: Any, chart_click: Any,
                 line_click: Any, drawn: dict[str, Any] | None, run_id: str) -> Any:
    run = current_store().open(run_id)
    state = view.State.from_query(drawn or {}, run)
    new = view.next_state(run, state, ctx.triggered_id, compile_value, step_value, compare_value, view_value,
                     chart_click, line_click).resolved(run)
    return dash.no_update if new.url_state() == drawn else new.url_state()


@callback(
    Output("compiler-step", "options"),
    Output("compiler-step", "value"),
    Output("compiler-compare", "options"),
    Output("compiler-compare", "value"),
    Output("compiler-pass-chart", "figure"),
    Output("compiler-step-summary", "children"),
    Output("compiler-python-html", "data"),
    Output("compiler-python-note", "children"),
    Output("compiler-stages-html", "data"),
    Output("compiler-stages-note", "children"),
    Output("compiler-ir-html", "data"),
    Output("compiler-ir-note", "children"),
    Output("compiler-diff-html", "data"),
    Output("compiler-diff-note", "children"),
    Input(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def render_state(drawn: dict[str, Any] | None, run_id: str) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    parts = panels(run, view.State.from_query(drawn or {}, run))
    return tuple(parts[name] for name in PANELS)


@callback(
    Output("compiler-memory", "figure"),
    Output("compiler-links", "children"),
    Output("compiler-launches", "children"),
    Input("compiler-compile", "value"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def render_compile(compile_value: Any, run_id: str) -> tuple[Any, Any, Any]:
    """What depends on the compile alone: its memory plan, the links to other pages, its launches."""
    run = current_store().open(run_id)
    state = view.State.from_query({"compile": compile_value}, run)
    return view.memory_chart(run, state.compile), links(run, state), launches_section(run, state.compile)


@callback(
    Output("compiler-download", "data"),
    Input("compiler-download-button", "n_clicks"),
    State(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def download_step(_clicks: int, drawn: dict[str, Any] | None, run_id: str) -> Any:
    run = current_store().open(run_id)
    found = view.step_file(run, view.State.from_query(drawn or {}, run))
    if found is None:
        return dash.no_update
    name, text = found
    return dcc.send_string(text, name)


# The code panels: each HTML string goes into its (React-empty) Div in one native parse, then the first lit
# line of each panel is brought into view; a panel the user scrolled since is left alone, and the page
# itself does not scroll. compiler.js listens for clicks on the lines.
CODE_PANELS_JS = """
function(python, stages, ir, diff) {
    const contents = {python: python, stages: stages, ir: ir, diff: diff};
    Object.entries(contents).forEach(function([name, content]) {
        const target = document.getElementById("compiler-" + name);
        // null: the store's first value, the panel holds the page's own (HtmlPanel).
        if (target && content !== null && content !== undefined && target.drawnHtml !== content) {
            target.innerHTML = content || "";
            target.drawnHtml = content;
        }
    });
    document.querySelectorAll("#compiler-page .ir-panel").forEach(function(panel) {
        const lit = panel.querySelector(".code-line.hl");
        if (lit) { panel.scrollTop = Math.max(0, lit.offsetTop - panel.clientHeight / 3); }
    });
    return Date.now();
}
"""
clientside_callback(
    CODE_PANELS_JS,
    Output("compiler-scroll", "data"),
    *[Input(f"compiler-{name}-html", "data") for name in ("python", "stages", "ir", "diff")],
)
