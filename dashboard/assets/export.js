// "Export page as PNG" (one image of the page as seen) and "charts (zip)" (one PNG per chart):
// the view state lives in the address bar (written with history.replaceState), so the links are
// completed at click time from it. The page image is rendered at this window's layout width and
// pixel ratio, so it matches what is on screen.
document.addEventListener("click", function (event) {
    const link = event.target.closest("a.export-page-png, a.export-chart-pngs");
    if (!link) { return; }
    const page = window.location.pathname.replace(/^\/+|\/+$/g, "");
    const base = "/runs/" + encodeURIComponent(link.dataset.run) + "/export/" + page;
    if (link.classList.contains("export-chart-pngs")) {
        link.href = base + ".zip" + window.location.search;
        return;
    }
    const query = new URLSearchParams(window.location.search);
    query.set("export_width", String(document.documentElement.clientWidth));
    query.set("export_scale", String(Math.min(2, Math.max(1, Math.round(window.devicePixelRatio || 1)))));
    link.href = base + ".png?" + query.toString();
}, true);
