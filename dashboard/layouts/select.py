"""Single-choice pickers drawn by the browser's own `<select>` (dash-bootstrap-components' Select).

Dash 4's dcc.Dropdown costs 30-50 ms of a page's first render per instance on two cores (measured by
interleaved loads with and without them: /compiler's four drew 0.22 s sooner, /kernels' three 0.1 s),
and every page has one (the run picker) to five. A native select draws at once, keeps keyboard
type-ahead and the platform's own list on touch screens. dcc.Dropdown stays where a picker takes several
values (timeline lanes, memory filters). Values travel as strings, as the browser reports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import dash_bootstrap_components as dbc

Option = Mapping[str, Any]


def native_select(component_id: str | dict[str, Any], options: Iterable[Option], value: Any, *,
                  min_width: str | None = None, class_name: str | None = None, placeholder: str | None = None,
                  none_label: str | None = None,
                  style: Mapping[str, Any] | None = None) -> dbc.Select:
    """A `<select>` of `options` ({"label", "value"[, "disabled", "title"]}) with `value` chosen.

    `placeholder`: shown while `value` is None, and not a choice; `none_label`: a first option that is one
    (value ""), for pickers whose empty choice means something ("all partitions").
    """
    items = select_options(options)
    if none_label is not None:
        items.insert(0, {"label": none_label, "value": ""})
    merged = {**({"minWidth": min_width} if min_width else {}), **(style or {})}
    return dbc.Select(id=component_id, options=items, value=select_value(value), size="sm", style=merged or None,
                      class_name=class_name, placeholder=placeholder or "")


def select_options(options: Iterable[Option]) -> list[dict[str, Any]]:
    """Options as a select takes them, also from a callback: values as text (the select shows no choice
    for a value 0 and reports every choice as text)."""
    return [{"label": "" if option["label"] is None else option["label"], "value": select_value(option["value"]),
             **{key: option[key] for key in ("disabled", "title") if option.get(key)}} for option in options]


def select_value(value: Any) -> str:
    """A value as a select takes it: text, "" for none."""
    return "" if value is None else str(value)
