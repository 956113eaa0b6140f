// Number formats of the kernel tables, called from AG Grid value formatters
// ({"function": "formatSig4(params.value)"}). Kept here as plain functions: without
// 'unsafe-eval' dash-ag-grid interprets a formatter's text for every cell it draws, so a
// call into compiled code is cheaper than a d3.format(...) expression built per cell.
// Same output as d3.format(",.4~r") and d3.format(","): grouped, trailing zeros trimmed,
// U+2212 as the minus sign.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
(function () {
    // Made on first use: the first Intl.NumberFormat of a page loads the locale data (~13 ms on a
    // 2-core machine), which would otherwise delay every page's first chart, grid or not.
    let significant4 = null;
    let grouped = null;
    const minus = function (text) { return text.replace("-", "\u2212"); };
    dagfuncs.formatSig4 = function (value) {
        if (value == null) { return "\u2013"; }
        significant4 = significant4 || new Intl.NumberFormat("en-US", {maximumSignificantDigits: 4});
        return minus(significant4.format(value));
    };
    dagfuncs.formatCount = function (value) {
        if (value == null) { return "\u2013"; }
        grouped = grouped || new Intl.NumberFormat("en-US", {maximumFractionDigits: 20});
        return minus(grouped.format(value));
    };
})();
