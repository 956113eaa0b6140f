"""The triton_ws collector on fixtures written by the project's own dump generator."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import no_progress, probe_file
from dashboard.collectors.triton_ws.collector import COLLECTOR
from dashboard.demo import ws_dumps
from dashboard.demo.ws_dump_text import Kernel, combined_graph, node_id, smem_liveness, tmem_liveness


@pytest.fixture(scope="module")
def attention() -> Kernel:
    return ws_dumps.attention_kernel()


@pytest.fixture(scope="module")
def gemm() -> Kernel:
    return ws_dumps.gemm_kernel(debug=False)


@pytest.fixture
def demo_run(tmp_path: Path) -> registry.CollectedRun:
    return registry.collect(ws_dumps.write(tmp_path / "ws_graphs"))


def _groups(run: registry.CollectedRun) -> dict[str, dict]:
    return {g["group"]: g for g in run.metadata["triton_ws"]["groups"]}


def _of(frame: pl.DataFrame, group: str) -> pl.DataFrame:
    return frame.filter(pl.col("group") == group)


def test_demo_folder_is_two_compiles_in_counter_order(demo_run: registry.CollectedRun) -> None:
    groups = _groups(demo_run)
    assert list(groups) == ["ws_graphs#1", "ws_graphs#2"]
    assert groups["ws_graphs#1"]["graphs"] == ["smem", "combined", "tmem"]
    assert groups["ws_graphs#1"]["counters"] == [0, 1, 2]
    assert groups["ws_graphs#2"]["graphs"] == ["combined", "tmem"]
    assert groups["ws_graphs#2"]["op_ids"] is False
    assert demo_run.warnings == []
    buffers = demo_run.tables["ws_buffers"]
    first = _of(buffers, "ws_graphs#1")
    assert first.filter(pl.col("memory") == "SMEM").height == 13
    assert first.filter(pl.col("memory") == "TMEM").height == 6
    ops = _of(demo_run.tables["ws_ops"], "ws_graphs#1")
    assert ops.height == 60
    assert ops["partitions"].explode().n_unique() == 6
    assert _of(demo_run.tables["ws_channels"], "ws_graphs#1").height == 26
    assert _of(buffers, "ws_graphs#2").filter(pl.col("memory") == "SMEM").height == 0


def test_round_trip_reproduces_the_model(demo_run: registry.CollectedRun, attention: Kernel) -> None:
    buffers = _of(demo_run.tables["ws_buffers"], "ws_graphs#1")
    smem = buffers.filter(pl.col("memory") == "SMEM").sort("buffer_index").to_dicts()
    assert [(b["name"], b["buffer_id"], b["bytes"], b["start_op"], b["end_op"], b["channels"]) for b in smem] == [
        (b.name, b.alloc_id, b.size, b.start, b.end, [c.uid for c in b.channels]) for b in attention.smem
    ]
    tmem = buffers.filter(pl.col("memory") == "TMEM").sort("buffer_index").to_dicts()
    assert [(t["name"], t["rows"], t["cols"], t["start_op"], t["end_op"], t["operand_d"]) for t in tmem] == [
        (b.name, b.rows, b.cols, b.start, b.end, sum(c.operand_d for c in b.channels)) for b in attention.tmem
    ]
    assert all(t["bytes"] is None and t["buffer_id"] is None for t in tmem)
    ops = _of(demo_run.tables["ws_ops"], "ws_graphs#1").sort("op_id").to_dicts()
    expected_ops = sorted(attention.ops, key=lambda o: o.op_id)
    assert [(o["op_id"], o["partitions"], o["op"], o["out"], o["args"], o["shape"], o["loop_depth"]) for o in ops] == [
        (o.op_id, o.partitions, o.op, o.out, ", ".join(o.args), o.shape, o.depth) for o in expected_ops
    ]
    assert [o["graph_order"] for o in ops] == list(range(len(ops)))
    channels = _of(demo_run.tables["ws_channels"], "ws_graphs#1").sort("uid").to_dicts()
    assert [(c["uid"], c["src_op"], c["dst_op"], c["memory"], c["operand_d"], c["name"], c["buffer_id"])
            for c in channels] == [
        (c.uid, c.src.op_id, c.dst.op_id, c.buffer.memory, c.operand_d, c.buffer.loc or c.buffer.name,
         c.buffer.buffer_id if c.buffer.memory == "SMEM" else None)
        for c in attention.channels
    ]
    assert all(c["src_node"] == f"op_op_{c['src_op']}" for c in channels)


def test_dumps_without_op_ids_keep_node_ids_and_insertion_order(demo_run: registry.CollectedRun,
                                                                 gemm: Kernel) -> None:
    ops = _of(demo_run.tables["ws_ops"], "ws_graphs#2").sort("graph_order")
    assert ops["op_id"].null_count() == ops.height
    # Partition by partition, the emitter's insertion order survives in graph_order.
    for partition in range(4):
        expected = [node_id(o, debug=False) for o in gemm.ops if partition in o.partitions]
        got = ops.filter(pl.col("partitions").list.contains(partition))["node"].to_list()
        assert got == expected
    channels = _of(demo_run.tables["ws_channels"], "ws_graphs#2").sort("uid")
    assert channels["src_op"].null_count() == channels.height
    assert channels["src_node"].to_list() == [node_id(c.src, debug=False) for c in gemm.channels]
    notes = _groups(demo_run)["ws_graphs#2"]["notes"]
    assert any("no SMEM liveness graph" in n for n in notes)
    assert any("no operation ids" in n for n in notes)


def _write(folder: Path, files: dict[str, str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        (folder / name).write_text(text)
        paths.append(folder / name)
    return paths


def test_user_doc_naming_stays_one_group(tmp_path: Path, attention: Kernel) -> None:
    # The upstream user doc shows smem_0, tmem_1, combined_2: still one compile.
    paths = _write(tmp_path / "doc", {"smem_liveness_0.dot": smem_liveness(attention),
                                      "tmem_liveness_1.dot": tmem_liveness(attention),
                                      "combined_graph_2.dot": combined_graph(attention)})
    result = COLLECTOR.collect(paths, no_progress)
    assert [g["graphs"] for g in result.metadata["groups"]] == [["smem", "tmem", "combined"]]
    assert result.warnings == []


def test_default_allocator_sequences_split_per_compile(tmp_path: Path, attention: Kernel, gemm: Kernel) -> None:
    # combined_0 tmem_1 | smem_2 combined_3 tmem_4 | combined_5 tmem_6 ; files listed out of order.
    paths = _write(tmp_path / "mixed", {
        "tmem_liveness_6.dot": tmem_liveness(gemm), "combined_graph_0.dot": combined_graph(gemm),
        "tmem_liveness_1.dot": tmem_liveness(gemm), "smem_liveness_2.dot": smem_liveness(attention),
        "combined_graph_3.dot": combined_graph(attention), "tmem_liveness_4.dot": tmem_liveness(attention),
        "combined_graph_5.dot": combined_graph(gemm),
    })
    result = COLLECTOR.collect(paths, no_progress)
    assert [(g["group"], g["counters"]) for g in result.metadata["groups"]] == [
        ("mixed#1", [0, 1]), ("mixed#2", [2, 3, 4]), ("mixed#3", [5, 6])]
    assert result.tables["ws_ops"].group_by("group").len().sort("group")["len"].to_list() == [12, 60, 12]


def test_incomplete_group_is_reported(tmp_path: Path, attention: Kernel) -> None:
    paths = _write(tmp_path / "crash", {"smem_liveness_0.dot": smem_liveness(attention),
                                        "combined_graph_1.dot": combined_graph(attention),
                                        "tmem_liveness_2.dot": tmem_liveness(attention),
                                        "smem_liveness_3.dot": smem_liveness(attention)})
    result = COLLECTOR.collect(paths, no_progress)
    assert [g["graphs"] for g in result.metadata["groups"]] == [["smem", "combined", "tmem"], ["smem"]]
    assert any("crash#2" in w and "no combined graph" in w for w in result.warnings)
    # The lone SMEM graph still yields its buffers, with channels and op ids from its labels.
    lone = _of(result.tables["ws_channels"], "crash#2")
    assert lone.height == sum(len(b.channels) for b in attention.smem)
    assert lone["src_op"].null_count() == 0 and lone["buffer_id"].null_count() == lone.height


def test_debug_log_groups_named_after_kernels(tmp_path: Path, attention: Kernel, gemm: Kernel) -> None:
    log = tmp_path / "run.log"
    log.write_text(ws_dumps.debug_log_text([("attn_fwd", attention, True), ("matmul", gemm, False)],
                                           dump_dir="/tmp/ws"))
    assert COLLECTOR.sniff(probe_file(log))
    run = registry.collect([log])
    groups = run.metadata["triton_ws"]["groups"]
    assert [g["group"] for g in groups] == ["run.log#1 attn_fwd", "run.log#2 matmul"]
    assert [g["counters"] for g in groups] == [[0, 1, 2], [3, 4]]  # from the `Dumped ... to:` lines
    assert run.tables["ws_ops"].group_by("group").len().sort("group")["len"].to_list() == [60, 12]


def test_log_beside_its_dump_files_is_counted_once(tmp_path: Path, attention: Kernel, gemm: Kernel) -> None:
    folder = tmp_path / "both"
    ws_dumps.write_dump_folder(folder, [(attention, True), (gemm, False)])
    (folder / "output.txt").write_text(ws_dumps.debug_log_text([("attn", attention, True), ("mm", gemm, False)]))
    run = registry.collect([folder])
    assert [g["group"] for g in run.metadata["triton_ws"]["groups"]] == ["both#1", "both#2"]
    assert len(run.metadata["triton_ws"]["repeated"]) == 2
    assert run.tables["ws_ops"].height == 72


def test_single_files_gzip_and_windows_line_ends(tmp_path: Path, attention: Kernel) -> None:
    folder = tmp_path / "single"
    folder.mkdir()
    combined = folder / "combined_graph_7.dot.gz"
    combined.write_bytes(gzip.compress(combined_graph(attention).replace("\n", "\r\n").encode()))
    run = registry.collect([combined])
    group = run.metadata["triton_ws"]["groups"][0]
    assert group["group"] == "single#1" and group["counters"] == [7]
    assert run.tables["ws_ops"].height == 60 and run.tables["ws_channels"].height == 26
    assert "ws_buffers" not in run.tables


def test_plain_dot_graph_keeps_clusters_labels_and_direction(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.gv"
    path.write_text(
        "// a pipeline\n"
        "digraph pipeline {\n"
        "  node [shape=box];\n"
        "  subgraph cluster_stage {\n"
        '    label="Stage";\n'
        '    subgraph cluster_inner { label="Inner"; load [label="Load\\ndata", color=blue]; }\n'
        "    compute;\n"
        "  }\n"
        '  load -> compute [label="x"];\n'
        "  compute -> store -> sink;\n"
        "}\n"
    )
    other = tmp_path / "friends.dot"
    other.write_text("graph { a -- b; b -- c }\n")
    run = registry.collect([path, other])
    nodes = run.tables["dot_nodes"]
    clusters = nodes.filter(pl.col("kind") == "cluster").sort("node")
    assert clusters.select("node", "label", "cluster").rows() == [
        ("cluster_stage", "Stage", None), ("cluster_stage/cluster_inner", "Inner", "cluster_stage")]
    load = nodes.filter(pl.col("node") == "load").row(0, named=True)
    assert load["label"] == "Load\ndata" and load["cluster"] == "cluster_stage/cluster_inner"
    assert '"color": "blue"' in load["attributes"] and '"shape": "box"' in load["attributes"]
    edges = run.tables["dot_edges"]
    assert edges.filter(pl.col("group") == "pipeline.gv").select("src", "dst").rows() == [
        ("load", "compute"), ("compute", "store"), ("store", "sink")]
    undirected = edges.filter(pl.col("group") == "friends.dot")
    assert undirected.height == 2 and all('"dir": "none"' in a for a in undirected["attributes"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("=== SMEM Buffer Liveness Graph ===\ndigraph SmemBufferLiveness {\n}\n", True),
        ("\n=== Combined Key Ops + Channel Graph (DOT format) ===\n// Render with: dot\ndigraph CombinedGraph {\n",
         True),
        ("INFO start\n[nvgpu-ws-memory-planner]: tmem liveness: 44 98\n", True),
        ("/* header */\nstrict digraph \"my graph\" {\n a -> b\n}\n", True),
        ('{"traceEvents": []}', False),
        ("Graph theory notes {\n", False),
        ("hello world\ndigraph G { a }\n", False),
    ],
)
def test_sniff(tmp_path: Path, text: str, expected: bool) -> None:
    path = tmp_path / "input"
    path.write_text(text)
    assert COLLECTOR.sniff(probe_file(path)) is expected


def test_demo_writer_is_deterministic(tmp_path: Path) -> None:
    first = ws_dumps.write(tmp_path / "a")[0]
    second = ws_dumps.write(tmp_path / "b")[0]
    names = sorted(p.name for p in first.iterdir())
    assert names == ["combined_graph_1.dot", "combined_graph_3.dot", "smem_liveness_0.dot", "tmem_liveness_2.dot",
                     "tmem_liveness_4.dot"]
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in names)
    shutil.rmtree(second)


def test_size_parameter_reaches_two_thousand_ops(tmp_path: Path) -> None:
    kernel = ws_dumps.attention_kernel(sub_tiles=70)
    assert len(kernel.ops) >= 1950
    path = tmp_path / "big" / "combined_graph_0.dot"
    path.parent.mkdir()
    path.write_text(combined_graph(kernel))
    result = COLLECTOR.collect([path], no_progress)
    assert result.tables["ws_ops"].height == len(kernel.ops)
    assert result.tables["ws_channels"].height == len(kernel.channels)
