"""Callbacks of `/planner`: group change, cross-filtering, CSV and PNG exports.

Thin: they parse what was clicked, ask `analysis.planner_view` what it means,
and send small changes back: which graph elements to highlight (applied in
the browser, see below), the charts' selection shapes (plotly Patches of
`layout.shapes` only), grid selections and the selection panel.
"""

from __future__ import annotations

import json
from typing import Any

from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, ctx, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis import planner_view as view
from dashboard.pages.planner_parts import (
    DOT_GRAPH_ID,
    GRAPH_ID,
    LIVE_BUFFER_BUTTON,
    LIVE_IDS,
    TIMELINE_IDS,
    chart_marks,
    graph_elements,
    group_body,
    planner_data,
    selection_panel,
    selection_view,
    view_state,
)
from dashboard.pages.planner_tables import TABLE_IDS

URL_STATE = {"type": "url-state", "page": "planner"}
CHART_IDS = (TIMELINE_IDS["SMEM"], TIMELINE_IDS["TMEM"], LIVE_IDS["SMEM"], LIVE_IDS["TMEM"])
# "Export all": every part at most 2400 px wide (plotly at 1200 px x2; the graph scaled to fit), stacked
# with a white gap; a stack taller than a canvas may be is scaled down as a whole.
EXPORT_WIDTH = 1200
EXPORT_SCALE = 2
EXPORT_GAP = 24
EXPORT_MAX_HEIGHT = 32000
GRAPH_MAX_HEIGHT = 16000
# cy.png options for the whole graph: 2x where it fits, smaller for a tall graph (a 2000-op graph is
# ~50,000 px tall at 1x). Computed from the graph's extent, since cytoscape returns an empty image when
# `scale` and `maxHeight` are combined and the canvas would be too big.
GRAPH_IMAGE_OPTIONS_JS = f"""(function(container) {{
    const cy = container && container._cyreg && container._cyreg.cy;
    if (!cy) {{ return {{full: true, bg: "#ffffff"}}; }}
    const box = cy.elements().boundingBox();
    const scale = Math.min({EXPORT_SCALE}, {EXPORT_WIDTH * EXPORT_SCALE} / Math.max(box.w, 1),
                           {GRAPH_MAX_HEIGHT} / Math.max(box.h, 1));
    return {{full: true, bg: "#ffffff", scale: scale}};
}})"""


@callback(
    Output("planner-body", "children"),
    Output(URL_STATE, "data", allow_duplicate=True),
    Input("planner-group", "value"),
    State("planner-run", "data"),
    prevent_initial_call=True,
)
def change_group(group: str | None, run_id: str) -> tuple[Any, dict[str, Any]]:
    """A new group: redraw everything below the picker; the old selection belonged to the old group."""
    data = planner_data(run_id)
    choice = view.choose_group(list(data.choices), group)
    state = view_state(choice.group if choice else None)
    return group_body(data, choice, state), state


# A tap reaches the server as a small record: dash-cytoscape's tapNode carries every child of a
# partition box, and tapNodeData alone does not fire again for the same node.
clientside_callback(
    """
    function(tapNode, tapEdge) {
        const fired = (dash_clientside.callback_context.triggered || []).map(t => t.prop_id).join(" ");
        if (fired.includes("tapNode") && tapNode) {
            const d = tapNode.data;
            // Mark a tapped op at once; the server's answer (what is live there) confirms it.
            const container = document.getElementById("GRAPH_ID");
            const cy = container && container._cyreg && container._cyreg.cy;
            if (cy && d.node !== undefined) {
                cy.batch(() => {
                    cy.nodes(".marked").removeClass("marked");
                    cy.nodes(".op").filter(n => n.data("node") === d.node).addClass("marked");
                });
            }
            return {kind: "node", id: d.id, node: d.node === undefined ? null : d.node,
                    op_id: d.op_id === undefined ? null : d.op_id, t: tapNode.timeStamp};
        }
        if (fired.includes("tapEdge") && tapEdge) {
            return {kind: "edge", uid: tapEdge.data.uid, t: tapEdge.timeStamp};
        }
        return dash_clientside.no_update;
    }
    """.replace("GRAPH_ID", GRAPH_ID),
    Output("planner-tap", "data"),
    Input(GRAPH_ID, "tapNode"),
    Input(GRAPH_ID, "tapEdge"),
    prevent_initial_call=True,
)


def _clicked_buffer(memory: str, click: dict | None) -> tuple[str, int] | None:
    points = (click or {}).get("points") or []
    index = points[0].get("customdata") if points else None
    return (memory, int(index)) if isinstance(index, int | float) else None


def _clicked_op(click: dict | None) -> int | None:
    points = (click or {}).get("points") or []
    x = points[0].get("x") if points else None
    return int(x) if isinstance(x, int | float) else None


def _table_buffer(rows: list[dict] | None) -> tuple[str, int] | None:
    return view.parse_buffer_key(rows[0].get("key")) if rows else None


def _toggle(current: tuple[str, int] | None, picked: tuple[str, int] | None) -> tuple[str, int] | None:
    return None if picked == current else picked


def _what_changed(data: Any, group: str, trigger: Any, buffer: tuple[str, int] | None, op: int | str | None,
                  partition: int | None, partition_value: Any, tap: dict | None, clicks: dict[str, Any],
                  live_buttons: list[Any]) -> tuple[tuple[str, int] | None, int | str | None, int | None]:
    """The (buffer, op, partition) after what the user just did; PreventUpdate when it changes nothing."""
    if trigger == "planner-partition":
        return buffer, op, view.parse_partition(partition_value)
    if trigger == "planner-clear":
        return None, None, partition
    if trigger == "planner-tap":
        if not tap:
            raise PreventUpdate
        if tap.get("kind") == "edge":
            return view.buffer_of_channel(data.buffers, data.channels, group, int(tap["uid"])) or buffer, op, partition
        tapped_partition = view.partition_of_node(tap.get("id"))
        if tapped_partition is not None:  # a partition box: filter to it, or back to all on a second tap
            return buffer, op, None if tapped_partition == partition else tapped_partition
        return buffer, tap.get("op_id") if tap.get("op_id") is not None else tap.get("node"), partition
    if trigger in (TIMELINE_IDS["SMEM"], TIMELINE_IDS["TMEM"]):
        memory = "SMEM" if trigger == TIMELINE_IDS["SMEM"] else "TMEM"
        return _toggle(buffer, _clicked_buffer(memory, clicks[trigger])), op, partition
    if trigger in (LIVE_IDS["SMEM"], LIVE_IDS["TMEM"]):
        clicked = _clicked_op(clicks[trigger])
        return buffer, clicked if clicked is not None else op, partition
    if trigger in (TABLE_IDS["SMEM"], TABLE_IDS["TMEM"]):
        memory = "SMEM" if trigger == TABLE_IDS["SMEM"] else "TMEM"
        picked = _table_buffer(clicks[trigger])
        # The grids echo the selection this callback sets (and clears in the other grid).
        if picked == buffer or (picked is None and (buffer is None or buffer[0] != memory)):
            raise PreventUpdate
        return picked, op, partition
    if isinstance(trigger, dict) and trigger.get("type") == LIVE_BUFFER_BUTTON:
        if not any(live_buttons or []):
            raise PreventUpdate  # buttons just drawn, not clicked
        return _toggle(buffer, view.parse_buffer_key(trigger.get("key"))), op, partition
    raise PreventUpdate


def _shapes_patch(changes: dict[str, Any]) -> Patch:
    """Only `layout.shapes` changes: plotly redraws the shapes, not the bars (annotations would redraw axes)."""
    patch = Patch()
    patch["layout"]["shapes"] = changes["shapes"]
    return patch


@callback(
    Output(URL_STATE, "data"),
    Output("planner-partition", "value"),
    Output(GRAPH_ID, "elements"),
    Output("planner-graph-selection", "data"),
    *(Output(chart_id, "figure") for chart_id in CHART_IDS),
    Output(TABLE_IDS["SMEM"], "selectedRows"),
    Output(TABLE_IDS["TMEM"], "selectedRows"),
    Output("planner-selection", "children"),
    Input("planner-partition", "value"),
    Input("planner-tap", "data"),
    Input(TIMELINE_IDS["SMEM"], "clickData"),
    Input(TIMELINE_IDS["TMEM"], "clickData"),
    Input(LIVE_IDS["SMEM"], "clickData"),
    Input(LIVE_IDS["TMEM"], "clickData"),
    Input(TABLE_IDS["SMEM"], "selectedRows"),
    Input(TABLE_IDS["TMEM"], "selectedRows"),
    Input("planner-clear", "n_clicks"),
    Input({"type": LIVE_BUFFER_BUTTON, "key": ALL}, "n_clicks"),
    State(URL_STATE, "data"),
    State("planner-run", "data"),
    prevent_initial_call=True,
)
def update_selection(partition_value: Any, tap: dict | None, smem_click: dict | None, tmem_click: dict | None,
                     smem_live_click: dict | None, tmem_live_click: dict | None, smem_rows: list[dict] | None,
                     tmem_rows: list[dict] | None, _clear: Any, live_buttons: list[Any], state: dict | None,
                     run_id: str) -> tuple[Any, ...]:
    state = dict(state or {})
    group = state.get("group")
    if not group:
        raise PreventUpdate
    data = planner_data(run_id)
    old_buffer = view.parse_buffer_key(state.get("buffer"))
    old_op = view.parse_op(state.get("op"))
    partition = view.parse_partition(state.get("partition"))
    clicks = {TIMELINE_IDS["SMEM"]: smem_click, TIMELINE_IDS["TMEM"]: tmem_click,
              LIVE_IDS["SMEM"]: smem_live_click, LIVE_IDS["TMEM"]: tmem_live_click,
              TABLE_IDS["SMEM"]: smem_rows, TABLE_IDS["TMEM"]: tmem_rows}
    # Every input of a merged call is applied in turn (Dash merges changes made while a call is queued).
    # The partition control comes first whenever it differs from the state, fired or not: the renderer
    # drops the answer to a call that a newer call overtakes, and the newer call may name only a click.
    triggers = [trigger for trigger in ctx.triggered_prop_ids.values() if trigger != "planner-partition"]
    if view.parse_partition(partition_value) != partition:
        triggers.insert(0, "planner-partition")
    buffer, op, new_partition = old_buffer, old_op, partition
    applied: list[Any] = []
    for trigger in triggers:
        try:
            buffer, op, new_partition = _what_changed(data, group, trigger, buffer, op, new_partition,
                                                      partition_value, tap, clicks, live_buttons)
        except PreventUpdate:
            continue
        applied.append(trigger)
    if not applied:
        raise PreventUpdate
    state.update(view_state(group, new_partition, view.buffer_key(*buffer) if buffer else None, op))
    selection = selection_view(data, group, buffer, op)
    if buffer and selection.buffer is None:
        state["buffer"] = ""
    filtered = new_partition != partition
    elements = graph_elements(run_id, group, new_partition) if filtered else no_update
    figures: list[Any] = [no_update] * 4
    graph: Any = no_update
    if not filtered:
        graph = selection.graph
        # Only charts whose marks moved are patched: every figure update re-plots the whole chart.
        before = chart_marks(run_id, group, selection_view(data, group, old_buffer, old_op))
        after = chart_marks(run_id, group, selection)
        figures = [_shapes_patch(after[chart_id]) if chart_id in after and after[chart_id] != before.get(chart_id)
                   else no_update for chart_id in CHART_IDS]
    new_key = state["buffer"] or None
    tables: list[Any] = [no_update, no_update]
    if new_key != (view.buffer_key(*old_buffer) if old_buffer else None):
        for position, memory in enumerate(view.MEMORIES):
            if TABLE_IDS[memory] not in applied:
                # An empty list (not {"ids": []}) is what makes a grid let go of its selection.
                tables[position] = {"ids": [new_key]} if new_key and new_key.startswith(memory) else []
    partition_output = new_partition if "planner-tap" in applied and filtered else no_update
    return (state, partition_output, elements, graph, *figures, *tables, selection_panel(selection))


# The selection reaches the graph as classes on the elements concerned: restyling a few elements
# of a 2000-op graph is one frame; a new stylesheet restyles them all. Re-applied when the elements
# change (a partition filter), since new elements come without them.
clientside_callback(
    """
    function(selection, elements) {
        if (!selection) { return dash_clientside.no_update; }
        const apply = (cy) => {
            const uids = new Set(selection.uids || []);
            const lit = new Set(selection.nodes || []);
            const marked = new Set(selection.marked || []);
            cy.batch(() => {
                cy.elements(".highlight, .faded, .marked").removeClass("highlight faded marked");
                const litEdges = cy.edges().filter(e => uids.has(e.data("uid")));
                const ops = cy.nodes(".op");
                const litNodes = ops.filter(n => lit.has(n.data("node")));
                litEdges.addClass("highlight");
                litNodes.addClass("highlight");
                if (selection.fade && (litEdges.length || litNodes.length)) {
                    ops.union(cy.edges()).difference(litEdges).difference(litNodes).addClass("faded");
                }
                ops.filter(n => marked.has(n.data("node"))).addClass("marked");
            });
        };
        // The graph may still be mounting on the page's first render: try again shortly.
        const attempt = (left) => {
            const container = document.getElementById("GRAPH_ID");
            const cy = container && container._cyreg && container._cyreg.cy;
            if (cy) { apply(cy); } else if (left > 0) { setTimeout(() => attempt(left - 1), 100); }
        };
        attempt(50);
        return {uids: selection.uids || [], nodes: selection.nodes || [], marked: selection.marked || []};
    }
    """.replace("GRAPH_ID", GRAPH_ID),
    Output("planner-graph-applied", "data"),
    Input("planner-graph-selection", "data"),
    Input(GRAPH_ID, "elements"),
)


for _grid, _button in ((TABLE_IDS["SMEM"], "planner-smem-csv"), (TABLE_IDS["TMEM"], "planner-tmem-csv"),
                       ("planner-channel-table", "planner-channel-csv"),
                       ("planner-partition-table", "planner-partition-csv")):
    clientside_callback("function(n) { return n ? true : dash_clientside.no_update; }",
                        Output(_grid, "exportDataAsCsv"), Input(_button, "n_clicks"), prevent_initial_call=True)


# "Graph as PNG": cytoscape renders and downloads in the browser; nothing goes through the server.
for _graph, _button, _suffix in ((GRAPH_ID, "planner-graph-png", "channel-graph"),
                                (DOT_GRAPH_ID, "planner-dot-png", "graph")):
    clientside_callback(
        """
        function(n, stem) {
            if (!n) { return dash_clientside.no_update; }
            return {type: "png", action: "download", filename: (stem || "planner") + "-SUFFIX",
                    options: OPTIONS(document.getElementById("GRAPH"))};
        }
        """.replace("OPTIONS", GRAPH_IMAGE_OPTIONS_JS).replace("GRAPH", _graph).replace("SUFFIX", _suffix),
        Output(_graph, "generateImage"), Input(_button, "n_clicks"), State("planner-file-stem", "data"),
        prevent_initial_call=True,
    )


# "Export all", step 1: ask cytoscape for the graph's image (kept in the browser: `imageData`).
clientside_callback(
    """
    function(n) {
        if (!n) { return [dash_clientside.no_update, dash_clientside.no_update, dash_clientside.no_update,
                          dash_clientside.no_update]; }
        const options = OPTIONS(document.getElementById("GRAPH"));
        return [{type: "png", action: "store", options: options}, null, true, "rendering…"];
    }
    """.replace("OPTIONS", GRAPH_IMAGE_OPTIONS_JS).replace("GRAPH", GRAPH_ID),
    Output(GRAPH_ID, "generateImage", allow_duplicate=True),
    Output(GRAPH_ID, "imageData"),  # cleared first, so an unchanged graph still reports its new image
    Output("planner-export-pending", "data"),
    Output("planner-export-status", "children"),
    Input("planner-export-all", "n_clicks"),
    prevent_initial_call=True,
)

# Step 2: the two timelines through Plotly.toImage, stacked above the graph on a canvas, downloaded.
clientside_callback(
    """
    async function(imageData, pending, stem) {
        const skip = [dash_clientside.no_update, dash_clientside.no_update];
        if (!pending || !imageData) { return skip; }
        const load = (src) => new Promise((resolve, reject) => {
            const image = new Image();
            image.onload = () => resolve(image);
            image.onerror = () => reject(new Error("an exported view did not load"));
            image.src = src;
        });
        try {
            const parts = [];
            for (const id of TIMELINES) {
                const plot = document.querySelector("#" + id + " .js-plotly-plot");
                if (!plot || !window.Plotly) { continue; }
                const url = await window.Plotly.toImage(plot, {format: "png", width: WIDTH,
                    height: plot._fullLayout.height, scale: SCALE});
                parts.push(await load(url));
            }
            parts.push(await load(imageData.startsWith("data:") ? imageData : "data:image/png;base64," + imageData));
            const width = Math.max(...parts.map(p => p.naturalWidth));
            const total = parts.reduce((sum, p) => sum + p.naturalHeight, 0) + GAP * (parts.length - 1);
            const shrink = Math.min(1, MAX_HEIGHT / total);
            const canvas = document.createElement("canvas");
            canvas.width = Math.round(width * shrink);
            canvas.height = Math.round(total * shrink);
            const context = canvas.getContext("2d");
            context.fillStyle = "#ffffff";
            context.fillRect(0, 0, canvas.width, canvas.height);
            let y = 0;
            for (const part of parts) {
                const w = part.naturalWidth * shrink, h = part.naturalHeight * shrink;
                context.drawImage(part, (canvas.width - w) / 2, y, w, h);
                y += h + GAP * shrink;
            }
            const blob = await new Promise(resolve => canvas.toBlob(resolve, "image/png"));
            const link = document.createElement("a");
            link.href = URL.createObjectURL(blob);
            link.download = (stem || "planner") + "-planner.png";
            document.body.appendChild(link);
            link.click();
            link.remove();
            setTimeout(() => URL.revokeObjectURL(link.href), 60000);
            return ["exported " + canvas.width + "×" + canvas.height + " px", false];
        } catch (error) {
            return ["export failed: " + error.message, false];
        }
    }
    """.replace("TIMELINES", json.dumps([TIMELINE_IDS["SMEM"], TIMELINE_IDS["TMEM"]]))
    .replace("WIDTH", str(EXPORT_WIDTH)).replace("SCALE", str(EXPORT_SCALE)).replace("GAP", str(EXPORT_GAP))
    .replace("MAX_HEIGHT", str(EXPORT_MAX_HEIGHT)),
    Output("planner-export-status", "children", allow_duplicate=True),
    Output("planner-export-pending", "data", allow_duplicate=True),
    Input(GRAPH_ID, "imageData"),
    State("planner-export-pending", "data"),
    State("planner-file-stem", "data"),
    prevent_initial_call=True,
)
