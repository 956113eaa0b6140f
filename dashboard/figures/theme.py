"""One plotly template for every chart, matching the app's Bootstrap theme."""

from __future__ import annotations

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
PASS_COLOURS = {"forward": "#0072B2", "backward": "#D55E00", "optimizer": "#009E73", "unattributed": "#999999",
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


def colour_for(key: str) -> str:
    """A stable colour for a name, the same in every chart and every process."""
    # A fixed string hash (not Python's salted hash) keeps colours stable across workers.
    value = 0
    for char in key.encode("utf-8"):
        value = (value * 131 + char) % 1_000_000_007
    return PALETTE[value % len(PALETTE)]


def empty_figure(message: str) -> go.Figure:
    """A blank chart that says why it is blank."""
    figure = go.Figure(layout={"template": TEMPLATE})
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                          font={"size": 14, "color": "#6c757d"})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure
