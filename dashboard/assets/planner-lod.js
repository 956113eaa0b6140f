// /planner's channel graph, level of detail: at the zoom that fits a graph of several partitions, an op's
// full label (`[56] k = descriptor_load(...)`, its shape) would be drawn a few px tall and left out, so the
// ops read as empty boxes. Ops carry a short label (`[56] descriptor_load`, big enough to read at fit zoom)
// and the class `detail` switches them to the full one once the zoom makes it legible
// (figures/planner_graph.py's stylesheet). The PNG exports hold the detail for their rendering.
(function () {
    const DETAIL_ZOOM = 0.9;  // the full label's 9 px font reads at ~8 px and more
    const SHORT_PX = 18, SCREEN_PX = 9, MAX_PX = 26;  // the short label's font: model px, on screen, at most
    const GRAPH_IDS = ["planner-graph"];

    // Which op label at a zoom, and the short label's font size (null: the detail style's own); also asked by
    // graph-preview.js, so the preview painted before Cytoscape reads the same.
    function levelOfDetail(zoom) {
        const detail = zoom >= DETAIL_ZOOM;
        return {detail: detail, size: detail ? null : Math.round(Math.min(Math.max(SHORT_PX, SCREEN_PX / zoom), MAX_PX))};
    }
    window.plannerLevelOfDetail = levelOfDetail;

    function attach(container) {
        const cy = container && container._cyreg && container._cyreg.cy;
        if (!cy || cy.__levelOfDetail) { return; }
        cy.__levelOfDetail = true;
        let pending = false;
        const apply = function () {
            pending = false;
            const held = Date.now() < (cy.__holdDetail || 0);
            // The short label grows as the graph zooms out, so it stays ~9 px on screen (within limits).
            const level = held ? {detail: true, size: null} : levelOfDetail(cy.zoom());
            const detail = level.detail, size = level.size;
            const ops = cy.nodes(".op");
            const wrong = ops.filter(function (node) {
                return node.hasClass("detail") !== detail || node.__shortPx !== size;
            });
            if (wrong.length) {
                cy.batch(function () {
                    wrong.forEach(function (node) {
                        node.__shortPx = size;
                        if (detail) { node.addClass("detail").removeStyle("font-size"); }
                        else { node.removeClass("detail").style("font-size", size); }
                    });
                });
            }
        };
        const later = function () {
            if (!pending) { pending = true; window.requestAnimationFrame(apply); }
        };
        cy.on("zoom add class", later);  // class: the page re-sends elements with their own classes
        apply();
    }

    // Called by the PNG exports before cytoscape renders the whole graph.
    window.plannerHoldDetail = function (container, ms) {
        const cy = container && container._cyreg && container._cyreg.cy;
        if (!cy) { return; }
        cy.__holdDetail = Date.now() + (ms || 4000);
        cy.nodes(".op").forEach(function (node) { node.__shortPx = null; node.addClass("detail").removeStyle("font-size"); });
        window.setTimeout(function () { cy.emit("zoom"); }, (ms || 4000) + 50);
    };

    // graph-preview.js attaches it as soon as Cytoscape has started, so that Cytoscape's first frame, which
    // replaces the preview, already has the labels' level of detail (the interval below may be 300 ms away).
    window.plannerAttachLevelOfDetail = function (container) {
        if (container && GRAPH_IDS.indexOf(container.id) >= 0) { attach(container); }
    };

    window.setInterval(function () {
        GRAPH_IDS.forEach(function (id) { attach(document.getElementById(id)); });
    }, 300);
})();
