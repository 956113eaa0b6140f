// /timeline: Perfetto's keys and wheel on the timeline chart (dashboard/pages/timeline.py).
//
// W / S zoom in / out around the pointer (the centre when it is off the chart), A / D pan,
// Ctrl + wheel zooms, Shift + wheel pans, F fits the selected event, 0 shows the whole run.
// Each move redraws the data already in the browser (Plotly.relayout of the x range: no server
// call); once the keys and the wheel have been still for SETTLE_MS, the window reached is sent to
// the server (the `timeline-relayout` store), which answers with the detail that window deserves.
// The chart's own relayout events for these moves are recognised (ownRelayout) and not sent on.
(function () {
    "use strict";
    const SETTLE_MS = 350; // stillness after which the window reached is fetched (dashboardTimeline.settleMs)
    const ZOOM_STEP = 0.8; // W: the window shrinks to 80 % per press; S: the inverse
    const PAN_STEP = 0.2; // A / D: a fifth of the window per press
    const WHEEL_ZOOM = 1.0015; // per wheel delta unit: one notch (~100) zooms by ~14 %
    const FIT_MARGIN = 0.15; // F: the event fills ~70 % of the window
    const own = []; // x ranges this module set, until the chart reports them
    let settleTimer = null;
    let pointer = null; // the pointer's place over the plot area, as a fraction of its width
    let sentMoves = -1; // moves counted when the settled window was sent
    let wanted = null; // the x range of the latest move
    const stats = {moves: 0, settled: 0, redraws: []}; // read by tests and benchmarks

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

    function setRange(gd, start, end) {
        const range = clamp(gd, start, end);
        wanted = range;
        own.push(range);
        if (own.length > 64) { own.shift(); }
        stats.moves += 1;
        const began = performance.now();
        window.Plotly.relayout(gd, {"xaxis.range": range}).then(function () {
            stats.redraws.push(performance.now() - began);
        });
        window.clearTimeout(settleTimer);
        settleTimer = window.setTimeout(settle, window.dashboardTimeline.settleMs);
    }

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

    function zoom(gd, factor, at) {
        const range = gd._fullLayout.xaxis.range;
        const start = range[0], end = range[1];
        const centre = at === null ? (start + end) / 2 : start + (end - start) * at;
        setRange(gd, centre - (centre - start) * factor, centre + (end - centre) * factor);
    }

    function pan(gd, share) {
        const range = gd._fullLayout.xaxis.range;
        const shift = (range[1] - range[0]) * share;
        setRange(gd, range[0] + shift, range[1] + shift);
    }

    function fit(gd) {
        const focus = meta(gd).focus;
        if (!focus) { return; }
        const width = Math.max(focus[1] - focus[0], meta(gd).min_span || 0);
        setRange(gd, focus[0] - width * FIT_MARGIN, focus[1] + width * FIT_MARGIN);
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
        const key = (event.key || "").toLowerCase();
        if (key === "w") { zoom(gd, ZOOM_STEP, pointer); }
        else if (key === "s") { zoom(gd, 1 / ZOOM_STEP, pointer); }
        else if (key === "a") { pan(gd, -PAN_STEP); }
        else if (key === "d") { pan(gd, PAN_STEP); }
        else if (key === "f") { fit(gd); }
        else if (key === "0") {
            const run = meta(gd).run_range;
            if (run) { setRange(gd, run[0], run[1]); }
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
        if (event.ctrlKey) {
            zoom(gd, Math.pow(WHEEL_ZOOM, event.deltaY), pointerAt(gd, event.clientX, event.clientY));
        } else {
            // Browsers turn Shift + a vertical wheel into a horizontal one.
            pan(gd, (event.deltaX || event.deltaY) / 1000);
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
        // Whether a relayout the chart reports is one of this module's moves (then it stays in the browser).
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
        // they are now (the figure's range is the older window) and let that settle in turn.
        arrived: function () {
            const gd = graph();
            if (!gd || sentMoves < 0 || stats.moves === sentMoves) { return; }
            const range = wanted;
            if (range) {
                window.requestAnimationFrame(function () { setRange(gd, range[0], range[1]); });
            }
        },
    };
})();
