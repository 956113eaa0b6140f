// window.dashboard_components.StaticHtml (see dashboard/layouts/static_html.py): read-only markup
// drawn by plain React, one Dash component for a whole table or list of findings. Each node is
// {type, props: {..., children}}; type is a dash.html component's name (Td -> <td>) or "Link",
// an <a> that navigates inside the page as dcc.Link does. A plain function component: no build step.
(function () {
    const React = window.React;

    function followLink(event) {
        // dcc.Link's behaviour: a plain click changes the page without a reload; modified clicks
        // and other targets are the browser's.
        const target = event.currentTarget.getAttribute("target");
        if (event.metaKey || event.shiftKey || event.altKey || event.ctrlKey || (target && target !== "_self")) {
            return;
        }
        event.preventDefault();
        window.history.pushState({}, "", event.currentTarget.getAttribute("href"));
        window.dispatchEvent(new CustomEvent("_dashprivate_pushstate"));
        window.scrollTo(0, 0);
    }

    function draw(node, key) {
        if (node === null || node === undefined || typeof node !== "object") {
            return node;
        }
        if (Array.isArray(node)) {
            return node.map(draw);
        }
        const props = Object.assign({key: key}, node.props);
        const children = props.children;
        delete props.children;
        if (props.href !== undefined && window.dash_clientside && window.dash_clientside.clean_url) {
            props.href = window.dash_clientside.clean_url(props.href);  // as dcc.Link and html.A do
        }
        let tag = node.type.toLowerCase();
        if (node.type === "Link") {
            tag = "a";
            props.onClick = followLink;
        }
        if (children === undefined || children === null) {
            return React.createElement(tag, props);
        }
        return React.createElement(tag, props, Array.isArray(children) ? children.map(draw) : draw(children));
    }

    function StaticHtml(props) {
        return React.createElement(React.Fragment, null, draw(props.tree, 0));
    }

    window.dashboard_components = Object.assign(window.dashboard_components || {}, {StaticHtml: StaticHtml});
})();
