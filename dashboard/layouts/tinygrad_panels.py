"""/compiler for a tinygrad run (VIZ's rewrite views): the layout and its callbacks.

Left: the contexts (kernels' codegen, schedules, JIT captures; kernel names in tinygrad's colours)
and the chosen one's steps, depth-indented, with their match counts. Right: the step's UOp graph
(dash-cytoscape, laid out on the server: `figures/uop_graph.py`), stepped through its matches
(first / previous / next / last, or a match number), the changed nodes framed in orange; the
matched pattern's `file:line`; the diff of the replaced sub-graph against its replacement; and the
kernel's program (source, linearized uops, disassembly, estimates) in tabs.

The two lists are HTML strings whose clicks one delegated listener (assets/tinygrad.js) puts in
`tg-click`; one callback folds every click into the URL state (`{"type": URL_STATE, "page": "tinygrad"}`),
one draws the state; the program panel is redrawn only when the context changes. A replay longer
than the view's budget draws the furthest graph reached and ticks `tg-continue` until it is there.
"""

from __future__ import annotations

from html import escape
from typing import Any

import dash
import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
from dash import Input, Output, State, callback, ctx, dcc, html

from dashboard.figures.uop_graph import UOP_GRAPH_LAYOUT, UOP_GRAPH_STYLESHEET
from dashboard.layouts.ir_code import unified_html
from dashboard.layouts.page import page_header, page_href
from dashboard.layouts.server_state import current_store
from dashboard.layouts.shell import URL_STATE, url_state_store
from dashboard.store import Run
from dashboard.views import tinygrad as view

STATE = {"type": URL_STATE, "page": "tinygrad"}
GRAPH_HEIGHT = 620
LIST_STYLE = {"overflowY": "auto", "border": "1px solid #dee2e6", "borderRadius": "4px"}


def _name_html(display: str | None, name: str | None) -> str:
    if not display:
        return escape(name or "?")
    return "".join(f'<span style="color:{colour}">{escape(text)}</span>' if colour else escape(text)
                   for text, colour in view.ansi_segments(display))


# The lists are HTML strings in one dcc.Markdown each, clicks read by one delegated listener
# (assets/tinygrad.js -> `tg-click`): a context of 847 steps as 847 Dash components with
# pattern-matching ids took the browser ~60 s to re-render on every click.
def context_list(run: Run, state: view.State) -> str:
    items = []
    for row in view.context_rows(run, state.rank):
        classes = "tg-item" + (" tg-kernel" if row["codegen"] else "") \
            + (" active" if row["context"] == state.ctx else "")
        title = f"context {row['context']}" + (f" · kernel {row['kernel']}" if row["kernel"] else "")
        items.append(f'<div class="{classes}" data-tg-ctx="{row["context"]}" title="{escape(title)}">'
                     f'<span class="font-monospace">{_name_html(row["display"], row["name"])}</span>'
                     f'<small class="text-muted ms-1"> {row["steps"]} steps · {row["matches"]:,} matches</small></div>')
    return "".join(items)


def step_list(run: Run, state: view.State) -> str:
    items = []
    for row in view.step_rows(run, state.rank, state.ctx):
        classes = "tg-item" + (" active" if row["step"] == state.step else "")
        title = f"step {row['step']} · graph_rewrite called at {row['file']}:{row['line']}"
        badge = f'<span class="badge rounded-pill text-bg-light ms-2">{row["matches"]:,}</span>' if row["matches"] \
            else ""
        items.append(f'<div class="{classes}" data-tg-step="{row["step"]}" title="{escape(title)}" '
                     f'style="padding-left:{6 + 14 * (row["depth"] or 0)}px"><span>{escape(row["name"] or "?")}</span>'
                     f"{badge}</div>")
    return "".join(items)


def graph_parts(run: Run, state: view.State) -> dict[str, Any]:
    """What the render callback sends for one state: the graph and the texts around it."""
    shown = view.graph_view(run, state)
    steps = view.step_rows(run, state.rank, state.ctx)
    step = steps[state.step] if 0 <= state.step < len(steps) else None
    title: list[Any] = [html.Strong(f"Step {state.step}: {shown.title}")]
    if step is not None and step["file"]:
        title.append(html.Small(f" · graph_rewrite at {step['file']}:{step['line']}", className="text-muted"))
    note = f"{shown.shown:,} of {shown.drawable:,} UOps drawn"
    note += f" ({shown.folded:,} more folded into their users' labels, as VIZ does)" if shown.folded else ""
    note += f" · {shown.changed:,} changed by this match (orange)" if shown.match else ""
    if shown.pending:
        note += f" · replaying: {shown.replayed - 1:,} of {shown.matches:,} matches so far, match {state.match:,} " \
                "follows"
    note += f" · drawn in {shown.milliseconds:,.0f} ms"
    if shown.error:
        pattern: list[Any] = [html.Strong("REWRITE_ERROR: "), shown.error]
    elif shown.pattern:
        pattern = [html.Strong("Pattern "), html.Code(shown.pattern)]
        if shown.seconds is not None:
            pattern.append(html.Small(f" · matched in {shown.seconds * 1e6:,.2f} µs", className="text-muted"))
        pattern.append(html.Pre(shown.pattern_line, className="ir-code mt-1") if shown.pattern_line else
                       html.Small(" (its source line shows where this server has the file's tinygrad release)",
                                  className="text-muted"))
    else:
        pattern = [html.Small("The step's input graph: step through its matches to see what each changed.",
                              className="text-muted")]
    more = min(view.NODES_STEP, shown.hidden)
    return {
        "title": title, "note": note, "elements": shown.elements, "pattern": pattern,
        "diff": unified_html(shown.diff) if shown.match else "*(the input graph: no match yet)*",
        "match": state.match, "matches": f"of {shown.matches:,}",
        "more": f"Show {more:,} more UOps ({shown.hidden:,} not drawn)" if shown.hidden else "All UOps drawn",
        "more_disabled": not shown.hidden, "continue_disabled": not shown.pending,
        "layout": {**UOP_GRAPH_LAYOUT, "redraw": f"{state.ctx}:{state.step}:{shown.match}:{state.nodes}"},
    }


def program_panel(run: Run, state: view.State) -> Any:
    program = view.program_view(run, state)
    if program is None:
        return html.Small("This context compiles no kernel (a schedule, a JIT capture, a link): no program.",
                          className="text-muted")

    def text(body: str | None, missing: str) -> Any:
        return html.Pre(body, className="ir-code tg-code") if body else html.Small(missing, className="text-muted")

    links = [dcc.Link("its launches on /kernels", href=page_href("/kernels", run.id, sel=program.kernel),
                      className="me-3"),
             dcc.Link("on /timeline", href=page_href("/timeline", run.id, sel=program.kernel))] \
        if program.kernel and run.has("kernels") else []
    facts = html.Table([html.Tbody([html.Tr([html.Td(label, className="text-muted pe-3"), html.Td(value)])
                                    for label, value in program.facts])], className="small mb-2")
    return html.Div([
        html.Div([html.Strong(f"Program {program.kernel or ''}", className="me-3"), *links], className="mb-1 small"),
        facts,
        dbc.Tabs([
            dbc.Tab(text(program.source, "no source in the file"), label="Source", tab_id="source"),
            dbc.Tab(text(program.uops, "no linearized uops in the file (before 0.13)"), label="UOp list",
                    tab_id="uops"),
            dbc.Tab([html.Small(program.disassembly_note, className="text-muted d-block mb-1"),
                     text(program.disassembly, "no disassembly")], label="Disassembly", tab_id="asm"),
        ], active_tab="source"),
    ], id="tg-program-body")


def body(run: Run, query: dict[str, Any]) -> html.Div:
    state = view.State.from_query(query, run)
    header = page_header("Compiler", run, "tinygrad's graph rewrites kernel by kernel, as its VIZ shows them")
    parts = graph_parts(run, state)
    button = {"size": "sm", "color": "secondary", "outline": True, "className": "me-1"}
    controls = html.Div([
        dbc.Button("« first", id="tg-first", title="the input graph", **button),
        dbc.Button("‹ previous", id="tg-prev", title="previous match", **button),
        dbc.Button("next ›", id="tg-next", title="next match", **button),
        dbc.Button("last »", id="tg-last", title="the graph after the last match", **button),
        html.Small("match", className="ms-2 me-1 text-muted"),
        dcc.Input(id="tg-match", type="number", min=0, value=parts["match"], debounce=True,
                  style={"width": "6em"}),
        html.Small(parts["matches"], id="tg-matches", className="ms-1 me-3 text-muted"),
        dbc.Button(parts["more"], id="tg-more", disabled=parts["more_disabled"], size="sm", color="primary",
                   outline=True),
    ], className="d-flex flex-wrap align-items-center mb-1")
    return html.Div([
        header,
        dcc.Store(id="tg-run", data=run.id),
        dcc.Store(id="tg-program-context", data=state.ctx),
        dcc.Store(id="tg-click"),
        dcc.Store(id="tg-lists-drawn", data=[state.rank, state.ctx, state.step]),
        url_state_store("tinygrad", state.url_state()),
        dcc.Interval(id="tg-continue", interval=300, disabled=parts["continue_disabled"]),
        dbc.Row([
            dbc.Col([
                html.Small("Contexts (kernels in colour)", className="text-muted d-block"),
                html.Div(dcc.Markdown(context_list(run, state), id="tg-contexts", dangerously_allow_html=True),
                         className="mb-2", style={**LIST_STYLE, "maxHeight": "32vh"}),
                html.Small("Steps (graph_rewrite calls, nested ones indented)", className="text-muted d-block"),
                html.Div(dcc.Markdown(step_list(run, state), id="tg-steps", dangerously_allow_html=True),
                         style={**LIST_STYLE, "maxHeight": "52vh"}),
            ], md=3),
            dbc.Col([
                html.Div(parts["title"], id="tg-step-title", className="mb-1"),
                controls,
                html.Small(parts["note"], id="tg-graph-note", className="text-muted d-block mb-1"),
                cyto.Cytoscape(id="tg-graph", elements=parts["elements"], layout=parts["layout"],
                               stylesheet=UOP_GRAPH_STYLESHEET, minZoom=0.02, maxZoom=4, autoungrabify=True,
                               boxSelectionEnabled=False,
                               style={"height": f"{GRAPH_HEIGHT}px", "width": "100%", "border": "1px solid #dee2e6",
                                      "borderRadius": "6px"}),
                dbc.Row([
                    dbc.Col(html.Div(parts["pattern"], id="tg-pattern", className="small mt-2"), md=5),
                    dbc.Col([html.Small("Diff of the match: the replaced sub-graph → its replacement",
                                        className="text-muted d-block mt-2"),
                             html.Div(dcc.Markdown(parts["diff"], id="tg-diff", dangerously_allow_html=True),
                                      className="ir-panel")], md=7),
                ]),
                html.Div(program_panel(run, state), id="tg-program", className="mt-3"),
            ], md=9),
        ]),
    ], id="compiler-page", className="tinygrad-compiler")


@callback(
    Output(STATE, "data"),
    Input("tg-click", "data"),
    Input("tg-first", "n_clicks"),
    Input("tg-prev", "n_clicks"),
    Input("tg-next", "n_clicks"),
    Input("tg-last", "n_clicks"),
    Input("tg-match", "value"),
    Input("tg-more", "n_clicks"),
    State(STATE, "data"),
    State("tg-run", "data"),
    prevent_initial_call=True,
)
def update_state(click: Any, _first: Any, _prev: Any, _next: Any, _last: Any, match_value: Any,
                 _more: Any, drawn: dict[str, Any] | None, run_id: str) -> Any:
    run = current_store().open(run_id)
    state = view.State.from_query(drawn or {}, run)
    trigger = ctx.triggered_id
    if trigger == "tg-click":
        index = click.get("index") if isinstance(click, dict) else None
        if not isinstance(index, int) or isinstance(index, bool):
            return dash.no_update
        if click.get("kind") == "ctx":
            state = state.replace(ctx=index, step=0, match=0, nodes=view.NODES_DEFAULT)
        else:
            state = state.replace(step=index, match=0, nodes=view.NODES_DEFAULT)
    elif trigger in ("tg-first", "tg-prev", "tg-next", "tg-last"):
        last = 10**9  # clamped to the step's matches by `resolved`
        target = {"tg-first": 0, "tg-prev": state.match - 1, "tg-next": state.match + 1, "tg-last": last}[trigger]
        state = state.replace(match=max(0, target))
    elif trigger == "tg-match" and isinstance(match_value, int | float):
        state = state.replace(match=max(0, int(match_value)))
    elif trigger == "tg-more":
        state = state.replace(nodes=min(state.nodes + view.NODES_STEP, view.NODES_MAX))
    new = state.resolved(run)
    return dash.no_update if new.url_state() == drawn else new.url_state()


@callback(
    Output("tg-contexts", "children"),
    Output("tg-steps", "children"),
    Output("tg-lists-drawn", "data"),
    Output("tg-step-title", "children"),
    Output("tg-graph-note", "children"),
    Output("tg-graph", "elements"),
    Output("tg-graph", "layout"),
    Output("tg-pattern", "children"),
    Output("tg-diff", "children"),
    Output("tg-match", "value"),
    Output("tg-matches", "children"),
    Output("tg-more", "children"),
    Output("tg-more", "disabled"),
    Output("tg-continue", "disabled"),
    Input(STATE, "data"),
    Input("tg-continue", "n_intervals"),
    State("tg-lists-drawn", "data"),
    State("tg-run", "data"),
    prevent_initial_call=True,
)
def render_state(drawn: dict[str, Any] | None, _ticks: Any, lists_drawn: Any, run_id: str) -> tuple[Any, ...]:
    run = current_store().open(run_id)
    state = view.State.from_query(drawn or {}, run)
    parts = graph_parts(run, state)
    chosen = [state.rank, state.ctx, state.step]
    # The lists only change with the context or step: a match step or a tick sends the graph alone.
    lists = (dash.no_update,) * 3 if lists_drawn == chosen else (context_list(run, state), step_list(run, state),
                                                                 chosen)
    return (*lists, parts["title"], parts["note"], parts["elements"],
            parts["layout"], parts["pattern"], parts["diff"], parts["match"], parts["matches"], parts["more"],
            parts["more_disabled"], parts["continue_disabled"])


@callback(
    Output("tg-program", "children"),
    Output("tg-program-context", "data"),
    Input(STATE, "data"),
    State("tg-program-context", "data"),
    State("tg-run", "data"),
    prevent_initial_call=True,
)
def render_program(drawn: dict[str, Any] | None, shown_context: Any, run_id: str) -> tuple[Any, Any]:
    run = current_store().open(run_id)
    state = view.State.from_query(drawn or {}, run)
    if state.ctx == shown_context:
        return dash.no_update, dash.no_update
    return program_panel(run, state), state.ctx
