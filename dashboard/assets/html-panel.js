// window.dashboard_components.HtmlPanel (see dashboard/layouts/html_panel.py): a div whose inner HTML
// the server built and escaped, drawn with the page's first render. It records what it drew on the
// element (`drawnHtml`): the compiler page's panel callback rewrites the DOM only when that differs.
(function () {
    const React = window.React;

    function HtmlPanel(props) {
        const ref = React.useRef(null);
        // Set once: what callbacks later write into the element is theirs, React does not redraw it.
        const [first] = React.useState(props.html || "");
        React.useLayoutEffect(function () { ref.current.drawnHtml = first; }, []);
        return React.createElement("div", {id: props.id, className: props.className, ref: ref,
                                           dangerouslySetInnerHTML: {__html: first}});
    }

    window.dashboard_components = Object.assign(window.dashboard_components || {}, {HtmlPanel: HtmlPanel});
})();
