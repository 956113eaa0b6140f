"""The scripts every page loads: the ES5 polyfill is left out, its one needed part served instead."""

from __future__ import annotations

import re
from pathlib import Path

from dashboard.app import create_app
from dashboard.settings import Settings
from tests.support.page_scripts import page_scripts


def test_index_serves_regenerator_runtime_before_dash_renderer_and_no_babel_polyfill(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    scripts = page_scripts(app.server.test_client(), "/kernels")
    assert scripts
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
    scripts = page_scripts(app.server.test_client(), "/kernels")
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
    assert [re.sub(r"\.v[\w]+\.js$", ".js", src.rsplit("/", 1)[1]) for src in chunks] == ["async-graph.js"]
    dcc_bundle = next(i for i, src in enumerate(scripts) if "/dash_core_components." in src)
    assert all(scripts.index(src) > dcc_bundle for src in chunks)
    for src in chunks:
        response = client.get(src)
        assert response.status_code == 200 and "max-age=31536000" in response.headers["Cache-Control"]


def _lazy_libraries(html_text: str) -> dict:
    import html
    import json

    found = re.search(r'<meta name="dashboard-lazy-libraries" content="([^"]*)">', html_text)
    return json.loads(html.unescape(found.group(1))) if found else {}


def test_ag_grid_and_cytoscape_come_as_tags_only_where_the_first_screen_draws_them(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    for path, tagged, deferred in (("/insights", set(), {"dash_ag_grid", "dash_cytoscape"}),
                                   ("/kernels", set(), {"dash_ag_grid", "dash_cytoscape"}),
                                   ("/", {"dash_ag_grid"}, {"dash_cytoscape"}),
                                   # /planner paints its graph's preview first; Cytoscape comes after the charts
                                   ("/planner", set(), {"dash_ag_grid", "dash_cytoscape"}),
                                   ("/compiler/", {"dash_cytoscape"}, {"dash_ag_grid"})):
        page = client.get(path).get_data(as_text=True)
        scripts = re.findall(r'<script src="([^"]+)"', page)
        assert {name for name in ("dash_ag_grid", "dash_cytoscape") if any(f"/{name}/" in s for s in scripts)} == tagged
        libraries = _lazy_libraries(page)
        assert set(libraries) == deferred, path
        for library in libraries.values():
            # The versioned URL the tag would have had: served, and cached like the page's scripts.
            response = client.get(library["src"])
            assert response.status_code == 200 and "max-age=31536000" in response.headers["Cache-Control"]
    assert _lazy_libraries(client.get("/insights").get_data(as_text=True))["dash_ag_grid"]["types"] == ["AgGrid"]
    # The stand-ins are defined before the renderer draws the layout.
    scripts = page_scripts(client, "/insights")
    stand_ins = next(i for i, src in enumerate(scripts) if "/assets/lazy-libraries.js" in src)
    assert stand_ins < next(i for i, src in enumerate(scripts) if "dash_renderer" in src)


def test_lazy_libraries_paths_under_a_prefix() -> None:
    from dashboard.layouts.lazy_libraries import app_path, defer_libraries

    assert app_path("/team/planner", "/team/") == "/planner"
    assert app_path("/team/", "/team/") == "/" and app_path("/team", "/team/") == "/"
    assert app_path("/kernels/", "/") == "/kernels"
    tags = ('<script src="/p/_dash-component-suites/dash_ag_grid/dash_ag_grid.v1.min.js"></script>\n'
            '<script src="/p/_dash-component-suites/dash_cytoscape/dash_cytoscape.v2.min.js"></script>\n'
            '<script src="/p/assets/x.js"></script>')
    kept, meta = defer_libraries(tags, "/")
    assert "dash_ag_grid.v1" in kept and "dash_cytoscape" not in kept and "/assets/x.js" in kept
    assert "dash_cytoscape.v2.min.js" in meta and "dash_ag_grid" not in meta
    assert defer_libraries('<script src="/assets/x.js"></script>', "/insights") == (
        '<script src="/assets/x.js"></script>', "")


def test_component_scripts_are_served_with_v8s_compile_hint_first_and_still_gzipped(tmp_path: Path) -> None:
    import gzip

    from dashboard.server.compile_hints import COMPILE_HINT

    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    scripts = re.findall(r'<script src="([^"]+)"', client.get("/compiler/").get_data(as_text=True))
    suites = [src for src in scripts if "/_dash-component-suites/" in src]
    assert any("react-dom" in src for src in suites) and any("dash_cytoscape" in src for src in suites)
    for src in suites:
        response = client.get(src, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200 and response.headers["Content-Encoding"] == "gzip", src
        body = gzip.decompress(response.get_data())
        assert body.startswith(COMPILE_HINT) and not body[len(COMPILE_HINT):].startswith(COMPILE_HINT), src
        assert "max-age=31536000" in response.headers["Cache-Control"]
    # The app's own assets are served as they are; the file that joins them starts with the hint once.
    assert not client.get("/assets/after-charts.js").get_data().startswith(COMPILE_HINT)
    joined = next(src for src in scripts if "/_bundles/" in src)
    body = client.get(joined).get_data()
    assert body.startswith(COMPILE_HINT) and body.count(COMPILE_HINT) == 1


def test_no_page_loads_dash_tables_script(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    for path in ("/", "/kernels", "/planner"):
        scripts = re.findall(r'<script src="([^"]+)"', client.get(path).get_data(as_text=True))
        assert scripts and not any("/dash_table/" in src for src in scripts), path


def test_the_grids_chunk_comes_as_a_versioned_tag_where_the_grid_does_and_nowhere_else(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    runs = re.findall(r'<script src="([^"]+)"', client.get("/").get_data(as_text=True))
    grid = next(i for i, src in enumerate(runs) if "/dash_ag_grid/dash_ag_grid." in src)
    chunk = next(i for i, src in enumerate(runs) if "/dash_ag_grid/async-community.v" in src)
    assert grid < chunk
    response = client.get(runs[chunk])
    assert response.status_code == 200 and "max-age=31536000" in response.headers["Cache-Control"]
    for path in ("/insights", "/kernels", "/planner"):  # grids drawn after the charts: library and chunk later
        scripts = re.findall(r'<script src="([^"]+)"', client.get(path).get_data(as_text=True))
        assert not any("/dash_ag_grid/" in src for src in scripts), path
