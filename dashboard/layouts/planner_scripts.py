"""The browser side of `/planner` (clientside callbacks' JavaScript; `pages.planner` registers them).

The graph's selection is applied in the browser as classes on the few elements
concerned (restyling a few elements of a 2000-op graph is one frame; a new
stylesheet restyles them all), taps reach the server as small records, and the
PNG exports (graph alone, or timelines and graph stacked) are drawn by
cytoscape and Plotly.toImage in the browser: nothing goes through the server.
"""

from __future__ import annotations

import json

from dashboard.layouts.planner import GRAPH_ID, TIMELINE_IDS

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
    if (window.plannerHoldDetail) {{ window.plannerHoldDetail(container, 4000); }}  // full op labels in the image
    const box = cy.elements().boundingBox();
    const scale = Math.min({EXPORT_SCALE}, {EXPORT_WIDTH * EXPORT_SCALE} / Math.max(box.w, 1),
                           {GRAPH_MAX_HEIGHT} / Math.max(box.h, 1));
    return {{full: true, bg: "#ffffff", scale: scale}};
}})"""

# A tap reaches the server as a small record: dash-cytoscape's tapNode carries every child of a
# partition box, and tapNodeData alone does not fire again for the same node.
TAP_JS = """
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
    """.replace("GRAPH_ID", GRAPH_ID)

# The selection reaches the graph as classes on the elements concerned. Re-applied when the elements
# change (a partition filter), since new elements come without them.
APPLY_SELECTION_JS = """
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
    """.replace("GRAPH_ID", GRAPH_ID)


def graph_png_js(graph_id: str, suffix: str) -> str:
    """"Graph as PNG": cytoscape renders and downloads in the browser."""
    return """
        function(n, stem) {
            if (!n) { return dash_clientside.no_update; }
            return {type: "png", action: "download", filename: (stem || "planner") + "-SUFFIX",
                    options: OPTIONS(document.getElementById("GRAPH"))};
        }
        """.replace("OPTIONS", GRAPH_IMAGE_OPTIONS_JS).replace("GRAPH", graph_id).replace("SUFFIX", suffix)


# "Export all", step 1: ask cytoscape for the graph's image (kept in the browser: `imageData`).
EXPORT_START_JS = """
    function(n) {
        if (!n) { return [dash_clientside.no_update, dash_clientside.no_update, dash_clientside.no_update,
                          dash_clientside.no_update]; }
        const options = OPTIONS(document.getElementById("GRAPH"));
        return [{type: "png", action: "store", options: options}, null, true, "rendering…"];
    }
    """.replace("OPTIONS", GRAPH_IMAGE_OPTIONS_JS).replace("GRAPH", GRAPH_ID)

# Step 2: the two timelines through Plotly.toImage, stacked above the graph on a canvas, downloaded.
EXPORT_STACK_JS = (
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
    .replace("MAX_HEIGHT", str(EXPORT_MAX_HEIGHT))
)
