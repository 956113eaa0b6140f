"""AfterCharts: a container whose children are drawn once the page's charts are.

A page's first render is its charts; an AG Grid below them takes ~400 ms of main-thread
time to start (measured on /kernels, 2 cores) and, drawn in the same task, holds the charts
back by as much. Wrapped in AfterCharts, the grid starts in the frame after every chart on
the page has drawn, so the charts appear first and the table follows.

The children are in the layout from the start: callbacks read and write their props as
usual, and a grid mounted late shows the latest ones. The browser side is
assets/after-charts.js (a plain React function component, so no build step).
"""

from __future__ import annotations

from typing import Any, ClassVar

from dashboard.layouts.browser_component import BrowserComponent


class AfterCharts(BrowserComponent):
    """Draws `children` after every chart on the page has drawn (or after `max_wait_ms`).

    Keyword arguments:
    - children: what to draw late (a table, say).
    - id: the component's id.
    - className, style: of the container.
    - min_height: the container's height (px) until the children are drawn, so the page does
      not jump when they arrive.
    - max_wait_ms: draw anyway after this long, e.g. when a chart cannot draw (default 3000).
    """

    _prop_names: ClassVar[list[str]] = ["children", "id", "className", "style", "min_height", "max_wait_ms"]
    _base_nodes: ClassVar[list[str]] = ["children"]
    _type = "AfterCharts"

    def __init__(self, children: Any = None, id: str | dict | None = None, className: str | None = None,
                 style: dict[str, Any] | None = None, min_height: int | None = None,
                 max_wait_ms: int | None = None) -> None:
        super().__init__(children=children, id=id, className=className, style=style, min_height=min_height,
                         max_wait_ms=max_wait_ms)

