"""Log axes with 1-2-5 ticks and the unit written at every decade.

plotly's own log ticks label the 2s and 5s of a decade with a bare digit and
thin them by a rule of their own, which reads "5, 2, 1, 5, 2, 0.1" down an
axis. Every log axis here gets explicit tickvals / ticktext instead: 1, 2, 5
in each decade (the decade written with its unit: "10 ms"), thinned to the
decades alone, then every other decade, when the labels would not fit the
axis's length. The fitting is estimated from character counts, so an axis
never needs a browser to be laid out.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

CHAR_PX = 7.2  # mean advance of a 12 px system-ui digit / letter
LABEL_PAD_PX = 10  # room between two horizontal labels
LINE_PX = 18  # room a label needs on a vertical axis
_STEPS = ((1, 2, 5), (1,), "every 2", "every 3")
_SI = ((1e9, "G"), (1e6, "M"), (1e3, "k"))


def _number(value: float, si: bool) -> str:
    if si:
        for scale, suffix in _SI:
            if value >= scale:
                return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _ticks(low_decade: int, high_decade: int, step: Any) -> list[tuple[float, bool]]:
    """(value, is a decade) for the decades low..high with the mantissas of `step`."""
    if isinstance(step, tuple):
        return [(m * 10.0 ** d, m == 1) for d in range(low_decade, high_decade + 1) for m in step]
    every = int(step.split()[1])
    return [(10.0 ** d, True) for d in range(low_decade, high_decade + 1) if (d - low_decade) % every == 0]


def _fits(values: list[float], texts: list[str], low: float, high: float, length_px: float,
          horizontal: bool) -> bool:
    """Whether neighbouring labels inside [low, high] keep clear of each other on an axis of `length_px`."""
    span = math.log10(high) - math.log10(low)
    shown = [(math.log10(v), t) for v, t in zip(values, texts, strict=True) if low <= v <= high]
    for (left, left_text), (right, right_text) in itertools.pairwise(shown):
        gap = (right - left) / span * length_px
        need = ((len(left_text) + len(right_text)) / 2 * CHAR_PX + LABEL_PAD_PX) if horizontal else LINE_PX
        if gap < need:
            return False
    return True


def log_axis(low: float, high: float, unit: str = "", length_px: float = 400, horizontal: bool = True,
             si: bool = False) -> dict[str, Any]:
    """Layout of a log axis over data in [low, high] (> 0): explicit ticks, range padded a little.

    `unit` is written after each decade's number ("10 ms"); `si` writes large
    counts as 10k, 1M. `horizontal`: an x axis (labels side by side) or a y axis.
    """
    low = max(low, 1e-12)
    high = max(high, low)
    # A little room around the outermost points (markers have a size).
    pad = max(0.08 * (math.log10(high) - math.log10(low)), 0.15)
    axis_low, axis_high = 10 ** (math.log10(low) - pad), 10 ** (math.log10(high) + pad)
    low_decade, high_decade = math.floor(math.log10(axis_low)), math.ceil(math.log10(axis_high))
    values: list[float] = []
    texts: list[str] = []
    for step in _STEPS:
        ticks = _ticks(low_decade, high_decade, step)
        values = [value for value, _ in ticks]
        texts = [_number(value, si) + (f" {unit}" if unit and decade else "") for value, decade in ticks]
        if _fits(values, texts, axis_low, axis_high, length_px, horizontal):
            break
    return {"type": "log", "range": [math.log10(axis_low), math.log10(axis_high)], "tickmode": "array",
            "tickvals": values, "ticktext": texts, "automargin": True}
