"""StaticHtml: read-only markup as one component (layouts/static_html.py, assets/static-html.js)."""

from __future__ import annotations

from pathlib import Path

import dash_bootstrap_components as dbc
import pytest
from dash import dcc, html

from dashboard.app import create_app
from dashboard.layouts.browser_component import NAMESPACE
from dashboard.layouts.static_html import static_html, to_static
from dashboard.settings import Settings
from tests.support.dash_requests import components
from tests.support.page_scripts import page_scripts


def test_a_table_becomes_one_component_whose_nodes_keep_dashs_shape() -> None:
    table = dbc.Table([html.Thead(html.Tr([html.Th("kernel"), html.Th("time")])),
                       html.Tbody([html.Tr([html.Td("gemm", title="void gemm<float>()", className="kernel-name"),
                                            html.Td("1.2 ms")], **{"data-position": "3"})])],
                      size="sm", striped=True, hover=True, className="small", id="t")
    wrapped = static_html(table).to_plotly_json()
    assert (wrapped["namespace"], wrapped["type"]) == (NAMESPACE, "StaticHtml")
    tree = wrapped["props"]["tree"]
    # dbc.Table's classes, as dash-bootstrap-components draws them
    assert tree["type"] == "Table" and tree["props"]["id"] == "t"
    assert tree["props"]["className"].split() == ["table", "table-sm", "table-striped", "table-hover", "small"]
    cells = [c for c in components(tree) if c["type"] == "Td"]
    assert [c["props"]["children"] for c in cells] == ["gemm", "1.2 ms"]
    assert cells[0]["props"] == {"title": "void gemm<float>()", "className": "kernel-name", "children": "gemm"}
    row = next(c for c in components(tree) if c["type"] == "Tr" and c["props"].get("data-position"))
    assert row["props"]["data-position"] == "3"
    # no Dash component is left inside: the renderer sees one
    assert all("namespace" not in node for node in components(tree))


def test_responsive_tables_scroll_in_a_div_badges_and_in_page_links_keep_their_look() -> None:
    responsive = to_static(dbc.Table(html.Tbody(html.Tr(html.Td("x"))), responsive=True))
    assert responsive["type"] == "Div" and responsive["props"]["className"] == "table-responsive"
    assert responsive["props"]["children"]["type"] == "Table"
    badge = to_static(dbc.Badge("high", color="danger", className="me-2"))
    assert badge == {"type": "Span", "props": {"className": "badge bg-danger me-2", "children": "high"}}
    assert to_static(dbc.Badge("n"))["props"]["className"] == "badge bg-secondary"  # dbc's default colour
    link = to_static(dcc.Link("open", href="/timeline?run=a", className="finding-link"))
    assert link == {"type": "Link", "props": {"href": "/timeline?run=a", "className": "finding-link",
                                              "children": "open"}}
    # Dash's own props are not element attributes
    assert to_static(html.Div("a", n_clicks=3, disable_n_clicks=True)) == {"type": "Div", "props": {"children": "a"}}
    assert to_static(["a", 1, None, html.Br()]) == ["a", 1, None, {"type": "Br", "props": {}}]


@pytest.mark.parametrize("component", [dcc.Graph(id="g"), dbc.Button("b", id="b"),
                                       dcc.Link("x", href="/", refresh=True),
                                       dbc.Table(html.Tr(html.Td("x")), key="k")])
def test_what_is_not_plain_markup_is_refused_not_dropped(component: object) -> None:
    with pytest.raises(TypeError, match="static_html"):
        to_static(html.Div([html.Span("kept"), component]))


def test_the_script_is_served_before_dash_renderer_and_draws_links_as_dcc_link_does(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    scripts = page_scripts(app.server.test_client(), "/insights")
    defined = next(i for i, src in enumerate(scripts) if "/assets/static-html.js" in src)
    assert defined < next(i for i, src in enumerate(scripts) if "dash_renderer" in src)
    source = (Path(app.config.assets_folder) / "static-html.js").read_text()
    assert "StaticHtml" in source and "_dashprivate_pushstate" in source and "clean_url" in source
