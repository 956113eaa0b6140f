"""One plotly template for every chart, matching the app's Bootstrap theme."""

from __future__ import annotations

import colorsys
from collections.abc import Iterable
from functools import lru_cache

import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE_NAME = "dashboard"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
# Colour-blind-safe qualitative palette (Okabe-Ito first, then Tableau).
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
    "#4E79A7", "#F28E2B", "#59A14F", "#E15759", "#B07AA1", "#76B7B2", "#EDC948",
    "#FF9DA7", "#9C755F", "#BAB0AC",
)
MEMORY_COLOURS = {"SMEM": "#2ca02c", "TMEM": "#d62728"}
PASS_COLOURS = {"forward": "#0072B2", "backward": "#D55E00", "optimizer": "#009E73", "other": "#882255",
                "unattributed": "#999999",
                "none": "#999999"}  # "none": runs ingested before passes were unattributed / optimizer


def _build() -> go.layout.Template:
    template = go.layout.Template()
    template.layout = go.Layout(
        font={"family": FONT, "size": 13, "color": "#212529"},
        colorway=list(PALETTE),
        paper_bgcolor="white",
        plot_bgcolor="white",
        margin={"l": 60, "r": 20, "t": 48, "b": 48},
        title={"x": 0.0, "xanchor": "left", "font": {"size": 15}},
        hoverlabel={"font": {"family": FONT, "size": 12}},
        legend={"orientation": "h", "y": -0.18},
        # "allow": plotly's default for numeric axes ("hide past div") measures every tick label once per
        # label drawn (a forced layout each, ~40 ms a page); the SVG clips at its edge anyway.
        xaxis={"gridcolor": "#e9ecef", "zerolinecolor": "#dee2e6", "linecolor": "#adb5bd", "ticks": "outside",
               "ticklabeloverflow": "allow"},
        yaxis={"gridcolor": "#e9ecef", "zerolinecolor": "#dee2e6", "linecolor": "#adb5bd", "ticks": "outside",
               "ticklabeloverflow": "allow"},
    )
    return template


pio.templates[TEMPLATE_NAME] = _build()
TEMPLATE = TEMPLATE_NAME


@lru_cache(maxsize=16384)  # walks every byte of a (long) kernel name; names repeat across every redraw
def colour_for(key: str) -> str:
    """A stable colour for a name, the same in every chart and every process."""
    # A fixed string hash (not Python's salted hash) keeps colours stable across workers.
    value = 0
    for char in key.encode("utf-8"):
        value = (value * 131 + char) % 1_000_000_007
    return PALETTE[value % len(PALETTE)]


_GOLDEN_TURN = 0.381966  # hue step that keeps generated hues far apart however many are drawn


@lru_cache(maxsize=1)
def _extra_colours() -> tuple[str, ...]:
    """Colours past the palette: hues a golden-angle turn apart, three lightness levels, none repeated."""
    seen, extra = set(PALETTE), []
    for number in range(600):
        hue = (0.07 + number * _GOLDEN_TURN) % 1.0
        lightness = (0.38, 0.52, 0.66)[number % 3]
        red, green, blue = colorsys.hls_to_rgb(hue, lightness, 0.62)
        colour = f"#{round(red * 255):02X}{round(green * 255):02X}{round(blue * 255):02X}"
        if colour not in seen:
            seen.add(colour)
            extra.append(colour)
    return tuple(extra)


def distinct_colours(keys: Iterable[str]) -> dict[str, str]:
    """One colour per distinct key within a chart, in the given order (most important first).

    A key keeps its stable colour (colour_for) when no earlier key took it, so a
    kernel mostly looks the same across charts; otherwise it gets the first free
    palette colour, then generated ones. Past ~600 keys colours repeat (no eye tells them apart anyway).
    """
    return dict(_distinct_colours(tuple(keys)))


@lru_cache(maxsize=64)  # a page's bar chart and scatter ask for the same keys; a selection redraws both
def _distinct_colours(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    colours: dict[str, str] = {}
    taken: set[str] = set()
    spare = iter((*PALETTE, *_extra_colours()))
    for key in keys:
        if key in colours:
            continue
        colour = colour_for(key)
        if colour in taken:
            colour = next((c for c in spare if c not in taken), colour)
        taken.add(colour)
        colours[key] = colour
    return tuple(colours.items())


def empty_figure(message: str) -> go.Figure:
    """A blank chart that says why it is blank: one line's height, not a card of empty axes."""
    figure = go.Figure(layout={"template": TEMPLATE, "height": 160, "margin": {"t": 20, "b": 20}})
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                          font={"size": 14, "color": "#6c757d"})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure
