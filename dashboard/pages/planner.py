"""`/planner`: Triton warp-specialization memory planner: SMEM/TMEM liveness and channels.

URL state: run, group (one kernel compile, or one plain DOT graph), buffer
(`SMEM-3` / `TMEM-0`: a selected buffer), op (a marked operation id, or a node
id for dumps without op ids), partition (filters the channel graph).

Selecting a buffer (a timeline bar, a table row, a channel edge, a "live here"
button) highlights its channels and their ops in the graph; tapping an op marks
its id on both timelines and the live-memory charts and lists what is live
there; tapping a partition box (or the dropdown) filters the graph.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from dashboard.analysis import planner_view as view
from dashboard.layouts.page import page_header, resolve_run
from dashboard.layouts.shell import url_state_store
from dashboard.pages import planner_callbacks  # noqa: F401  (registers the page's callbacks)
from dashboard.pages.planner_parts import group_body, partition_options, planner_data, view_state

dash.register_page(__name__, path="/planner", name="Planner", order=5, title="Planner · dashboard")

PATH = "/planner"
EVIDENCE = "planner"


def layout(run: str | None = None, group: str | None = None, buffer: str | None = None, op: str | None = None,
           partition: str | None = None, **_query: Any) -> html.Div:
    chosen, notice = resolve_run(run, EVIDENCE, PATH)
    header = page_header("Planner", chosen, "Warp-specialization planner: SMEM/TMEM liveness and channels")
    if chosen is None:
        return html.Div([header, notice], id="planner-page")
    data = planner_data(chosen.id)
    choice = view.choose_group(list(data.choices), group)
    state = view_state(choice.group if choice else None)
    if choice is not None and choice.kind == "planner":
        # Keep only what exists in this group: a stale link still opens, without the missing parts.
        wanted_buffer = view.parse_buffer_key(buffer)
        if view.buffer_selection(data.buffers, data.channels, data.ops, choice.group, wanted_buffer):
            state["buffer"] = view.buffer_key(*wanted_buffer)  # type: ignore[misc]
        wanted_op = view.parse_op(op)
        if view.mark_op(data.buffers, data.channels, data.ops, choice.group, wanted_op):
            state["op"] = wanted_op
        wanted_partition = view.parse_partition(partition)
        if wanted_partition in {option["value"] for option in partition_options(data, choice.group)}:
            state["partition"] = wanted_partition
    picker = html.Div([
        html.Small("Group", className="text-muted me-2"),
        dcc.Dropdown(id="planner-group", options=[{"label": c.label, "value": c.group} for c in data.choices],
                     value=choice.group if choice else None, clearable=False, style={"minWidth": "520px"}),
    ], className="d-flex align-items-center mb-2")
    return html.Div([
        header,
        dcc.Store(id="planner-run", data=chosen.id),
        url_state_store("planner", state),
        picker,
        html.Div(group_body(data, choice, state), id="planner-body"),
    ], id="planner-page")

