"""A page's view state: a frozen dataclass read from and written to the URL query.

Each field names its URL key through `param(...)`; `from_query` parses every
key with the shared parsers in `views.params`, `to_query` writes back only
what differs from the defaults (a plain visit leaves the address bar clean).
States are hashable, so view functions cache on (run, state part).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self

from dashboard.store import Run
from dashboard.views.params import Param

Query = Mapping[str, Any]


def param(spec: Param[Any], default: Any = None) -> Any:
    """A state field read from the URL key `spec.key` (default when absent or malformed)."""
    return dataclasses.field(default=default, metadata={"param": spec})


def _params(cls: type) -> list[tuple[dataclasses.Field, Param[Any]]]:
    return [(field, field.metadata["param"]) for field in dataclasses.fields(cls) if "param" in field.metadata]


@dataclasses.dataclass(frozen=True)
class ViewState:
    """Base of every page's State; subclasses are frozen dataclasses whose fields use `param`."""

    @classmethod
    def from_query(cls, query: Query | None = None, run: Run | None = None) -> Self:
        """The state a URL query names; with the run, checked against it (`resolved`)."""
        query = query or {}
        values = {}
        for field, spec in _params(cls):
            raw = query.get(spec.key)
            values[field.name] = spec.parse(None if raw is None else str(raw))
        state = cls(**values)
        return state.resolved(run) if run is not None else state

    def resolved(self, run: Run) -> Self:
        """This state made valid for `run` (a rank it does not have, a group it lacks): override per page."""
        return self

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def to_query(self) -> dict[str, str]:
        """The URL keys that differ from the defaults, formatted."""
        return {key: value for key, value in self.url_state().items() if value != ""}

    def url_state(self) -> dict[str, str]:
        """Every key, defaults as "" (the address-bar store drops empty keys, so defaults leave the URL)."""
        state = {}
        for field, spec in _params(type(self)):
            value = getattr(self, field.name)
            state[spec.key] = "" if value == field.default else spec.format(value)
        return state
