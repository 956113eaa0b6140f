"""The floor under every page's first render: a bare Dash app, one small bar chart, nothing of ours.

    python benchmarks/bare_dash.py PORT

Same Dash, same plotly.js bundle (a copy of the dashboard's, in a temporary assets folder), one `dcc.Graph`
of three bars in a `div#kernels-page`, so `first_render.py`'s probe times it as it times /kernels. What it
takes on a machine is what Dash, React and plotly cost before any page of the dashboard adds its own work:
`first_render.py` prints it beside the pages as their reference.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "dashboard" / "assets"


def main() -> None:
    from dash import Dash, dcc, html

    with tempfile.TemporaryDirectory(prefix="bare-dash-") as folder:
        for bundle in ASSETS.glob("plotly-*.min.js"):
            shutil.copy(bundle, folder)
        app = Dash(__name__, assets_folder=folder)
        figure = {"data": [{"type": "bar", "x": [3, 1, 2], "y": ["a", "b", "c"], "orientation": "h"}],
                  "layout": {"height": 400, "title": {"text": "three bars"}}}
        app.layout = html.Div([html.H3("bare Dash"), dcc.Graph(id="bars", figure=figure)], id="kernels-page")
        app.run(host="127.0.0.1", port=int(sys.argv[1]), debug=False)


if __name__ == "__main__":
    main()
