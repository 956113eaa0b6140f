"""Plain DOT drawn by the real Graphviz: sanitised SVG, limits, the source read back from a run,
what a click names, and the page without Graphviz."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dashboard.analysis.dot_sources import DotSourceMissing, element_details, plain_graph_source
from dashboard.figures import graphviz_svg
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.dot_graphs import TABLES_DOT

NEEDS_DOT = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (dot) not installed; .ci/run installs it")
SVG = "{http://www.w3.org/2000/svg}"

TWO_GRAPHS = "graph one { a -- b }\ndigraph two { x -> y -> z }\n"


@NEEDS_DOT
def test_html_tables_are_drawn_by_graphviz_and_nothing_in_the_svg_can_run() -> None:
    drawing = graphviz_svg.render_svg(TABLES_DOT)
    root = ET.fromstring(drawing.svg)
    titles = {g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if g.get("class") == "node"}
    assert titles == {"g0", "g1", "link"}
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "tl.program_id(axis=0) // num_pid_in_group" in texts and "group 0" in texts
    # Graphviz wraps a node with URL in <a xlink:href="javascript:...">: the link goes, the node stays.
    assert "javascript" not in drawing.svg and "href" not in drawing.svg and "_top" not in drawing.svg
    assert drawing.width > 300 and drawing.height > 50  # CSS px from Graphviz's pt


def test_sanitise_drops_scripts_handlers_links_and_foreign_content() -> None:
    hostile = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
               'width="10pt" height="20pt" viewBox="0 0 10 20" onload="alert(1)"><script>alert(2)</script>'
               '<g class="node" onclick="alert(3)"><title>n</title><a xlink:href="javascript:alert(4)">'
               '<text>n</text></a><image xlink:href="/etc/passwd"/><foreignObject><div/></foreignObject></g></svg>')
    drawing = graphviz_svg.sanitise(hostile)
    assert "alert" not in drawing.svg and "passwd" not in drawing.svg and "foreignObject" not in drawing.svg
    assert "<title>n</title>" in drawing.svg and ">n</text>" in drawing.svg
    assert (drawing.width, drawing.height) == pytest.approx((10 * 4 / 3, 20 * 4 / 3))


@NEEDS_DOT
def test_each_graph_of_a_file_is_drawn_on_its_own() -> None:
    second = ET.fromstring(graphviz_svg.render_svg(TWO_GRAPHS, index=1).svg)
    assert {g.find(f"{SVG}title").text for g in second.iter(f"{SVG}g") if g.get("class") == "node"} == {"x", "y", "z"}
    with pytest.raises(graphviz_svg.GraphvizFailed, match="drew 2 graphs, not graph 3"):
        graphviz_svg.render_svg(TWO_GRAPHS, index=2)


@NEEDS_DOT
def test_limits_and_refusals_are_one_line_each() -> None:
    with pytest.raises(graphviz_svg.GraphvizFailed, match=r"Graphviz refused the graph: .*syntax error"):
        graphviz_svg.render_svg("digraph { a -> }")
    big = "digraph big {\n" + "".join(f"n{i} -> n{(i * 7919) % 3000};\n" for i in range(3000)) + "}\n"
    with pytest.raises(graphviz_svg.GraphvizFailed, match=r"did not finish laying out the graph within 0 s"):
        graphviz_svg.render_svg(big, timeout=0.05)
    with pytest.raises(graphviz_svg.GraphvizFailed, match=r"over the 8 MiB"):
        graphviz_svg.run_dot("digraph { " + "a;" * (4 * 1024 * 1024) + "}")


def test_without_dot_on_path_drawing_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no `dot`
    result = graphviz_svg.draw(TABLES_DOT)
    assert result.drawing is None and result.missing
    assert result.problem is not None and "no `dot` program on PATH" in result.problem
    assert "apt-get install -y graphviz" in result.problem
    with pytest.raises(graphviz_svg.GraphvizMissing):
        graphviz_svg.run_dot(TABLES_DOT)


@pytest.fixture
def plain_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RunStore, str, str]:
    """A run of one file given by a relative path, and a run of a folder holding a two-graph file."""
    inputs = tmp_path / "inputs"
    (inputs / "dumps" / "deep").mkdir(parents=True)
    (inputs / "order.dot").write_text("=== planner header ===\n" + TABLES_DOT)
    (inputs / "dumps" / "deep" / "two.dot").write_text(TWO_GRAPHS)
    store = RunStore(tmp_path / "data")
    monkeypatch.chdir(inputs)
    single = ingest_paths(store, [Path("order.dot")], name="order")
    folder = ingest_paths(store, [Path("dumps")], name="folder")
    monkeypatch.chdir(tmp_path)  # read back from elsewhere: the run's own copy is used
    return store, single, folder


def test_a_plain_graph_is_read_back_from_the_runs_source_copy(plain_runs: tuple[RunStore, str, str]) -> None:
    store, single, folder = plain_runs
    source = plain_graph_source(store.open(single), "order.dot")
    assert source.path == store.open(single).info.path / "source" / "order.dot"
    # Header lines (the planner's `=== ... ===`, comments) are cut: Graphviz would refuse them.
    assert source.text.startswith("digraph launch_order") and (source.index, source.count) == (0, 1)
    run = store.open(folder)
    groups = [g["group"] for g in run.info.metadata["triton_ws"]["plain_graphs"]]
    second = plain_graph_source(run, groups[1])
    assert second.path == run.info.path / "source" / "dumps" / "deep" / "two.dot"
    assert (second.index, second.count) == (1, 2)
    with pytest.raises(DotSourceMissing, match="no plain DOT graph named 'nope'"):
        plain_graph_source(run, "nope")
    (run.info.path / "source" / "dumps" / "deep" / "two.dot").unlink()
    with pytest.raises(DotSourceMissing, match="copy of this DOT file is missing"):
        plain_graph_source(run, groups[0])


def test_a_click_names_the_rows_behind_it(plain_runs: tuple[RunStore, str, str]) -> None:
    store, single, _folder = plain_runs
    run = store.open(single)
    nodes, edges = run.frame("dot_nodes"), run.frame("dot_edges")
    (link,) = element_details(nodes, edges, "order.dot", "node", "link")
    assert link["label"] == "click me" and link["attributes"]["shape"] == "box"
    (edge,) = element_details(nodes, edges, "order.dot", "edge", "g0:first->g1:first")  # ports as Graphviz titles
    assert (edge["src"], edge["dst"], edge["label"]) == ("g0", "g1", "next group")
    assert element_details(nodes, edges, "order.dot", "node", "absent") == []
