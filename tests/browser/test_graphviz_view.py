"""/planner for a plain DOT graph with HTML-table labels: drawn by Graphviz, text inside its boxes,
zoomable, nodes clickable."""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Frame, Page, expect

from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.dot_graphs import TABLES_DOT

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (dot) not installed; .ci/run installs it")

# Every <text> of a node must lie inside the smallest box of that node that holds its centre (a table
# cell; the node's own shape for a plain label): text spilling out of a cell is what this catches.
SPILLS_JS = """() => {
    const spills = [];
    for (const node of document.querySelectorAll('g.node')) {
        const boxes = [...node.querySelectorAll('polygon, ellipse, path')].map(s => s.getBBox())
            .filter(b => b.width > 0 && b.height > 0);
        for (const text of node.querySelectorAll('text')) {
            const t = text.getBBox(), cx = t.x + t.width / 2, cy = t.y + t.height / 2;
            const holding = boxes.filter(b => b.x <= cx && cx <= b.x + b.width && b.y <= cy && cy <= b.y + b.height)
                .sort((p, q) => p.width * p.height - q.width * q.height);
            const cell = holding[0];
            if (!cell || t.x < cell.x - 0.5 || t.x + t.width > cell.x + cell.width + 0.5
                    || t.y < cell.y - 0.5 || t.y + t.height > cell.y + cell.height + 0.5) {
                spills.push(node.querySelector('title').textContent + ': ' + text.textContent);
            }
        }
    }
    return spills;
}"""


@pytest.fixture(autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=15_000)
    yield
    expect.set_options(timeout=5_000)


@pytest.fixture(scope="module")
def tables_run(server, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("graphviz") / "launch_order.dot"
    path.write_text(TABLES_DOT)
    return ingest_paths(RunStore(server.data_dir), [path], name="launch-order")


def open_drawing(page: Page, server, run_id: str) -> Frame:
    page.goto(f"{server.url}/planner?run={run_id}")
    frame_element = page.locator("iframe#planner-dot-svg")
    expect(frame_element).to_have_attribute("data-ready", "1", timeout=30_000)
    frame = frame_element.element_handle().content_frame()
    assert frame is not None
    return frame


def test_html_table_labels_are_drawn_by_graphviz_with_text_inside_boxes(
        page: Page, server, tables_run: str, console_errors: list[str]) -> None:
    page.set_viewport_size({"width": 1440, "height": 1000})
    frame = open_drawing(page, server, tables_run)
    titles = frame.evaluate("() => [...document.querySelectorAll('g.node > title')].map(t => t.textContent)")
    assert sorted(titles) == ["g0", "g1", "link"]
    cells = frame.evaluate("() => [...document.querySelectorAll('g.node text')].map(t => t.textContent)")
    assert "tl.program_id(axis=0) // num_pid_in_group" in cells and "pid 2 (second column)" in cells
    assert frame.evaluate(SPILLS_JS) == []
    # The first view of this small graph is all of it, at a readable size.
    zoom = float(page.locator("iframe#planner-dot-svg").get_attribute("data-zoom"))
    assert zoom >= 0.6
    # Nothing of the file's `URL="javascript:..."` reaches the page.
    assert frame.evaluate("() => document.querySelectorAll('a, script, [href]').length") == 0
    assert console_errors == []


def test_wheel_and_buttons_zoom_and_a_click_shows_the_nodes_attributes(
        page: Page, server, tables_run: str, console_errors: list[str]) -> None:
    frame = open_drawing(page, server, tables_run)
    frame_element = page.locator("iframe#planner-dot-svg")
    before = float(frame_element.get_attribute("data-zoom"))
    box = frame_element.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)  # up: zoom in about the pointer
    expect(frame_element).not_to_have_attribute("data-zoom", f"{before:.4f}")
    assert float(frame_element.get_attribute("data-zoom")) > before
    page.locator("[data-dot-zoom='actual']").click()
    expect(frame_element).to_have_attribute("data-zoom", "1.0000")
    page.locator("[data-dot-zoom='out']").click()
    expect(frame_element).to_have_attribute("data-zoom", "0.8000")
    page.locator("[data-dot-zoom='fit']").click()

    frame.locator("g.node", has=frame.locator("title", has_text="link")).click()
    details = page.locator("#planner-dot-details")
    expect(details.locator(".dot-picked-name")).to_have_text("link")
    expect(details).to_contain_text("click me")  # its label
    expect(details).to_contain_text("shape")
    expect(details).to_contain_text("javascript:alert(document.cookie)")  # shown as text, never a link
    assert frame.evaluate("() => document.querySelector('.dot-picked > title').textContent") == "link"
    frame.locator("g.edge text", has_text="next group").click()  # the edge's label
    expect(details.locator(".dot-picked-name")).to_have_text("g0 → g1")
    expect(details).to_contain_text("next group")
    assert console_errors == []


def test_the_svg_route_serves_a_locked_down_drawing_and_a_download(server, tables_run: str) -> None:
    with urllib.request.urlopen(f"{server.url}/runs/{tables_run}/graph.svg?group=launch_order.dot") as response:
        assert response.headers["Content-Type"].startswith("image/svg+xml")
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        body = response.read().decode()
    assert body.startswith("<svg") and "javascript" not in body
    with urllib.request.urlopen(f"{server.url}/runs/{tables_run}/graph.svg?group=launch_order.dot&download=1") as r:
        assert r.headers["Content-Disposition"] == f'attachment; filename="{tables_run}-launch_order.dot.svg"'
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{server.url}/runs/{tables_run}/graph.svg?group=nope")
    assert missing.value.code == 404


def test_without_graphviz_the_page_says_so_and_draws_the_builtin_layout(
        page: Page, server, tables_run: str, console_errors: list[str], tmp_path: Path) -> None:
    """A second server whose PATH has no `dot` (python is started by its absolute path)."""
    from tests.browser.conftest import start_server

    no_dot = tmp_path / "bin"
    no_dot.mkdir()
    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    shutil.copytree(server.data_dir / "runs" / tables_run, data / "runs" / tables_run)
    other = start_server(data, tmp_path / "server.log", "--no-demo", env={"PATH": str(no_dot)})
    try:
        page.goto(f"{other.url}/planner?run={tables_run}")
        notice = page.locator("#planner-dot-graphviz-missing")
        expect(notice).to_contain_text("Graphviz is not installed on this server", timeout=30_000)
        expect(notice).to_contain_text("apt-get install -y graphviz")
        page.wait_for_function("() => { const el = document.querySelector('#planner-dot-graph');"
                               " return el && el._cyreg && el._cyreg.cy.nodes().length === 3; }", timeout=30_000)
        expect(page.locator("iframe#planner-dot-svg")).to_have_count(0)
    finally:
        other.stop()
    assert console_errors == []


def test_a_big_graph_opens_readable_and_fit_shows_all_of_it(page: Page, server, tmp_path: Path,
                                                            console_errors: list[str]) -> None:
    """80 table nodes in a row: fitting all of it would make 14 pt text ~2 px; the first view stays
    readable (zoom >= 0.6, from the left end) and "Fit" is one click away."""
    cells = "".join(f'n{i} [label=<<TABLE><TR><TD>block {i}</TD><TD>pid {i * 8}</TD></TR></TABLE>>];\n'
                    for i in range(80))
    chain = " -> ".join(f"n{i}" for i in range(80))
    path = tmp_path / "wide.dot"
    path.write_text(f"digraph wide {{ rankdir=LR; node [shape=plaintext];\n{cells}{chain};\n}}\n")
    run_id = ingest_paths(RunStore(server.data_dir), [path], name="wide")
    page.set_viewport_size({"width": 1440, "height": 1000})
    frame = open_drawing(page, server, run_id)
    frame_element = page.locator("iframe#planner-dot-svg")
    assert float(frame_element.get_attribute("data-zoom")) >= 0.6
    # The first node is in view, at a size where its text is at least 11 px tall on screen.
    first = frame.evaluate("""() => { const t = [...document.querySelectorAll('g.node text')]
        .find(e => e.textContent === 'block 0').getBoundingClientRect();
        return {left: t.left, right: t.right, height: t.height, width: innerWidth}; }""")
    assert first["left"] >= 0 and first["right"] <= first["width"] and first["height"] >= 11
    page.locator("[data-dot-zoom='fit']").click()
    assert float(frame_element.get_attribute("data-zoom")) < 0.2
    assert console_errors == []
