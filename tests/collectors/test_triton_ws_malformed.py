"""Malformed DOT and planner text: clear errors naming file and line, or documented tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress
from dashboard.collectors.dot.grammar import parse_dot
from dashboard.collectors.dot.graph import DotSyntaxError
from dashboard.collectors.triton_ws.collector import COLLECTOR
from dashboard.demo import ws_dumps
from dashboard.demo.ws_dump_text import Kernel, combined_graph, smem_liveness, tmem_liveness


@pytest.fixture(scope="module")
def kernel() -> Kernel:
    return ws_dumps.attention_kernel()


def _dump(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_truncated_dump_file_names_file_and_line(tmp_path: Path, kernel: Kernel) -> None:
    text = combined_graph(kernel)
    path = _dump(tmp_path, "combined_graph_1.dot", text[: len(text) // 2])
    with pytest.raises(IngestError) as error:
        COLLECTOR.collect([path], no_progress)
    assert error.value.path == str(path)
    assert "line 4" in error.value.problem and "no closing `}` line" in error.value.problem


def test_missing_inner_brace_is_unbalanced(tmp_path: Path, kernel: Kernel) -> None:
    text = smem_liveness(kernel)
    start = text.index("  subgraph cluster_smem_3 {")
    broken = text[:start] + text[start:].replace("\n  }\n", "\n", 1)
    path = _dump(tmp_path, "smem_liveness_0.dot", broken)
    with pytest.raises(IngestError) as error:
        COLLECTOR.collect([path], no_progress)
    # The block ends at its `}` line, where the parser is still inside a cluster.
    closing_line = broken.count("\n", 0, broken.rindex("\n}\n") + 1) + 1
    assert f"line {closing_line}:" in error.value.problem
    assert "unbalanced braces" in error.value.problem


def test_extra_brace_points_at_its_line(tmp_path: Path, kernel: Kernel) -> None:
    text = tmem_liveness(kernel)
    anchor = "  // TMEM Alloc: acc0\n"
    broken = text.replace(anchor, "  }\n" + anchor, 1)
    path = _dump(tmp_path, "tmem_liveness_2.dot", broken)
    with pytest.raises(IngestError) as error:
        COLLECTOR.collect([path], no_progress)
    # The stray `}` closes the graph; the next statement is where the text stops being DOT.
    assert f"line {_line_of(broken, anchor) + 1}: unexpected 'subgraph' after the graph was closed" in (
        error.value.problem)


def test_unknown_attributes_and_statements_are_tolerated(tmp_path: Path, kernel: Kernel) -> None:
    text = combined_graph(kernel)
    decorated = (
        text.replace("  compound=true;\n", "  compound=true;\n  splines=ortho;\n  graph [bgcolor=\"#fafafa\"];\n")
        .replace(", color=darkgreen];", ", color=darkgreen, tooltip=\"x\"; penwidth=2];")
        .replace("    color=blue;\n", "    color=blue;\n    margin=\"8,8\";\n")
    )
    clean = COLLECTOR.collect([_dump(tmp_path, "combined_graph_1.dot", text)], no_progress)
    tolerant = COLLECTOR.collect([_dump(tmp_path / "b", "combined_graph_1.dot", decorated)], no_progress)
    assert tolerant.warnings == []
    for table in ("ws_ops", "ws_channels"):
        assert tolerant.tables[table].drop("group").equals(clean.tables[table].drop("group"))


def test_empty_forms_are_zero_buffers_with_a_note(tmp_path: Path, kernel: Kernel) -> None:
    hopper = ws_dumps.gemm_kernel(debug=True)
    hopper.tmem = []
    paths = [_dump(tmp_path, "combined_graph_0.dot", combined_graph(hopper)),
             _dump(tmp_path, "tmem_liveness_1.dot", tmem_liveness(hopper))]
    result = COLLECTOR.collect(paths, no_progress)
    assert "No TMEM allocations" in tmem_liveness(hopper)
    assert "ws_buffers" not in result.tables
    assert "TMEM liveness: No TMEM allocations" in result.metadata["groups"][0]["notes"]


def test_lone_empty_smem_file_warns_but_does_not_fail(tmp_path: Path, kernel: Kernel) -> None:
    empty = ws_dumps.attention_kernel()
    empty.smem = []
    run = registry.collect([_dump(tmp_path, "smem_liveness_6.dot", smem_liveness(empty))])
    assert run.tables == {}
    assert any("no combined graph" in w for w in run.warnings)


def test_empty_file_and_non_dot_text(tmp_path: Path) -> None:
    blank = _dump(tmp_path, "blank.dot", "  \n\n")
    with pytest.raises(IngestError, match="empty"):
        COLLECTOR.collect([blank], no_progress)


def test_plain_dot_syntax_error_names_line(tmp_path: Path) -> None:
    path = _dump(tmp_path, "g.dot", "// header\ndigraph g {\n  a -> b;\n  c -> -> d;\n}\n")
    with pytest.raises(IngestError) as error:
        registry.collect([path])
    assert error.value.path == str(path)
    assert "line 4: unexpected '->'" in error.value.problem


def test_log_with_truncated_last_block_keeps_the_complete_ones(tmp_path: Path, kernel: Kernel) -> None:
    text = ws_dumps.debug_log_text([("attn", kernel, True)])
    cut = text[: text.rindex("digraph TmemBufferLiveness {") + 200]
    log = _dump(tmp_path, "crash.log", cut)
    run = registry.collect([log])
    assert run.metadata["triton_ws"]["groups"][0]["graphs"] == ["smem", "combined"]
    line = _line_of(cut, "digraph TmemBufferLiveness {")
    assert any(f"line {line}:" in w and "no closing" in w for w in run.warnings)


def test_log_with_only_a_truncated_block_fails(tmp_path: Path, kernel: Kernel) -> None:
    text = ws_dumps.debug_log_text([("attn", kernel, False)])
    cut = text[: text.index("digraph CombinedGraph {") + 300]
    with pytest.raises(IngestError, match="no closing"):
        COLLECTOR.collect([_dump(tmp_path, "only.log", cut)], no_progress)


def test_planner_log_without_graphs_fails_clearly(tmp_path: Path) -> None:
    log = _dump(tmp_path, "planner.log", "[nvgpu-ws-memory-planner]: tmem liveness: 44 98\nother output\n")
    with pytest.raises(IngestError, match="without any complete `digraph` block"):
        registry.collect([log])


def test_garbled_buffer_label_is_skipped_with_its_line(tmp_path: Path, kernel: Kernel) -> None:
    second = kernel.smem[1]
    label = f'label="{second.name} B{second.alloc_id} ['
    garbled = smem_liveness(kernel).replace(label, f'label="{second.name} B{second.alloc_id} <', 1)
    result = COLLECTOR.collect([_dump(tmp_path, "smem_liveness_0.dot", garbled)], no_progress)
    line = _line_of(garbled, f'label="{second.name} B{second.alloc_id} <')
    assert any(f"line {line}:" in w and "not understood" in w for w in result.warnings)
    assert result.tables["ws_buffers"].height == len(kernel.smem) - 1


def test_summary_table_mismatch_is_reported(tmp_path: Path, kernel: Kernel) -> None:
    text = smem_liveness(kernel)
    first = kernel.smem[0]
    edited = text.replace(f"<TD>[{first.start}-{first.end})</TD>", f"<TD>[{first.start}-{first.end + 5})</TD>", 1)
    result = COLLECTOR.collect([_dump(tmp_path, "smem_liveness_0.dot", edited)], no_progress)
    assert any("summary table" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("digraph { a -> b", 1, "unbalanced braces"),
        ("digraph {\n a [label=\"x] \n}", 2, "unterminated attribute list"),
        ("digraph {\n\n a [label=] }", 3, "malformed attribute list"),
        ("digraph { a @ b }", 1, "unexpected character '@'"),
        ("digraph {\n a -> b }\n}", 3, "unexpected '}'"),
    ],
)
def test_grammar_errors(text: str, line: int, words: str) -> None:
    with pytest.raises(DotSyntaxError) as error:
        parse_dot(text)
    assert error.value.line == line
    assert words in error.value.message


def test_grammar_empty_graph_forms() -> None:
    for text in ("digraph {}", "graph G { }", "strict digraph \"x\" {\n}\n"):
        (graph,) = parse_dot(text)
        assert graph.nodes == {} and graph.edges == []


def test_garbled_block_in_a_log_is_left_out_with_its_line(tmp_path: Path, kernel: Kernel) -> None:
    gemm = ws_dumps.gemm_kernel(debug=True)
    text = ws_dumps.debug_log_text([("attn", kernel, True), ("mm", gemm, False)])
    # Program output interleaved into the first combined graph by `2>&1`.
    anchor = "  // Channel edges\n"
    garbled = text.replace(anchor, "  100%|#####| 1/1 [00:01<00:00]\n" + anchor, 1)
    run = registry.collect([_dump(tmp_path, "mixed.log", garbled)])
    groups = run.metadata["triton_ws"]["groups"]
    assert [g["graphs"] for g in groups] == [["smem", "tmem"], ["combined", "tmem"]]
    line = _line_of(garbled, "  100%|")
    assert any(f"line {line}:" in w and "left out" in w for w in run.warnings)
    assert run.tables["ws_ops"]["group"].unique().to_list() == ["mixed.log#2 mm"]


def test_stray_nodes_and_colliding_pointer_ids_are_reported(tmp_path: Path) -> None:
    gemm = ws_dumps.gemm_kernel(debug=False)
    gemm.ops[-1].pointer = gemm.ops[-2].pointer  # two ops hash to the same node id
    text = combined_graph(gemm).replace("  // Channel edges\n", "  INFO\n  // Channel edges\n", 1)
    result = COLLECTOR.collect([_dump(tmp_path, "combined_graph_0.dot", text)], no_progress)
    assert any("ignored 1 nodes" in w and "INFO" in w for w in result.warnings)
    assert any("declared again with another label" in w for w in result.warnings)
    assert result.tables["ws_ops"].height == len(gemm.ops) - 1
