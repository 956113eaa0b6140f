"""HtmlPanel: a block whose inner HTML, built and escaped by the server, is drawn with the page.

The compiler page's code panels (an IR step can be 18 k lines) are one HTML string each that the
browser parses natively; React never owns the lines. Written into empty Divs by an initial clientside
callback, they appeared one callback cycle after the charts (33-45 ms of /compiler, warm); drawn by this
component (assets/html-panel.js) they come with the first render. Later steps still arrive through
the page's stores and its callback, which writes the panel's DOM directly: the component marks what it
drew (`drawnHtml`, the property that callback compares), so its first call redraws nothing.
"""

from __future__ import annotations

from typing import ClassVar

from dashboard.layouts.browser_component import BrowserComponent


class HtmlPanel(BrowserComponent):
    """`<div id=... class=...>` holding `html` as its inner HTML (trusted: the server escapes every text)."""

    _prop_names: ClassVar[list[str]] = ["id", "html", "className"]
    _base_nodes: ClassVar[list[str]] = []
    _type = "HtmlPanel"

    def __init__(self, id: str, html: str | None = None, className: str | None = None) -> None:
        super().__init__(id=id, html=html, className=className)
