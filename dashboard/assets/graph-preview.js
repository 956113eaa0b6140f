// window.dashboard_components.GraphPreview (see dashboard/layouts/graph_preview.py and
// dashboard/figures/planner_preview.py): paints a preset-positioned graph's drawing list on a canvas at
// once, fitted the way Cytoscape fits it, and steps aside once the Cytoscape graph named by `graph_id`
// has drawn over it. A plain React function component: no build step.
(function () {
    const React = window.React;
    const FONT = '"Helvetica Neue", Helvetica, sans-serif';  // Cytoscape's default font-family

    // Cytoscape's triangle arrow: its size grows with the line's width (cytoscape.js arrow-shapes).
    function arrowSize(edge) {
        return Math.max(Math.pow(edge.width * 13.37, 0.9), 29) * edge.arrow_scale;
    }

    function wrapLines(context, label) {
        const lines = [];
        String(label.text).split("\n").forEach(function (paragraph) {
            if (!label.wrap) { lines.push(paragraph); return; }
            let line = "";
            paragraph.split(/\s+/).forEach(function (word) {
                const candidate = line ? line + " " + word : word;
                if (line && context.measureText(candidate).width > label.max_width) {
                    lines.push(line);
                    line = word;
                } else {
                    line = candidate;
                }
            });
            lines.push(line);
        });
        return lines;
    }

    function labelLines(context, label, size) {
        context.font = label.weight + " " + size + "px " + FONT;
        return wrapLines(context, label);
    }

    // The graph's extent as Cytoscape's fit measures it: bodies, borders and labels.
    function extent(context, spec) {
        const box = {x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity};
        const add = function (x1, y1, x2, y2) {
            box.x1 = Math.min(box.x1, x1); box.y1 = Math.min(box.y1, y1);
            box.x2 = Math.max(box.x2, x2); box.y2 = Math.max(box.y2, y2);
        };
        spec.parents.concat(spec.nodes).forEach(function (item) {
            const half = item.border_width / 2 + 1;  // as figures/planner_preview.bounds_margin
            add(item.x - item.w / 2 - half, item.y - item.h / 2 - half, item.x + item.w / 2 + half,
                item.y + item.h / 2 + half);
            if (item.label && item.label.valign === "top") {
                const lines = labelLines(context, item.label, item.label.size);
                add(item.x, item.y - item.h / 2 - half - lines.length * item.label.size - 1, item.x, item.y);
            }
        });
        return box;
    }

    function roundRect(context, x, y, w, h) {
        const r = Math.min(w / 4, h / 4, 8);
        context.beginPath();
        context.moveTo(x + r, y);
        context.arcTo(x + w, y, x + w, y + h, r);
        context.arcTo(x + w, y + h, x, y + h, r);
        context.arcTo(x, y + h, x, y, r);
        context.arcTo(x, y, x + w, y, r);
        context.closePath();
    }

    // Where the line from (fx, fy) to the node's centre meets its box.
    function boundary(node, fx, fy) {
        const dx = fx - node.x, dy = fy - node.y;
        const hw = node.w / 2 + node.border_width / 2, hh = node.h / 2 + node.border_width / 2;
        if (dx === 0 && dy === 0) { return [node.x, node.y]; }
        const scale = Math.min(dx === 0 ? Infinity : hw / Math.abs(dx), dy === 0 ? Infinity : hh / Math.abs(dy));
        return [node.x + dx * scale, node.y + dy * scale];
    }

    // Lines centred on (x, y); the callers leave out a label Cytoscape would not draw at this zoom.
    function drawText(context, label, lines, size, x, y) {
        context.font = label.weight + " " + size + "px " + FONT;
        context.textAlign = "center";
        context.textBaseline = "middle";
        lines.forEach(function (line, i) {
            context.fillText(line, x, y + (i - (lines.length - 1) / 2) * size);
        });
    }

    function drawBox(context, item, zoom, label, size) {
        const x = item.x - item.w / 2, y = item.y - item.h / 2;
        context.globalAlpha = item.opacity;
        if (item.shape === "round-rectangle" || item.shape === "roundrectangle") {
            roundRect(context, x, y, item.w, item.h);
        } else {
            context.beginPath();
            context.rect(x, y, item.w, item.h);
        }
        context.fillStyle = item.fill;
        context.globalAlpha = item.opacity * item.fill_opacity;
        context.fill();
        context.globalAlpha = item.opacity;
        if (item.border_width > 0) {
            context.setLineDash(item.dashed ? [6, 4] : []);
            context.lineWidth = item.border_width;
            context.strokeStyle = item.border;
            context.stroke();
            context.setLineDash([]);
        }
        if (label && size * zoom >= label.min_px) {  // Cytoscape leaves out a label drawn smaller
            context.fillStyle = "#000000";
            const lines = labelLines(context, label, size);
            const top = label.valign === "top";
            const y0 = top ? y - item.border_width / 2 - lines.length * size / 2 : item.y;
            drawText(context, label, lines, size, item.x, y0);
        }
        context.globalAlpha = 1;
    }

    function drawEdge(context, spec, edge, bend, zoom) {
        const s = spec.nodes[edge.s], t = spec.nodes[edge.t];
        // A bundle of edges between one pair of nodes is spread like Cytoscape's bezier edges.
        const mx = (s.x + t.x) / 2, my = (s.y + t.y) / 2;
        const length = Math.hypot(t.x - s.x, t.y - s.y) || 1;
        const cx = mx - (t.y - s.y) / length * bend, cy = my + (t.x - s.x) / length * bend;
        const from = boundary(s, bend ? cx : t.x, bend ? cy : t.y);
        const to = boundary(t, bend ? cx : s.x, bend ? cy : s.y);
        context.globalAlpha = edge.opacity;
        context.strokeStyle = edge.colour;
        context.lineWidth = edge.width;
        const size = edge.arrow ? arrowSize(edge) : 0;
        const ax = bend ? to[0] - cx : to[0] - from[0], ay = bend ? to[1] - cy : to[1] - from[1];
        const norm = Math.hypot(ax, ay) || 1, ux = ax / norm, uy = ay / norm;
        const end = [to[0] - ux * size * 0.3, to[1] - uy * size * 0.3];
        context.beginPath();
        context.moveTo(from[0], from[1]);
        if (bend) { context.quadraticCurveTo(cx, cy, end[0], end[1]); } else { context.lineTo(end[0], end[1]); }
        context.stroke();
        if (edge.arrow) {
            context.fillStyle = edge.arrow_colour;
            context.beginPath();
            context.moveTo(to[0], to[1]);
            context.lineTo(end[0] - uy * size * 0.15, end[1] + ux * size * 0.15);
            context.lineTo(end[0] + uy * size * 0.15, end[1] - ux * size * 0.15);
            context.closePath();
            context.fill();
        }
        const label = edge.label;
        if (label && label.size * zoom >= label.min_px) {
            const lx = bend ? (from[0] + 2 * cx + to[0]) / 4 : (from[0] + to[0]) / 2;
            const ly = bend ? (from[1] + 2 * cy + to[1]) / 4 : (from[1] + to[1]) / 2;
            let angle = Math.atan2(t.y - s.y, t.x - s.x);
            if (angle > Math.PI / 2 || angle < -Math.PI / 2) { angle += Math.PI; }
            context.save();
            context.translate(lx, ly);
            context.rotate(angle);
            context.font = label.weight + " " + label.size + "px " + FONT;
            const width = context.measureText(label.text).width;
            context.globalAlpha = edge.opacity * edge.label_background_opacity;
            context.fillStyle = edge.label_background;
            context.fillRect(-width / 2, -label.size / 2, width, label.size);
            context.globalAlpha = edge.opacity;
            context.fillStyle = "#000000";
            drawText(context, label, [label.text], label.size, 0, 0);
            context.restore();
        }
        context.globalAlpha = 1;
    }

    function bends(spec) {
        const bundles = {};
        spec.edges.forEach(function (edge, i) {
            const key = Math.min(edge.s, edge.t) + "-" + Math.max(edge.s, edge.t);
            (bundles[key] = bundles[key] || []).push(i);
        });
        const bend = new Array(spec.edges.length).fill(0);
        Object.keys(bundles).forEach(function (key) {
            const members = bundles[key];
            members.forEach(function (i, k) {
                const flip = spec.edges[i].s > spec.edges[i].t ? -1 : 1;  // one side for the bundle
                bend[i] = (k - (members.length - 1) / 2) * 40 * flip;
            });
        });
        return bend;
    }

    // figures/planner_preview.packed's rows back into drawable items (styles shared by reference).
    function unpack(packed) {
        const label = function (text, style) {
            return style == null ? null : Object.assign({text: text}, packed.labels[style]);
        };
        const box = function (row) {
            return Object.assign({x: row[0], y: row[1], w: row[2], h: row[3], label: label(row[5], row[6])},
                                 packed.boxes[row[4]]);
        };
        return {
            parents: packed.parents.map(box),
            nodes: packed.nodes.map(function (row) {
                const node = box(row);
                if (row.length > 7) { node.detail = label(row[7], row[8]); }
                return node;
            }),
            edges: packed.edges.map(function (row) {
                return Object.assign({s: row[0], t: row[1], label: label(row[3], row[4])}, packed.edge_styles[row[2]]);
            }),
        };
    }

    // The fit, the level of detail and every element, painted in Cytoscape's order.
    function paint(canvas, props, spec) {
        const fit = props.fit || {};
        const width = canvas.parentNode.clientWidth, height = canvas.parentNode.clientHeight;
        if (!width || !height || !spec || !spec.nodes.length) { return null; }
        const ratio = window.devicePixelRatio || 1;
        canvas.width = Math.round(width * ratio);
        canvas.height = Math.round(height * ratio);
        const context = canvas.getContext("2d");
        const box = extent(context, spec);
        const padding = fit.padding == null ? 30 : fit.padding;
        let zoom = Math.min((width - 2 * padding) / (box.x2 - box.x1), (height - 2 * padding) / (box.y2 - box.y1));
        zoom = Math.min(Math.max(zoom, fit.min_zoom || 1e-50), fit.max_zoom || 1e50);
        const pan = {x: (width - zoom * (box.x1 + box.x2)) / 2, y: (height - zoom * (box.y1 + box.y2)) / 2};
        context.setTransform(ratio * zoom, 0, 0, ratio * zoom, ratio * pan.x, ratio * pan.y);
        const lod = window.plannerLevelOfDetail ? window.plannerLevelOfDetail(zoom) : null;
        spec.parents.forEach(function (item) { drawBox(context, item, zoom, item.label, item.label && item.label.size); });
        const bend = bends(spec);
        spec.edges.forEach(function (edge, i) { drawEdge(context, spec, edge, bend[i], zoom); });
        spec.nodes.forEach(function (node) {
            let label = node.label, size = label && label.size;
            if (node.detail && lod) {
                label = lod.detail ? node.detail : node.label;
                size = lod.detail ? node.detail.size : lod.size;
            }
            drawBox(context, node, zoom, label, size);
        });
        return {zoom: zoom, pan: pan};
    }

    function cytoscapeOf(id) {
        const container = id && document.getElementById(id);
        return container && container._cyreg && container._cyreg.cy;
    }

    function GraphPreview(props) {
        const canvas = React.useRef(null);
        const [covered, setCovered] = React.useState(false);
        const [viewport, setViewport] = React.useState(null);
        // Painted before the browser paints the page: the preview is there in the same frame as the layout.
        const spec = React.useMemo(function () { return props.spec ? unpack(props.spec) : null; }, [props.spec]);
        React.useLayoutEffect(function () {
            if (covered || !canvas.current) { return undefined; }
            const frame = canvas.current.parentNode;
            let size = frame.clientWidth + "x" + frame.clientHeight;
            setViewport(paint(canvas.current, props, spec));
            const observer = new ResizeObserver(function () {  // a new width: fitted again, as Cytoscape does
                const now = frame.clientWidth + "x" + frame.clientHeight;
                if (now !== size) { size = now; setViewport(paint(canvas.current, props, spec)); }
            });
            observer.observe(frame);
            return function () { observer.disconnect(); };
        }, [spec, covered]);
        // Cytoscape draws in the animation frame after it starts: the preview leaves one frame later.
        React.useEffect(function () {
            if (covered) { return undefined; }
            let frame = 0;
            const check = function () {
                if (cytoscapeOf(props.graph_id)) {
                    if (window.plannerAttachLevelOfDetail) {
                        window.plannerAttachLevelOfDetail(document.getElementById(props.graph_id));
                    }
                    frame = window.requestAnimationFrame(function () {
                        frame = window.requestAnimationFrame(function () { setCovered(true); });
                    });
                } else {
                    frame = window.requestAnimationFrame(check);
                }
            };
            frame = window.requestAnimationFrame(check);
            return function () { window.cancelAnimationFrame(frame); };
        }, [covered]);
        const style = Object.assign({}, props.style || {}, {position: "absolute", top: 0, left: 0,
                                                           pointerEvents: "none", overflow: "hidden"});
        if (covered) { style.display = "none"; }
        return React.createElement("div", {
            id: props.id,
            className: "graph-preview",
            style: style,
            "data-drawn": viewport ? "true" : "false",
            "data-covered": covered ? "true" : "false",
            "data-zoom": viewport ? String(viewport.zoom) : undefined,
            "data-pan": viewport ? viewport.pan.x + "," + viewport.pan.y : undefined,
        }, React.createElement("canvas", {ref: canvas, style: {width: "100%", height: "100%", display: "block"}}));
    }

    window.dashboard_components = Object.assign(window.dashboard_components || {}, {GraphPreview: GraphPreview});
})();
