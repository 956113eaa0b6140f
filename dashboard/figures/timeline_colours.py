"""Colours of the timeline, each palette with one meaning.

- kernels: by name (`theme.colour_for`: the colour a kernel has on every page) or, with
  `colour=category`, by what they do: compute / communication / memory / other, the classes
  of the GPU time breakdown (`analysis.breakdown.kernel_kind`);
- copies: by kind (HtoD, DtoH, ...), or `memory` by category;
- passes: forward / backward / optimizer (`theme.PASS_COLOURS`); profiler steps: two slate
  greys, alternating; neither is ever a range colour;
- ranges (ops, annotations, NVTX): by name, from a palette without the pass and step colours
  and without near-twins (no two yellows);
- CUDA API calls: by what the CPU does, synchronising calls in red so a stalled CPU stands out.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from dashboard.figures.theme import PASS_COLOURS, colour_for

GREY = "#ced4da"  # kernels outside the selection
LEVELS = 4  # busy-fraction shades per colour: up to 25, 50, 75, 100 %
COLOUR_MODES = ("kernel", "category")
# One distinct colour per copy kind (hues far apart); kinds outside the table take the spare ones.
COPY_COLOURS = {
    "memcpy HtoD": "#5D3A9B", "memcpy DtoH": "#1B9E77", "memcpy DtoD": "#E6AB02", "memcpy HtoH": "#A6761D",
    "memcpy PtoP": "#E7298A", "memset": "#6C757D", "memcpy": "#495057",
}
_SPARE_COPY_COLOURS = ("#66A61E", "#1F78B4", "#B15928", "#6A3D9A", "#FB9A99", "#17BECF")
STACK_COLOUR = "#495057"
PASS_ORDER = ("forward", "backward", "optimizer", "other")
STEP_COLOURS = ("#5C677D", "#979DAC")  # even and odd profiler steps
RANGE_PALETTE = ("#E69F00", "#56B4E9", "#CC79A7", "#F0E442", "#9C755F", "#7570B3", "#76B7B2", "#66A61E")
CATEGORY_COLOURS = {"compute": "#4E79A7", "communication": "#E15759", "memory": "#59A14F", "other": "#BAB0AC"}
API_COLOURS = {"sync": "#D62728", "launch": "#8FA8C8", "memory": "#9CC3A0", "other": "#C0C4C8"}
API_MEANING = {"sync": "synchronising (CPU waits)", "launch": "kernel launch", "memory": "memory / async copy",
               "other": "other call"}


def _stable_index(name: str, size: int) -> int:
    # A fixed string hash (not Python's salted hash): the same colour in every process.
    value = 0
    for char in name.encode("utf-8"):
        value = (value * 131 + char) % 1_000_000_007
    return value % size


@lru_cache(maxsize=16384)  # walks every byte of a (long) name; names repeat across every redraw
def range_colour(name: str) -> str:
    return RANGE_PALETTE[_stable_index(name, len(RANGE_PALETTE))]


def step_colour(name: str) -> str:
    """Alternating greys by step number (ProfilerStep#12 -> even), so neighbouring steps differ."""
    digits = "".join(char for char in name.rsplit("#", 1)[-1] if char.isdigit())
    return STEP_COLOURS[int(digits[-6:]) % 2 if digits else 0]


def copy_colour(series: str) -> str:
    """The colour of a copy kind (`memcpy HtoD`, `memset`...): fixed for known kinds, else a spare one."""
    if series in COPY_COLOURS:
        return COPY_COLOURS[series]
    return _SPARE_COPY_COLOURS[sum(series.encode("utf-8")) % len(_SPARE_COPY_COLOURS)]


def event_colour(name: str | None, kind: str | None, klass: str | None = None, mode: str = "kernel") -> str:
    """The colour of an event (see the module docstring); `klass` is the name's class
    (TimelineData.names.klass), used by category mode and for API calls."""
    if name is None:
        return GREY
    if kind == "pass":
        return PASS_COLOURS.get(name, PASS_COLOURS["none"])
    if kind == "step":
        return step_colour(name)
    if kind == "api":
        return API_COLOURS.get(klass or "other", API_COLOURS["other"])
    if kind == "memcpy":
        return CATEGORY_COLOURS["memory"] if mode == "category" else copy_colour(name)
    if kind == "kernel":
        return CATEGORY_COLOURS.get(klass or "other", CATEGORY_COLOURS["other"]) if mode == "category" \
            else colour_for(name)
    return range_colour(name)


def colour_table(pairs: pl.DataFrame, mode: str = "kernel") -> pl.DataFrame:
    """name, kind(, klass), colour for distinct pairs: Python once per distinct name."""
    keys = [column for column in ("name", "kind", "klass") if column in pairs.columns]
    pairs = pairs.select(keys).unique()
    klass = pairs.get_column("klass") if "klass" in keys else pl.Series([None] * pairs.height, dtype=pl.String)
    colours = [event_colour(name, kind, cls, mode)
               for (name, kind), cls in zip(pairs.select("name", "kind").iter_rows(), klass, strict=True)]
    return pairs.with_columns(pl.Series("colour", colours, dtype=pl.String))


def blend(colour: str, level: int) -> str:
    """`colour` mixed with white: level LEVELS-1 is the colour itself, level 0 the palest."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    share = 0.3 + 0.7 * level / (LEVELS - 1)
    mix = [round(255 - (255 - c) * share) for c in (red, green, blue)]
    return "#{:02x}{:02x}{:02x}".format(*mix)
