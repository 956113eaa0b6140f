// /compiler for a tinygrad run: one delegated listener turns a click on a context or a step of the lists
// (HTML strings, see dashboard/layouts/tinygrad_panels.py) into the page's `tg-click` store.
(function () {
    document.addEventListener("click", function (event) {
        const target = event.target instanceof Element ? event.target : null;
        const item = target && target.closest("[data-tg-ctx], [data-tg-step]");
        if (!item || !item.closest(".tinygrad-compiler") || !window.dash_clientside) { return; }
        const context = item.getAttribute("data-tg-ctx");
        const payload = context !== null
            ? {kind: "ctx", index: Number(context)}
            : {kind: "step", index: Number(item.getAttribute("data-tg-step"))};
        payload.t = Date.now();
        window.dash_clientside.set_props("tg-click", {data: payload});
    });
})();
