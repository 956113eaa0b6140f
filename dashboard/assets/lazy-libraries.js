// Stand-ins for the component libraries a page does not load with its scripts (see
// dashboard/layouts/lazy_libraries.py): the page's head names each one's script in a meta tag. A
// stand-in loads its library's script the first time one of its components is drawn, then draws the
// real component with the same props; the scripts of every deferred library are also loaded once the
// page's charts are drawn and the browser is idle, so moving to a page with a grid does not wait.
(function () {
    const React = window.React;
    const meta = document.querySelector('meta[name="dashboard-lazy-libraries"]');
    if (!meta || !React) { return; }
    const libraries = JSON.parse(meta.getAttribute("content"));
    const standIns = {};
    const reals = {};
    const loads = {};

    function loaded(namespace) {
        return reals[namespace] !== undefined;
    }

    // The library's script defines window[namespace]. Its components stay the stand-ins there, which draw the
    // real ones: the renderer looks a component's type up on every render, and a type that changed from the
    // stand-in to the real one would make React throw the drawn component away and start a new one (a
    // Cytoscape graph losing the classes the page set on it, a grid starting twice). Everything else the
    // library defines (dash_ag_grid.getApi, ...) is the library's own.
    function adopt(namespace) {
        const real = window[namespace];
        const stand = standIns[namespace];
        if (real === undefined || real === stand) { return false; }
        reals[namespace] = real;
        Object.keys(real).forEach(function (key) {
            if (libraries[namespace].types.indexOf(key) < 0) { stand[key] = real[key]; }
        });
        window[namespace] = stand;
        return true;
    }

    function load(namespace) {
        if (!loads[namespace]) {
            loads[namespace] = new Promise(function (resolve, reject) {
                if (loaded(namespace)) { resolve(reals[namespace]); return; }
                const script = document.createElement("script");
                script.src = libraries[namespace].src;
                script.onload = function () {
                    if (adopt(namespace)) { resolve(reals[namespace]); } else {
                        reject(new Error(namespace + " did not define its components"));
                    }
                };
                script.onerror = function () { reject(new Error("could not fetch " + script.src)); };
                document.head.appendChild(script);
            });
        }
        return loads[namespace];
    }

    function standIn(namespace, type) {
        function LazyComponent(props) {
            const [failure, setFailure] = React.useState(null);
            const [, setReady] = React.useState(false);
            const ready = loaded(namespace);
            React.useEffect(function () {
                if (ready) { return undefined; }
                let live = true;
                load(namespace).then(function () { if (live) { setReady(true); } },
                                     function (error) { if (live) { setFailure(String(error.message)); } });
                return function () { live = false; };
            }, [ready]);
            if (ready) { return React.createElement(reals[namespace][type], props); }
            // Its place kept (id, classes, height) while the script loads; one line if it cannot.
            return React.createElement("div", {
                id: props.id, className: props.className, style: props.style, "data-lazy-library": namespace,
            }, failure ? "This view needs " + namespace + ", which did not load (" + failure + "): reload the page."
                : null);
        }
        LazyComponent.displayName = "Lazy(" + namespace + "." + type + ")";
        return LazyComponent;
    }

    Object.keys(libraries).forEach(function (namespace) {
        if (window[namespace] !== undefined) { return; }
        const stand = {};
        libraries[namespace].types.forEach(function (type) { stand[type] = standIn(namespace, type); });
        if (namespace === "dash_ag_grid") {
            // dash-ag-grid's API lookup, used by clientside callbacks, answered once the grid is there
            // (then the library's own, see adopt).
            stand.getApiAsync = function (id) {
                return load(namespace).then(function (real) { return real.getApiAsync(id); });
            };
        }
        standIns[namespace] = stand;
        window[namespace] = stand;
    });

    function pageDrawn() {  // the page is there (its header) and its charts have drawn (after-charts.js)
        return document.querySelector(".page-header") !== null && window.dashboardPage.chartsDrawn();
    }

    function loadAllWhenIdle() {
        const started = performance.now();
        const check = function () {
            if (pageDrawn() || performance.now() - started > 10000) {
                const loadAll = function () {
                    Object.keys(standIns).forEach(function (namespace) { load(namespace).catch(function () {}); });
                };
                if (window.requestIdleCallback) { window.requestIdleCallback(loadAll, {timeout: 2000}); } else {
                    window.setTimeout(loadAll, 200);
                }
            } else {
                window.requestAnimationFrame(check);
            }
        };
        window.requestAnimationFrame(check);
    }

    // Whether a deferred library has loaded (tests, and scripts that need its own code).
    window.dashboardLazyLibraries = {loaded: loaded};

    if (document.readyState === "complete") { loadAllWhenIdle(); } else {
        window.addEventListener("load", loadAllWhenIdle, {once: true});
    }
})();
