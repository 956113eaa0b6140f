"""StaticHtml: markup that never changes after it is drawn (tables, findings), sent as one component.

Every Dash component costs the renderer ~0.25 ms on a page's first render (a wrapper, store
subscriptions and paths per component; measured: a 92-row table of 622 `html.Td`/`Tr` components on
/compare held the charts back by ~150 ms warm). Read-only markup needs none of that: `static_html`
turns a tree of `dash.html` components (plus the few dbc/dcc ones our tables and findings use) into
plain JSON that assets/static-html.js draws with React directly, one Dash component for the lot.

The nodes keep Dash's shape (`{"type": "Td", "props": {..., "children": ...}}`), so what reads a
layout as JSON (the tests' component walkers, the export) reads them as before. What is converted
must be read-only: no callback may target an id inside it (the id is kept on the DOM element only).
A component the converter does not know is refused, never dropped.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dash import dcc
from dash.development.base_component import Component

from dashboard.layouts.browser_component import BrowserComponent

# Props of dash.html components that are Dash's, not the element's.
_DASH_ONLY = {"n_clicks", "n_clicks_timestamp", "disable_n_clicks", "loading_state", "children"}
_TABLE_FLAGS = {"striped": "table-striped", "bordered": "table-bordered", "borderless": "table-borderless",
                "hover": "table-hover"}


class StaticHtml(BrowserComponent):
    """Read-only markup drawn by plain React (assets/static-html.js); `tree` as `static_html` writes it."""

    _prop_names: ClassVar[list[str]] = ["tree"]
    _base_nodes: ClassVar[list[str]] = []
    _type = "StaticHtml"

    def __init__(self, tree: Any = None) -> None:
        super().__init__(tree=tree)


def static_html(markup: Any) -> StaticHtml:
    """`markup` (a component, a list of them, text) as one StaticHtml."""
    return StaticHtml(tree=to_static(markup))


def to_static(markup: Any) -> Any:
    """The JSON tree of `markup`; TypeError for a component that is not plain markup."""
    if markup is None or isinstance(markup, str | int | float):
        return markup
    if isinstance(markup, list | tuple):
        return [to_static(item) for item in markup]
    if not isinstance(markup, Component):
        raise TypeError(f"static_html: {type(markup).__name__} is not markup")
    props = {name: value for name, value in markup.to_plotly_json()["props"].items()
             if name not in _DASH_ONLY and value is not None}
    children = to_static(getattr(markup, "children", None))
    responsive = props.pop("responsive", False)  # dbc.Table's: of the kinds converted, the only one with it
    kind, props = _element(markup, props)
    if children is not None:
        props["children"] = children
    node = {"type": kind, "props": props}
    # dbc.Table(responsive=True) draws its table inside a scrolling div.
    return {"type": "Div", "props": {"className": "table-responsive", "children": node}} if responsive else node


def _element(markup: Component, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The element a component draws and its DOM props."""
    if markup._namespace == "dash_html_components":
        return markup._type, props
    if isinstance(markup, dcc.Link):  # drawn as an <a> that navigates in the page, as dcc.Link does
        return "Link", _only(markup, props, {"href", "className", "style", "id", "title", "target"})
    import dash_bootstrap_components as dbc

    if "class_name" in props:  # dbc's alias of className
        props["className"] = " ".join(filter(None, (props.pop("class_name"), props.get("className"))))
    if isinstance(markup, dbc.Table):
        flags = [css for flag, css in _TABLE_FLAGS.items() if props.pop(flag, False)]
        size = props.pop("size", None)
        color = props.pop("color", None)
        classes = ["table", *([f"table-{size}"] if size else []), *flags, *([f"table-{color}"] if color else []),
                   props.pop("className", "")]
        return "Table", {**_only(markup, props, {"id", "style"}), "className": " ".join(filter(None, classes))}
    if isinstance(markup, dbc.Badge):
        text = props.pop("text_color", None)
        classes = ["badge", f"bg-{props.pop('color', 'secondary')}", "rounded-pill" if props.pop("pill", False) else "",
                   f"text-{text}" if text else "", props.pop("className", "")]
        return "Span", {**_only(markup, props, {"id", "style", "title"}), "className": " ".join(filter(None, classes))}
    raise TypeError(f"static_html: {type(markup).__module__}.{type(markup).__name__} is not plain markup")


def _only(markup: Component, props: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
    unknown = set(props) - allowed
    if unknown:
        raise TypeError(f"static_html: {type(markup).__name__} props {sorted(unknown)} cannot be drawn statically")
    return props
