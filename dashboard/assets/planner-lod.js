// /planner's channel graph, level of detail: at the zoom that fits a graph of several partitions, an op's
// full label (`[56] k = descriptor_load(...)`, its shape) would be drawn a few px tall and left out, so the
// ops read as empty boxes. Ops carry a short label (`[56] descriptor_load`, big enough to read at fit zoom)
// and the class `detail` switches them to the full one once the zoom makes it legible
// (figures/planner_graph.py's stylesheet). The PNG exports hold the detail for their rendering.
(function () {
    const DETAIL_ZOOM = 0.9;  // the full label's 9 px font reads at ~8 px and more
    const GRAPH_IDS = ["planner-graph"];

    function attach(container) {
        const cy = container && container._cyreg && container._cyreg.cy;
        if (!cy || cy.__levelOfDetail) { return; }
        cy.__levelOfDetail = true;
        let pending = false;
        const apply = function () {
            pending = false;
            const detail = cy.zoom() >= DETAIL_ZOOM || Date.now() < (cy.__holdDetail || 0);
            const ops = cy.nodes(".op");
            const wrong = ops.filter(function (node) { return node.hasClass("detail") !== detail; });
            if (wrong.length) {
                cy.batch(function () { detail ? wrong.addClass("detail") : wrong.removeClass("detail"); });
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
        cy.nodes(".op").addClass("detail");
        window.setTimeout(function () { cy.emit("zoom"); }, (ms || 4000) + 50);
    };

    window.setInterval(function () {
        GRAPH_IDS.forEach(function (id) { attach(document.getElementById(id)); });
    }, 300);
})();
