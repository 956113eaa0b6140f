"""Seed inputs for the fuzz suite: the project's own generated fixtures, one small set per format.

Every seed comes from the demo generators (`dashboard/demo`), cut down so one ingest takes
milliseconds, except plain DOT, which no generator writes: `PLAIN_DOT` below exercises the
grammar's corners (clusters, HTML labels, ports, `+` joins, comments, subgraph edges).
Seeds are bytes held in memory; `tests.support.fuzz_mutations` turns them into cases.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dashboard.demo import kineto_trace, nsys_export, torch_snapshot, tt_memory_log, ws_dumps
from dashboard.demo.tinygrad_generated import demo_pair
from dashboard.demo.triton_ir_text import generated_log
from tests.support import fuzz_shapes

_DEMO_KERNELS = Path(kineto_trace.__file__).with_name("triton_kernels_src.py")

# How a seed's bytes are stored on disk, which decides how it is mutated.
TEXT, GZIP, SQLITE, TAR_GZ, ZIP = "text", "gzip", "sqlite", "tar.gz", "zip"
# Stored packed: content mutations are packed afterwards, `raw_` mutations damage the packed bytes.
PACKED = (GZIP, TAR_GZ, ZIP)

FORMATS = ("kineto_json", "kineto_gz", "nsys", "tt_log", "tt_json", "dot_planner", "dot_plain", "triton_ir",
           "torch_snapshot", "tinygrad",
           # The shapes of issue 30 (tests/support/fuzz_shapes.py).
           "snapshot_list", "snapshot_no_history", "kineto_devices", "tritonparse_raw", "tritonparse_mapped",
           "archive_tgz", "archive_zip", "tt_program_log", "mlir_functions")

# Kineto events kept in the seed (of ~2,500): a few hundred kernels, ops and runtime calls.
_KINETO_EVENTS = 1000
# The tt run folder name carries the script and start time; the collector reads it.
_TT_RUN = "vae_decode_20260301_101500"

PLAIN_DOT = r"""/* A plain graph: what a user might export from any tool. */
// line comment
# preprocessor-style line
strict digraph "pipeline" {
  graph [rankdir=LR, label="data \"flow\"" + " graph", fontsize=12.5];
  node [shape=box; style="rounded,filled" fillcolor="#eeeeff"];
  edge [color=gray40, arrowsize=.8];
  subgraph cluster_load {
    label = "load";
    subgraph cluster_disk { label=<<B>disk</B> &amp; <I>cache</I>>; read; seek [label="seek\nfile"]; }
    decode [label=<<TABLE><TR><TD>decode</TD><TD PORT="out">out</TD></TR></TABLE>>];
  }
  subgraph cluster_compute { label="compute"; matmul -> relu -> matmul2; -12.5 [label="a numeral id"]; }
  read -> decode:out:e -> matmul [weight=2, label="tensor 128x128"];
  seek:s -> {decode matmul} [style=dashed];
  subgraph { rank=same; relu; "quoted id" }
  "quoted id" -> -12.5 -> read;
  é_unicode -> read [label="unicode ✓"];
}
graph undirected { a -- b -- c; b -- d [penwidth=2]; }
"""


@dataclass(frozen=True)
class Seed:
    """One seed file: its path inside a case folder, its bytes, and how it is stored."""

    format: str
    name: str  # what reports call it, e.g. "combined_graph_1.dot"
    relpath: str  # where the case writes it (a folder name can matter: tt run folders, planner names)
    data: bytes
    storage: str = TEXT


def _kineto_text() -> str:
    document, _ = kineto_trace.build_trace(0)
    document["traceEvents"] = document["traceEvents"][:_KINETO_EVENTS]
    return json.dumps(document)


def _nsys_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.sqlite"
        nsys_export.write_export(path, nsys_export.ExportOptions(steps=1, layers=1, seed=3))
        # One file, no journal: the seed must be the whole database.
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA journal_mode=DELETE")
        connection.close()
        return path.read_bytes()


def _tt_files() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as folder:
        [run] = tt_memory_log.write(Path(folder), n_ops=60)
        return {path.name: path.read_bytes() for path in sorted(run.iterdir())}


def _planner_files() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as folder:
        paths = ws_dumps.write_dump_folder(Path(folder), [(ws_dumps.attention_kernel(sub_tiles=1), True),
                                                          (ws_dumps.gemm_kernel(debug=False), False)])
        files = {path.name: path.read_bytes() for path in paths}
    log = ws_dumps.debug_log_text([("gemm_kernel", ws_dumps.gemm_kernel(debug=True), True)], dump_dir="/tmp/ws")
    files["planner_debug.log"] = log.encode()
    return files


def _snapshot_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return torch_snapshot.write(Path(folder) / "snapshot.pickle", steps=2, layers=3).read_bytes()


def build_seeds() -> dict[str, list[Seed]]:
    """Every format's seeds (deterministic: the generators use fixed seeds)."""
    kineto = _kineto_text().encode()
    tt = _tt_files()
    seeds: dict[str, list[Seed]] = {
        "kineto_json": [Seed("kineto_json", "trace.json", "trace.json", kineto)],
        "kineto_gz": [Seed("kineto_gz", "trace.json.gz", "trace.pt.trace.json.gz", kineto, GZIP)],
        "nsys": [Seed("nsys", "report.sqlite", "report.sqlite", _nsys_bytes(), SQLITE)],
        "tt_log": [Seed("tt_log", name, f"{_TT_RUN}/{name}", data) for name, data in tt.items()
                   if name.endswith(".log")],
        "tt_json": [Seed("tt_json", name, f"{_TT_RUN}/{name}", data) for name, data in tt.items()
                    if name.endswith("_memory.json")],
        "dot_planner": [Seed("dot_planner", name, f"ws/{name}", data) for name, data in _planner_files().items()],
        "dot_plain": [Seed("dot_plain", "graph.dot", "graph.dot", PLAIN_DOT.encode())],
        # The demo's generated MLIR_ENABLE_DUMP log (the shape Triton writes; no Triton needed).
        "triton_ir": [Seed("triton_ir", "mlir_dump.txt", "mlir_dump.txt",
                           generated_log(_DEMO_KERNELS).encode())],
        # A PyTorch allocator snapshot pickle (the restricted unpickler's input); byte mutations only.
        "torch_snapshot": [Seed("torch_snapshot", "snapshot.pickle", "snapshot.pickle", _snapshot_bytes())],
        # tinygrad's VIZ pickles as its restricted unpickler meets them (the demo's generated pair, whose
        # structure real tinygrad's own reader accepts); each case mutates one of the two.
        "tinygrad": [Seed("tinygrad", name, name, data) for name, data in zip(("rewrites.pkl", "profile.pkl"),
                                                                              demo_pair().files(), strict=True)],
    }
    snapshots = fuzz_shapes.snapshot_shapes()
    seeds |= {
        "snapshot_list": [Seed("snapshot_list", "segments.pickle", "segments.pickle", snapshots["list"])],
        "snapshot_no_history": [Seed("snapshot_no_history", "snapshot.pickle", "snapshot.pickle",
                                     snapshots["no_history"])],
        "kineto_devices": [Seed("kineto_devices", "rocm.json", "rocm.pt.trace.json", fuzz_shapes.kineto_devices())],
        "tritonparse_raw": [Seed("tritonparse_raw", "trace.ndjson", "dedicated_log_triton_trace_x.ndjson",
                                 fuzz_shapes.tritonparse_records())],
        "tritonparse_mapped": [Seed("tritonparse_mapped", "trace_mapped.ndjson.gz",
                                    "dedicated_log_triton_trace_x_mapped.ndjson.gz",
                                    fuzz_shapes.tritonparse_records(mapped=True), GZIP)],
        # A rank's trace in an archive: the content is the trace, packed after each mutation.
        "archive_tgz": [Seed("archive_tgz", "job.tar.gz", "job.tar.gz", kineto, TAR_GZ)],
        "archive_zip": [Seed("archive_zip", "job.zip", "job.zip", kineto, ZIP)],
        "tt_program_log": [Seed("tt_program_log", "program.log", f"{_TT_RUN}/model_profile.log",
                                fuzz_shapes.tt_program_log())],
        "mlir_functions": [Seed("mlir_functions", "h200_dump.txt", "triton_mlir_dump.txt",
                                fuzz_shapes.mlir_function_dump())],
    }
    return seeds


def stored_bytes(seed: Seed, content: bytes) -> bytes:
    """What goes on disk for a (mutated) content of a text, gzip or archive seed."""
    if seed.storage in (TAR_GZ, ZIP):
        return fuzz_shapes.pack(content, "rank-0.pt.trace.json", seed.storage)
    return gzip.compress(content, compresslevel=1, mtime=0) if seed.storage == GZIP else content
