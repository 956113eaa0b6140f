"""`/compiler`: Triton's IR pass by pass and stage by stage, back to the Python line.

URL state: run, compile (one kernel compile), step (a snapshot of it), cmp (what
the diff compares against: empty = the previous step, `12` = step 12,
`3:12` = step 12 of compile 3), view (unified / side), pyline (a line of the
kernel's Python file). Clicking a bar of the pass chart picks a step; clicking
a Python line lights up its IR lines in the step and in every stage; clicking an
IR line picks its Python line. Only the visible step's text and the diff are
sent to the browser.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.analysis import compiler as view
from dashboard.layouts.page import chart, page_header, resolve_run
from dashboard.layouts.shell import url_state_store
from dashboard.pages import compiler_callbacks  # also registers the page's callbacks
from dashboard.pages.compiler_parts import compiler_data

dash.register_page(__name__, path="/compiler", name="Compiler", order=5.5, title="Compiler · dashboard")

PATH = "/compiler"
EVIDENCE = "compiler"


def initial_state(run_id: str, compile: Any, step: Any, cmp: Any, view_mode: Any, pyline: Any) -> dict[str, Any]:
    """The view state the URL asks for, kept only where it exists in this run."""
    data = compiler_data(run_id)
    chosen = view.choose_compile(data.kernels, compile)
    steps = view.compile_steps(data.steps, chosen) if chosen is not None else data.steps.head(0)
    chosen_step = view.choose_step(steps, step)
    line = int(pyline) if str(pyline or "").isdigit() else None
    return {"compile": chosen, "step": chosen_step, "cmp": str(cmp) if cmp not in (None, "") else "",
            "view": "side" if view_mode == "side" else "unified", "pyline": line}


def layout(run: str | None = None, compile: str | None = None, step: str | None = None, cmp: str | None = None,
           view: str | None = None, pyline: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Compiler", chosen, "Triton IR pass by pass and stage by stage, mapped to Python lines")
    if chosen is None:
        return html.Div([header, notice], id="compiler-page")
    state = initial_state(chosen.id, compile, step, cmp, view, pyline)
    data = compiler_data(chosen.id)
    # The first view is rendered here, not by initial callbacks: the page arrives drawn.
    parts = compiler_callbacks.render(chosen.id, state)
    memory, links = compiler_callbacks.render_compile(state["compile"], chosen.id)
    compile_options = [{"label": view_compile_label(row), "value": row["compile"]}
                       for row in data.kernels.sort("compile").iter_rows(named=True)]

    def labelled(label: str, control: Any, width: str) -> html.Div:
        return html.Div([html.Small(label, className="text-muted d-block"), control], style={"minWidth": width},
                        className="me-3 mb-2")

    controls = html.Div([
        labelled("Kernel compile", dcc.Dropdown(id="compiler-compile", options=compile_options,
                                                value=state["compile"], clearable=False), "420px"),
        labelled("Step", dcc.Dropdown(id="compiler-step", clearable=False, options=parts["step_options"],
                                      value=parts["step"]), "420px"),
        labelled("Compare with", dcc.Dropdown(id="compiler-compare", clearable=False,
                                              options=parts["compare_options"], value=parts["compare"]), "320px"),
        labelled("Diff view", dbc.RadioItems(id="compiler-view", value=state["view"], inline=True,
                                             options=[{"label": "unified", "value": "unified"},
                                                      {"label": "side by side", "value": "side"}]), "200px"),
    ], className="d-flex flex-wrap align-items-end")

    def panel(title: str, name: str) -> html.Div:
        return html.Div([
            html.Div([html.Strong(title, className="me-2"),
                      html.Small(parts[f"{name}_note"], id=f"compiler-{name}-note", className="text-muted")],
                     className="mb-1"),
            html.Div(dcc.Markdown(parts[name], id=f"compiler-{name}", dangerously_allow_html=True),
                     className="ir-panel"),
        ], className="mb-3")

    return html.Div([
        header,
        dcc.Store(id="compiler-run", data=chosen.id),
        dcc.Store(id="compiler-click"),
        dcc.Store(id="compiler-scroll"),
        url_state_store("compiler", state),
        controls,
        html.Div(links, id="compiler-links", className="mb-2 small"),
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
        chart("compiler-memory", memory, "compiler-memory-plan"),
    ], id="compiler-page")


def view_compile_label(row: dict[str, Any]) -> str:
    return view.compile_label(row)
