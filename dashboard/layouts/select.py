"""Pickers without dcc.Dropdown: one choice in the browser's own `<select>` (dash-bootstrap-components'
Select), several in a checklist under a select-like summary (`multi_picker`).

Dash 4's dcc.Dropdown costs 30-50 ms of a page's first render per instance on two cores (measured by
interleaved loads with and without them: /compiler's four drew 0.22 s sooner, /kernels' three 0.1 s;
the timeline's two lane pickers 50-70 ms), and every page had one (the run picker) to five. A native
select draws at once, keeps keyboard type-ahead and the platform's own list on touch screens. A select's
values travel as text, as the browser reports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, clientside_callback, html

Option = Mapping[str, Any]


def native_select(component_id: str | dict[str, Any], options: Iterable[Option], value: Any, *,
                  min_width: str | None = None, class_name: str | None = None, placeholder: str | None = None,
                  none_label: str | None = None,
                  style: Mapping[str, Any] | None = None) -> dbc.Select:
    """A `<select>` of `options` ({"label", "value"[, "disabled", "title"]}) with `value` chosen.

    `placeholder`: shown while `value` is None, and not a choice; `none_label`: a first option that is one
    (value ""), for pickers whose empty choice means something ("all partitions"), in place of a placeholder.
    dbc.Select always draws a hidden placeholder option of value "" first, which the browser shows for the
    value "": it carries `none_label` too, or the empty choice would read as a blank picker.
    """
    items = select_options(options)
    if none_label is not None:
        items.insert(0, {"label": none_label, "value": ""})
        placeholder = none_label
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


def multi_picker(component_id: str, options: Iterable[Option], value: Iterable[Any], *, placeholder: str,
                 min_width: str | None = None, class_name: str = "") -> html.Details:
    """Several choices: a checklist in a panel that opens under a select-like summary (`<details>`).

    It stands where a dcc.Dropdown with `multi` stood, for its first-render cost (see above); the value
    is the same list of the chosen options' values. The summary names what is chosen: filled here, and
    kept in step in the browser by `multi_picker_summary`.
    """
    items = list(options)
    chosen = list(value)
    return html.Details([
        html.Summary(summary_text(items, chosen, placeholder), id=f"{component_id}-summary",
                     className="form-select form-select-sm multi-picker-summary", title=placeholder),
        dbc.Checklist(id=component_id, options=[{"label": o["label"], "value": o["value"]} for o in items],
                      value=chosen, class_name="multi-picker-panel small"),
    ], className=f"multi-picker {class_name}".strip(), style={"minWidth": min_width} if min_width else None)


def summary_text(options: list[Option], chosen: list[Any], placeholder: str) -> str:
    """What a multi picker's summary reads: the chosen labels (up to two, then a count), else its placeholder."""
    labels = [str(option["label"]) for option in options if option["value"] in chosen]
    if not labels:
        return placeholder
    return ", ".join(labels) if len(labels) <= 2 else f"{labels[0]}, {labels[1]} +{len(labels) - 2}"


def multi_picker_summary(component_id: str, placeholder: str) -> None:
    """Keep the summary of the multi picker `component_id` in step with its value, in the browser."""
    clientside_callback(
        """
        function(chosen, options) {
            const labels = (options || []).filter(o => (chosen || []).includes(o.value)).map(o => String(o.label));
            if (!labels.length) { return PLACEHOLDER; }
            return labels.length <= 2 ? labels.join(", ") : labels[0] + ", " + labels[1] + " +" + (labels.length - 2);
        }
        """.replace("PLACEHOLDER", json.dumps(placeholder)),
        Output(f"{component_id}-summary", "children"),
        Input(component_id, "value"),
        State(component_id, "options"),
        prevent_initial_call=True,
    )
