// "Export page as PNG": the view state lives in the address bar (written with
// history.replaceState), so the link is completed at click time from it.
document.addEventListener("click", function (event) {
    const link = event.target.closest("a.export-page-png");
    if (!link) { return; }
    const page = window.location.pathname.replace(/^\/+|\/+$/g, "");
    const query = window.location.search;
    link.href = "/runs/" + encodeURIComponent(link.dataset.run) + "/export/" + page + ".zip" + query;
}, true);
