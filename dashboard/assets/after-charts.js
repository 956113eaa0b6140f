// window.dashboard_components.AfterCharts (see dashboard/layouts/after_charts.py): renders its
// children once every chart on the page has drawn, so a slow-starting table below the charts
// does not hold them back. A plain React function component: no build step.
(function () {
    const React = window.React;

    function chartsDrawn() {
        const graphs = document.querySelectorAll(".dash-graph");
        for (let i = 0; i < graphs.length; i++) {
            if (!graphs[i].querySelector(".main-svg")) { return false; }
        }
        return true;
    }

    function AfterCharts(props) {
        const [ready, setReady] = React.useState(false);
        React.useEffect(function () {
            if (ready) { return undefined; }
            const started = performance.now();
            const limit = props.max_wait_ms == null ? 3000 : props.max_wait_ms;
            let frame = 0;
            // Checked once per frame: plotly draws a chart within one task, so a chart with its
            // SVG in place has been drawn, and the frame after it has been painted.
            const check = function () {
                if (chartsDrawn() || performance.now() - started > limit) {
                    setReady(true);
                } else {
                    frame = window.requestAnimationFrame(check);
                }
            };
            frame = window.requestAnimationFrame(check);
            return function () { window.cancelAnimationFrame(frame); };
        }, [ready]);
        const style = Object.assign({}, props.style || {});
        if (!ready && props.min_height != null) { style.minHeight = props.min_height + "px"; }
        return React.createElement("div", {
            id: props.id,
            className: props.className,
            style: style,
            "data-after-charts": ready ? "drawn" : "waiting",
        }, ready ? props.children : null);
    }

    window.dashboard_components = Object.assign(window.dashboard_components || {}, {AfterCharts: AfterCharts});
    // Also asked by lazy-libraries.js, which loads the deferred libraries once the charts are drawn.
    window.dashboardPage = Object.assign(window.dashboardPage || {}, {chartsDrawn: chartsDrawn});
})();
