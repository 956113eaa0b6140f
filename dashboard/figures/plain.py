"""A figure as the JSON-native dict a browser receives (lists, not numpy arrays; no plotly objects).

Built once and cached, such a dict is what a page can hand `dcc.Graph` on every load: serialising it
is the json module's C encoder over plain values, where a `go.Figure` would first be validated again
(a dict of 100 k points: ~12 ms) and every numpy array of it converted by plotly's encoder hook.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
from _plotly_utils.utils import PlotlyJSONEncoder


def plain(figure: go.Figure) -> dict[str, Any]:
    """`figure` as plain JSON values (arrays as lists), as Dash would send the figure itself."""
    return json.loads(json.dumps(figure.to_plotly_json(), cls=PlotlyJSONEncoder))


def plain_figures(figures: Mapping[str, go.Figure]) -> dict[str, dict[str, Any]]:
    """Each of a page's named figures as `plain` values."""
    return {name: plain(figure) for name, figure in figures.items()}
