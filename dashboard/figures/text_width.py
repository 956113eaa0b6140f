"""How wide a chart's text is drawn, estimated on the server: so a figure can reserve the margins its tick
labels need before the browser draws it.

Why: plotly's `automargin` measures the labels after a first drawing and, when they need more room than
the margin, draws the whole chart a second time; on a page of long kernel names that second drawing is
most of a chart's time in the browser (tens of ms each). A margin at least as wide as the labels leaves
nothing to grow, so plotly draws once; `automargin` stays on as the safety net where the estimate falls
short (another font, another size), but for the bar charts of kernel names (/kernels, /compare): there
`automargin` measured every label after drawing it, a sixth of /compare's drawing time, and the estimate
(wider than the label in every font tested, tests/figures/test_text_width.py) is the margin.

The widths are DejaVu Sans's advance widths (per 1000 units of the font size), the default sans-serif of
Linux desktops and among the widest of the UI fonts a browser picks for the theme's `system-ui` stack:
an estimate that errs on the wide side. Characters not listed count a full em.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_WIDTHS = dict(zip(
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~…–—·×µΔ±≤≥→’“”°",
    (318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, *[636] * 10, 337, 337, 838,
     838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695,
     635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634,
     278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
     1000, 500, 1000, 318, 838, 636, 684, 838, 838, 838, 838, 318, 518, 518, 500), strict=True))
_TAG = re.compile(r"<[^<>]{0,40}>")  # plotly's text markup (<b>, <sup>, <span style=...>)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# What plotly puts between an axis's labels and the plot's edge beyond the text itself (outside ticks,
# label padding, its own rounding): measured 33 px on a y axis of kernel names at 13 px; kept generous.
LABEL_PAD_PX = 36


def line_px(text: str, size: float = 13) -> float:
    """Width in px of one line of plain text at `size` px."""
    return sum(_WIDTHS.get(char, 1000) for char in text) * size / 1000


def text_px(text: str, size: float = 13) -> float:
    """Width in px of plotly text: its widest line (`<br>`-separated), markup left out."""
    return max((line_px(_TAG.sub("", line), size) for line in _LINE_BREAK.split(text)), default=0.0)


def label_margin(labels: Iterable[str], size: float = 13, least: int = 10) -> int:
    """A margin (px) that holds an axis's tick labels beside the plot: the widest label plus plotly's padding."""
    widest = max((text_px(str(label), size) for label in labels), default=0.0)
    return max(least, math.ceil(widest + LABEL_PAD_PX)) if widest else least


def side_margin(labels: Iterable[str], titled: bool, size: float = 13, least: int = 10) -> int:
    """A left or right margin that holds a y axis's tick labels and, beside them, its one-line title."""
    return label_margin(labels, size, least) + (math.ceil(1.2 * size + 14) if titled else 0)


def bottom_margin(titled: bool, size: float = 13, lines: int = 1) -> int:
    """A bottom margin that holds an x axis's tick labels (`lines` high) and its one-line title below them."""
    return math.ceil(1.2 * size * lines + 12 + (1.2 * size + 14 if titled else 0))
