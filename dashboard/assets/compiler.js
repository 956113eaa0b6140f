// /compiler: one delegated listener turns a click on an IR or Python line (rendered as one HTML
// string per panel, see dashboard/layouts/ir_code.py) into the page's `compiler-click` store.
(function () {
    document.addEventListener("click", function (event) {
        const target = event.target instanceof Element ? event.target : null;
        const line = target && target.closest("[data-ir-line], [data-py-line]");
        if (!line || !line.closest("#compiler-page") || !window.dash_clientside) { return; }
        const ir = line.getAttribute("data-ir-line");
        const block = line.closest("[data-text]");
        const payload = ir !== null
            ? {kind: "ir", line: Number(ir), text: block ? Number(block.getAttribute("data-text")) : null,
               stage: block ? block.getAttribute("data-stage") : null}
            : {kind: "py", line: Number(line.getAttribute("data-py-line"))};
        payload.t = Date.now();
        window.dash_clientside.set_props("compiler-click", {data: payload});
    });
})();
