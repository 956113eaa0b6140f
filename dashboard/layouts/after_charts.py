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

from dash.development.base_component import Component, _explicitize_args

NAMESPACE = "dashboard_components"  # window.dashboard_components, defined by assets/after-charts.js


class AfterCharts(Component):
    """Draws `children` after every chart on the page has drawn (or after `max_wait_ms`).

    Keyword arguments:
    - children: what to draw late (a table, say).
    - id: the component's id.
    - className, style: of the container.
    - min_height: the container's height (px) until the children are drawn, so the page does
      not jump when they arrive.
    - max_wait_ms: draw anyway after this long, e.g. when a chart cannot draw (default 3000).
    """

    _children_props: ClassVar[list[str]] = []
    _base_nodes: ClassVar[list[str]] = ["children"]
    _namespace = NAMESPACE
    _type = "AfterCharts"

    def __init__(self, children: Any = None, id: str | dict | None = None, className: str | None = None,
                 style: dict[str, Any] | None = None, min_height: int | None = None,
                 max_wait_ms: int | None = None, **kwargs: Any) -> None:
        self._prop_names = ["children", "id", "className", "style", "min_height", "max_wait_ms"]
        self._valid_wildcard_attributes = []
        self.available_properties = list(self._prop_names)
        self.available_wildcard_properties = []
        _explicit_args = kwargs.pop("_explicit_args")
        _locals = locals()
        _locals.update(kwargs)
        args = {k: _locals[k] for k in _explicit_args if k != "children"}
        super().__init__(children=children, **args)


AfterCharts.__init__ = _explicitize_args(AfterCharts.__init__)  # type: ignore[method-assign]
