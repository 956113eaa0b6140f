// Number formats of the kernel tables, called from AG Grid value formatters
// ({"function": "formatSig4(params.value)"}). Kept here as plain functions: without
// 'unsafe-eval' dash-ag-grid interprets a formatter's text for every cell it draws, so a
// call into compiled code is cheaper than a d3.format(...) expression built per cell.
// Same output as d3.format(",.4~r") and d3.format(","): grouped, trailing zeros trimmed,
// U+2212 as the minus sign.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
(function () {
    const significant4 = new Intl.NumberFormat("en-US", {maximumSignificantDigits: 4});
    const grouped = new Intl.NumberFormat("en-US", {maximumFractionDigits: 20});
    const minus = function (text) { return text.replace("-", "\u2212"); };
    dagfuncs.formatSig4 = function (value) {
        return value == null ? "\u2013" : minus(significant4.format(value));
    };
    dagfuncs.formatCount = function (value) {
        return value == null ? "\u2013" : minus(grouped.format(value));
    };
})();
