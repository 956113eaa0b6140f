// LinkList: an AG Grid cell of links from [{text, href}, ...] (the Runs page's "Open" and "Download"),
// or the cell's text when its value is a string (a damaged run's reason, "–"). Plain anchors: a page
// link navigates, a download link downloads (its route answers as an attachment).
var dagcomponentfuncs = (window.dashAgGridComponentFunctions = window.dashAgGridComponentFunctions || {});
dagcomponentfuncs.LinkList = function (props) {
    const value = props.value;
    if (!Array.isArray(value)) {
        return value == null ? null : String(value);
    }
    const parts = [];
    value.forEach(function (link, index) {
        if (index) { parts.push(" \u00b7 "); }
        parts.push(React.createElement("a", {key: link.href, href: link.href}, link.text));
    });
    return React.createElement("span", null, parts);
};
