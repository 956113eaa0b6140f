"""The base of the components drawn by plain React functions in assets/ (`window.dashboard_components`),
which need no build step: AfterCharts, StaticHtml."""

from __future__ import annotations

from typing import Any, ClassVar

from dash.development.base_component import Component

NAMESPACE = "dashboard_components"  # window.dashboard_components, which each asset extends


class BrowserComponent(Component):
    """A Dash component whose subclass lists its props in `_prop_names`; a prop left None is not sent."""

    _namespace = NAMESPACE
    _children_props: ClassVar[list[str]] = []
    _valid_wildcard_attributes: ClassVar[list[str]] = []
    available_wildcard_properties: ClassVar[list[str]] = []

    def __init__(self, **props: Any) -> None:
        self.available_properties = list(self._prop_names)
        super().__init__(**{name: value for name, value in props.items() if value is not None})
