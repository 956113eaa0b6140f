"""What plotly reports of a user's zoom on a chart, as values a view state takes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

_RANGE_KEY = re.compile(r"^xaxis\d*\.range(\[([01])\])?$")


def x_range_from_relayout(relayout: Mapping[str, Any] | None) -> tuple[float, float] | Literal["all"] | None:
    """The x extent a plotly relayout event asks for, sorted; "all" for a reset (autorange); None if unrelated.

    plotly reports a zoom either as `xaxis.range: [a, b]` or as `xaxis.range[0]` / `xaxis.range[1]`.
    """
    if not relayout:
        return None
    if any(key.startswith("xaxis") and key.endswith(".autorange") and value for key, value in relayout.items()):
        return "all"
    low = high = None
    for key, value in relayout.items():
        match = _RANGE_KEY.match(key)
        if not match:
            continue
        if match.group(2) is None and isinstance(value, list | tuple) and len(value) == 2:
            low, high = value
        elif match.group(2) == "0":
            low = value
        elif match.group(2) == "1":
            high = value
    if low is None or high is None:
        return None
    try:
        start, end = sorted((float(low), float(high)))
    except (TypeError, ValueError):
        return None
    return start, end
