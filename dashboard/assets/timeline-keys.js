// /timeline: Perfetto's keys and wheel on the timeline chart (dashboard/pages/timeline.py).
//
// W / S zoom in / out around the pointer (the centre when it is off the chart), A / D pan,
// Ctrl + wheel zooms, Shift + wheel pans, F fits the selected event, 0 shows the whole run.
//
// Three speeds, none of them waiting for the server:
// 1. every move shows at once: the chart's drawn layers are moved and stretched along x (an SVG
//    transform, as plotly itself does while a drag-zoom is under way): a few ms, whatever it holds;
// 2. when the keys pause for REDRAW_MS, plotly redraws the data already in the browser at the new
//    x range (Plotly.relayout: ticks, bars, hover; no server call);
// 3. when they have been still for SETTLE_MS, the window reached is sent to the server (the
//    `timeline-relayout` store), which answers with the detail that window deserves.
// The chart's own relayout events for step 2 are recognised (ownRelayout) and not sent on.
(function () {
    "use strict";
    const SETTLE_MS = 350; // stillness after which the window reached is fetched (dashboardTimeline.settleMs)
    const REDRAW_MS = 120; // pause after which plotly redraws the moved chart (dashboardTimeline.redrawMs)
    const ZOOM_STEP = 0.8; // W: the window shrinks to 80 % per press; S: the inverse
    const PAN_STEP = 0.2; // A / D: a fifth of the window per press
    const WHEEL_ZOOM = 1.0015; // per wheel delta unit: one notch (~100) zooms by ~14 %
    const FIT_MARGIN = 0.15; // F: the event fills ~70 % of the window
    const own = []; // x ranges this module relayouted to, until the chart reports them
    let settleTimer = null;
    let redrawTimer = null;
    let pointer = null; // the pointer's place over the plot area, as a fraction of its width
    let sentMoves = -1; // moves counted when the settled window was sent
    let wanted = null; // the x range of the latest move
    let moved = false; // a move is shown (step 1) that plotly has not redrawn yet (step 2)
    let redrawing = false; // a plotly redraw is under way: the next waits for it
    let lastFigure = null; // the meta of the figure last received (its window, the selected event...)
    // Read by tests and benchmarks: moves made, windows sent, ms per move shown (step 1, keydown to the
    // frame showing it painted), ms per plotly redraw (step 2).
    const stats = {moves: 0, settled: 0, steps: [], redraws: []};

    function graph() {
        return document.querySelector("#timeline-graph .js-plotly-plot");
    }

    function typing(target) {
        return !!target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    }

    function meta(gd) {
        return (gd.layout && gd.layout.meta) || {};
    }

    function plotArea(gd) {
        const drag = gd.querySelector(".nsewdrag[data-subplot='xy']");
        return drag ? drag.getBoundingClientRect() : null;
    }

    function shown(gd) {
        return moved && wanted ? wanted : gd._fullLayout.xaxis.range.slice();
    }

    function clamp(gd, start, end) {
        const info = meta(gd);
        const run = info.run_range;
        let width = Math.max(end - start, info.min_span || 0);
        if (run) {
            const full = run[1] - run[0];
            if (width >= full) { return [run[0], run[1]]; }
            start = Math.min(Math.max(start, run[0]), run[1] - width);
        }
        return [start, start + width];
    }

    // The layers plotly drew (one per panel: they share the x axis) and the rectangles clipping them.
    function layers(gd) {
        return Array.prototype.slice.call(gd.querySelectorAll(".cartesianlayer .subplot > .plot"));
    }

    function clipRect(layer) {
        const match = /url\(['"]?#([^'")]+)['"]?\)/.exec(layer.getAttribute("clip-path") || "");
        const clip = match ? document.getElementById(match[1]) : null;
        return clip ? clip.querySelector("rect") : null;
    }

    // Step 1: px' = scale * px + shift maps where plotly drew the old range to where the new one lies;
    // the clip rectangle, in the layer's own (now transformed) space, gets the inverse so it stays put.
    function preview(gd, range) {
        const axis = gd._fullLayout.xaxis;
        const drawn = axis.range;
        const scale = (drawn[1] - drawn[0]) / (range[1] - range[0]);
        const shift = (drawn[0] - range[0]) / (range[1] - range[0]) * axis._length;
        layers(gd).forEach(function (layer) {
            if (layer.dataset.keysTransform === undefined) {
                layer.dataset.keysTransform = layer.getAttribute("transform") || "";
            }
            layer.setAttribute("transform", layer.dataset.keysTransform + " translate(" + shift + ",0) scale(" + scale + ",1)");
            const rect = clipRect(layer);
            if (rect) {
                if (rect.dataset.keysX === undefined) {
                    rect.dataset.keysX = rect.getAttribute("x") || "0";
                    rect.dataset.keysWidth = rect.getAttribute("width") || String(axis._length);
                }
                rect.setAttribute("x", String((Number(rect.dataset.keysX) - shift) / scale));
                rect.setAttribute("width", String(Number(rect.dataset.keysWidth) / scale));
            }
        });
    }

    function unpreview(gd) {
        layers(gd).forEach(function (layer) {
            if (layer.dataset.keysTransform !== undefined) {
                layer.setAttribute("transform", layer.dataset.keysTransform);
                delete layer.dataset.keysTransform;
            }
            const rect = clipRect(layer);
            if (rect && rect.dataset.keysX !== undefined) {
                rect.setAttribute("x", rect.dataset.keysX);
                rect.setAttribute("width", rect.dataset.keysWidth);
                delete rect.dataset.keysX;
                delete rect.dataset.keysWidth;
            }
        });
    }

    // Step 2, one redraw at a time (a move made during one is redrawn after it).
    function redraw() {
        const gd = graph();
        if (!gd || !moved || !wanted || redrawing) { return; }
        const range = wanted;
        unpreview(gd);
        moved = false;
        redrawing = true;
        own.push(range);
        if (own.length > 64) { own.shift(); }
        const began = performance.now();
        const done = function () {
            redrawing = false;
            stats.redraws.push(performance.now() - began);
            if (moved) { redraw(); }
        };
        window.Plotly.relayout(gd, {"xaxis.range": range}).then(done, done);
    }

    function setRange(gd, start, end, began) {
        const range = clamp(gd, start, end);
        wanted = range;
        moved = true;
        stats.moves += 1;
        preview(gd, range);
        // Timed to the task after the next frame: the moved layers have been painted by then.
        window.requestAnimationFrame(function () {
            window.setTimeout(function () { stats.steps.push(performance.now() - began); }, 0);
        });
        window.clearTimeout(redrawTimer);
        redrawTimer = window.setTimeout(redraw, window.dashboardTimeline.redrawMs);
        window.clearTimeout(settleTimer);
        settleTimer = window.setTimeout(settle, window.dashboardTimeline.settleMs);
    }

    // Step 3.
    function settle() {
        // The range asked (clamped to the run), not plotly's copy of it: the whole run stays exactly that.
        const range = wanted;
        if (!range || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
        sentMoves = stats.moves;
        stats.settled += 1;
        window.dash_clientside.set_props("timeline-relayout", {
            data: {"xaxis.range[0]": range[0], "xaxis.range[1]": range[1], "source": "keys", "t": Date.now()},
        });
    }

    function zoom(gd, factor, at, began) {
        const range = shown(gd);
        const start = range[0], end = range[1];
        const centre = at === null ? (start + end) / 2 : start + (end - start) * at;
        setRange(gd, centre - (centre - start) * factor, centre + (end - centre) * factor, began);
    }

    function pan(gd, share, began) {
        const range = shown(gd);
        const shift = (range[1] - range[0]) * share;
        setRange(gd, range[0] + shift, range[1] + shift, began);
    }

    function fit(gd, began) {
        const focus = meta(gd).focus;
        if (!focus) { return; }
        const width = Math.max(focus[1] - focus[0], meta(gd).min_span || 0);
        setRange(gd, focus[0] - width * FIT_MARGIN, focus[1] + width * FIT_MARGIN, began);
    }

    function pointerAt(gd, clientX, clientY) {
        const area = plotArea(gd);
        const box = gd.getBoundingClientRect();
        if (!area || clientX < area.left || clientX > area.right || clientY < box.top || clientY > box.bottom) {
            return null;
        }
        return (clientX - area.left) / area.width;
    }

    document.addEventListener("keydown", function (event) {
        if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
        const gd = graph();
        if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis) { return; }
        const began = performance.now();
        const key = (event.key || "").toLowerCase();
        if (key === "w") { zoom(gd, ZOOM_STEP, pointer, began); }
        else if (key === "s") { zoom(gd, 1 / ZOOM_STEP, pointer, began); }
        else if (key === "a") { pan(gd, -PAN_STEP, began); }
        else if (key === "d") { pan(gd, PAN_STEP, began); }
        else if (key === "f") { fit(gd, began); }
        else if (key === "0") {
            const run = meta(gd).run_range;
            if (run) { setRange(gd, run[0], run[1], began); }
        } else { return; }
        event.preventDefault();
    });

    document.addEventListener("mousemove", function (event) {
        const gd = graph();
        pointer = gd ? pointerAt(gd, event.clientX, event.clientY) : null;
    }, {passive: true});

    // Not passive: Ctrl + wheel would zoom the page and Shift + wheel scroll it.
    document.addEventListener("wheel", function (event) {
        const gd = graph();
        if (!gd || !(event.ctrlKey || event.shiftKey) || !gd.contains(event.target) || !gd._fullLayout) { return; }
        event.preventDefault();
        const began = performance.now();
        if (event.ctrlKey) {
            zoom(gd, Math.pow(WHEEL_ZOOM, event.deltaY), pointerAt(gd, event.clientX, event.clientY), began);
        } else {
            // Browsers turn Shift + a vertical wheel into a horizontal one.
            pan(gd, (event.deltaX || event.deltaY) / 1000, began);
        }
    }, {passive: false});

    function rangeOf(relayout) {
        if (Array.isArray(relayout["xaxis.range"])) { return relayout["xaxis.range"]; }
        if ("xaxis.range[0]" in relayout && "xaxis.range[1]" in relayout) {
            return [relayout["xaxis.range[0]"], relayout["xaxis.range[1]"]];
        }
        return null;
    }

    window.dashboardTimeline = {
        stats: stats,
        settleMs: SETTLE_MS,
        redrawMs: REDRAW_MS,
        // The x range on screen: the latest move's while it is shown by transform, else plotly's.
        range: function () {
            const gd = graph();
            return gd ? shown(gd) : null;
        },
        // Whether a relayout the chart reports is one of this module's redraws (then it stays in the browser).
        ownRelayout: function (relayout) {
            const range = rangeOf(relayout);
            if (!range) { return false; }
            const width = Math.abs(range[1] - range[0]) || 1;
            for (let i = own.length - 1; i >= 0; i--) {
                if (Math.abs(own[i][0] - range[0]) <= width * 1e-9 && Math.abs(own[i][1] - range[1]) <= width * 1e-9) {
                    own.splice(0, i + 1);
                    return true;
                }
            }
            return false;
        },
        // A new figure came: if the user moved on after the settled window was sent, go back to where
        // they are now (the figure's range is the older window) and let that settle in turn. The chart
        // also reports its own figure back after a redraw: the same window, not a new figure.
        arrived: function (figure) {
            const key = JSON.stringify(((figure || {}).layout || {}).meta || null);
            if (key === lastFigure) { return; }
            lastFigure = key;
            const gd = graph();
            if (gd && moved) { unpreview(gd); }
            moved = false; // the new figure replaces what a move had transformed
            if (!gd || sentMoves < 0 || stats.moves === sentMoves) { return; }
            const range = wanted;
            if (range) {
                window.requestAnimationFrame(function () { setRange(gd, range[0], range[1], performance.now()); });
            }
        },
    };
})();
