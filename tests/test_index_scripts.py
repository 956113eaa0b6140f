"""The scripts every page loads: the ES5 polyfill is left out, its one needed part served instead."""

from __future__ import annotations

import re
from pathlib import Path

from dashboard.app import create_app
from dashboard.settings import Settings


def test_index_serves_regenerator_runtime_before_dash_renderer_and_no_babel_polyfill(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    html = app.server.test_client().get("/kernels").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts, html
    assert not any("polyfill@" in src for src in scripts)
    # dash-renderer, dcc and dash-bootstrap-components call the global `regeneratorRuntime` when they
    # load a lazy component (dcc.Graph among them): it must be there before the renderer starts.
    runtime = next(i for i, src in enumerate(scripts) if "/assets/regenerator-runtime-" in src)
    renderer = next(i for i, src in enumerate(scripts) if "dash_renderer" in src)
    assert runtime < renderer
    # React still comes first.
    assert "react@" in scripts[0]


def test_after_charts_is_served_before_dash_renderer_and_serialises_to_its_namespace(tmp_path: Path) -> None:
    from dash import html

    from dashboard.layouts.after_charts import AfterCharts
    from dashboard.layouts.browser_component import NAMESPACE

    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    html_text = app.server.test_client().get("/kernels").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', html_text)
    # The renderer resolves window.dashboard_components.AfterCharts when it draws the layout.
    defined = next(i for i, src in enumerate(scripts) if "/assets/after-charts.js" in src)
    assert defined < next(i for i, src in enumerate(scripts) if "dash_renderer" in src)
    assert "window.dashboard_components" in (Path(app.config.assets_folder) / "after-charts.js").read_text()
    wrapped = AfterCharts(html.Div("table"), id="late", min_height=420).to_plotly_json()
    assert wrapped["namespace"] == NAMESPACE and wrapped["type"] == "AfterCharts"
    assert wrapped["props"]["min_height"] == 420 and wrapped["props"]["id"] == "late"


def test_the_head_preloads_the_layout_and_the_callbacks_under_the_path_prefix(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    head = app.server.test_client().get("/kernels").get_data(as_text=True).split("</head>")[0]
    preloads = re.findall(r'<link rel="preload" href="([^"]+)" as="fetch" crossorigin>', head)
    prefix = app.config.requests_pathname_prefix
    assert preloads == [f"{prefix}_dash-layout", f"{prefix}_dash-dependencies"]


def test_the_charts_and_pickers_chunks_come_with_the_scripts_versioned_and_cached(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    scripts = re.findall(r'<script src="([^"]+)"', client.get("/kernels").get_data(as_text=True))
    chunks = [src for src in scripts if "/async-" in src]
    assert [re.sub(r"\.v[\w]+\.js$", ".js", src.rsplit("/", 1)[1]) for src in chunks] == [
        "async-dropdown.js", "async-graph.js"]
    dcc_bundle = next(i for i, src in enumerate(scripts) if "/dash_core_components." in src)
    assert all(scripts.index(src) > dcc_bundle for src in chunks)
    for src in chunks:
        response = client.get(src)
        assert response.status_code == 200 and "max-age=31536000" in response.headers["Cache-Control"]
