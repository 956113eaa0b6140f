// Graphviz drawings on /planner (iframe.dot-view showing /runs/<id>/graph.svg, same origin):
// wheel zoom about the pointer, drag to pan, zoom buttons, and a click on a node, cluster or
// edge reported to Dash (`planner-dot-picked`). The SVG document itself runs no script (its
// response forbids it); everything here acts on it from the page.
(function () {
    "use strict";
    // Below this zoom (1 = the size Graphviz drew) 14 pt text is under ~11 px: the first view
    // shows the top of a big graph at this zoom rather than the whole graph unreadably small.
    const READABLE = 0.6;
    const PX_PER_PT = 4 / 3;
    const views = new WeakMap();

    function setViewBox(view) {
        const s = view.zoom * PX_PER_PT;  // CSS px per SVG unit
        const w = view.frame.clientWidth / s, h = view.frame.clientHeight / s;
        view.svg.setAttribute("viewBox", [view.x, view.y, w, h].map(v => v.toFixed(2)).join(" "));
        view.frame.dataset.zoom = view.zoom.toFixed(4);
    }

    function show(view, mode) {
        const fw = view.frame.clientWidth, fh = view.frame.clientHeight;
        const [x0, y0, w0, h0] = view.box;
        const whole = Math.min(fw / (w0 * PX_PER_PT), fh / (h0 * PX_PER_PT));
        if (mode === "actual") {
            view.zoom = 1;
        } else if (mode === "fit") {
            view.zoom = whole;
        } else {  // first view: the whole graph when readable, else readable from the top
            view.zoom = Math.min(whole, 1.5) >= READABLE ? Math.min(whole, 1.5)
                : Math.max(READABLE, Math.min(1, fw / (w0 * PX_PER_PT)));
        }
        const s = view.zoom * PX_PER_PT;
        const w = fw / s, h = fh / s;
        view.x = x0 + (w0 - w) / 2;
        view.y = (mode === "initial" && view.zoom > whole) ? y0 : y0 + (h0 - h) / 2;
        if (w < w0 && mode === "initial") { view.x = x0; }
        setViewBox(view);
    }

    function zoomAt(view, factor, px, py) {
        const before = view.zoom * PX_PER_PT;
        view.zoom = Math.min(8, Math.max(0.02, view.zoom * factor));
        const after = view.zoom * PX_PER_PT;
        view.x += px / before - px / after;
        view.y += py / before - py / after;
        setViewBox(view);
    }

    function pick(view, target) {
        const element = target.closest && target.closest("g.node, g.cluster, g.edge");
        if (!element) { return; }
        const title = element.querySelector("title");
        if (!title) { return; }
        view.doc.querySelectorAll(".dot-picked").forEach(e => e.classList.remove("dot-picked"));
        element.classList.add("dot-picked");
        const kind = element.classList.contains("edge") ? "edge"
            : element.classList.contains("cluster") ? "cluster" : "node";
        view.frame.dataset.picked = title.textContent;
        if (window.dash_clientside && window.dash_clientside.set_props) {
            window.dash_clientside.set_props("planner-dot-picked",
                {data: {kind: kind, name: title.textContent, t: Date.now()}});
        }
    }

    function attach(frame) {
        const doc = frame.contentDocument;
        const svg = doc && doc.documentElement;
        if (!svg || svg.tagName.toLowerCase() !== "svg" || (views.get(frame) || {}).doc === doc) { return; }
        const box = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
        if (box.length !== 4 || box.some(isNaN)) { return; }
        svg.setAttribute("width", "100%");
        svg.setAttribute("height", "100%");
        svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
        const style = doc.createElementNS("http://www.w3.org/2000/svg", "style");
        style.textContent = ".dot-picked polygon, .dot-picked ellipse, .dot-picked path "
            + "{ stroke: #d62728; stroke-width: 3px; } svg { cursor: grab; user-select: none; } "
            + "g.node, g.edge, g.cluster { cursor: pointer; } "
            // A box drawn without fill is clickable inside too, not only on its border and text.
            + "g.node polygon, g.node ellipse, g.node path, g.cluster > polygon, g.cluster > path "
            + "{ pointer-events: visible; }";
        svg.appendChild(style);
        const view = {frame: frame, doc: doc, svg: svg, box: box, zoom: 1, x: box[0], y: box[1]};
        views.set(frame, view);
        show(view, "initial");
        doc.addEventListener("wheel", event => {
            event.preventDefault();
            zoomAt(view, Math.exp(-event.deltaY * 0.0015), event.clientX, event.clientY);
        }, {passive: false});
        let drag = null;
        doc.addEventListener("mousedown", event => {
            drag = {x: event.clientX, y: event.clientY, moved: false};
        });
        doc.addEventListener("mousemove", event => {
            if (!drag || !(event.buttons & 1)) { return; }
            const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
            if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; }
            const s = view.zoom * PX_PER_PT;
            view.x -= dx / s;
            view.y -= dy / s;
            drag.x = event.clientX;
            drag.y = event.clientY;
            setViewBox(view);
        });
        doc.addEventListener("click", event => {
            const moved = drag && drag.moved;
            drag = null;
            if (!moved) { pick(view, event.target); }
        });
        frame.dataset.ready = "1";
    }

    // An iframe's load event does not bubble, but a capturing listener on the document sees it.
    document.addEventListener("load", event => {
        if (event.target && event.target.matches && event.target.matches("iframe.dot-view")) {
            attach(event.target);
        }
    }, true);
    // A frame that finished loading before this ran (or a cached one) is attached when seen.
    new MutationObserver(() => {
        document.querySelectorAll("iframe.dot-view").forEach(frame => {
            const doc = frame.contentDocument;
            if (doc && doc.readyState === "complete") { attach(frame); }
        });
    }).observe(document.documentElement, {childList: true, subtree: true});

    document.addEventListener("click", event => {
        const button = event.target.closest && event.target.closest("[data-dot-zoom]");
        if (!button) { return; }
        const frame = document.getElementById(button.dataset.target);
        const view = frame && views.get(frame);
        if (!view) { return; }
        const action = button.dataset.dotZoom;
        if (action === "in" || action === "out") {
            zoomAt(view, action === "in" ? 1.25 : 0.8, frame.clientWidth / 2, frame.clientHeight / 2);
        } else {
            show(view, action);
        }
    });
})();
