"""The graph replay against tinygrad's own (VIZ's `get_full_rewrite`) on real files, graph by graph.

tinygrad runs only in child processes: `tests/support/tinygrad_serve_graphs.py` replays the same steps
with tinygrad's VIZ server code. For every graph of every step compared (the input, then one per
match), the UOps (op and number of sources each), how many VIZ folds into their users' labels, and
the ops of the nodes it highlights as changed must be equal. The files: the shared real sample (every
step), and the demo's program run by real tinygrad with HCQ2=1, whose steps cover bottom-up, walk and
plain rewrites (every step of its first kernel and its first schedule, and every walk step).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis.uop_graph import UOpColumns, toposort
from dashboard.analysis.uop_replay import StepReplay, step_spec
from dashboard.analysis.uop_shown import excluded_nodes
from dashboard.collectors import registry
from dashboard.demo.tinygrad_viz import _real_demo_bytes, tinygrad_installed

pytestmark = [pytest.mark.skipif(not tinygrad_installed(), reason="tinygrad is not installed (the `tinygrad` extra)"),
              pytest.mark.timeout(900)]
SERVE_GRAPHS = Path(__file__).resolve().parents[1] / "support" / "tinygrad_serve_graphs.py"


def serve_graphs(rewrites: Path, steps: list[tuple[int, int]]) -> dict[str, list[dict]]:
    done = subprocess.run([sys.executable, str(SERVE_GRAPHS), str(rewrites), *(f"{c}:{s}" for c, s in steps)],
                          check=True, capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout)


def our_graphs(tables: dict[str, pl.DataFrame], steps: list[tuple[int, int]]) -> dict[str, list[dict]]:
    table = UOpColumns(tables["rewrite_uops"])
    out: dict[str, list[dict]] = {}
    for context, step in steps:
        spec = step_spec(tables["rewrite_steps"], tables["rewrite_matches"], 0, context, step)
        assert spec is not None
        replay = StepReplay(table, spec)
        graphs = []
        for index in range(replay.graph_count()):
            root = replay.graph(index)
            order = toposort(replay.pool, root)
            graphs.append({
                "nodes": sorted([replay.pool.op[node], len(replay.pool.src[node])] for node in order),
                "changed": sorted(replay.pool.op[node] for node in replay.changed_nodes(index)),
                "excluded": len(excluded_nodes(replay.pool, order, root))})
        out[f"{context}:{step}"] = graphs
    return out


def differing(ours: dict[str, list[dict]], theirs: dict[str, list[dict]]) -> list[str]:
    found = []
    for key, graphs in theirs.items():
        mine = ours[key]
        if len(mine) != len(graphs):
            found.append(f"step {key}: {len(mine)} graphs, tinygrad {len(graphs)}")
            continue
        for index, (a, b) in enumerate(zip(mine, graphs, strict=True)):
            for part in ("nodes", "changed", "excluded"):
                if a[part] != b[part]:
                    extra = (Counter(map(tuple, a[part])) - Counter(map(tuple, b[part])) if part == "nodes" else "")
                    found.append(f"step {key} graph {index}: {part} differ {extra}")
    return found


def test_every_graph_of_the_shared_sample_is_tinygrads(shared_dir: Path) -> None:
    rewrites = shared_dir / "samples" / "tinygrad" / "rewrites.pkl"
    tables = registry.collect([rewrites]).tables
    steps = [(c, s) for c, s in tables["rewrite_steps"].select("context", "step").iter_rows()]
    theirs = serve_graphs(rewrites, steps)
    assert sum(len(graphs) for graphs in theirs.values()) == len(steps) + tables["rewrite_matches"].height
    assert differing(our_graphs(tables, steps), theirs) == []


@pytest.fixture(scope="module")
def demo_rewrites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The demo's own real run (DEMO_PROGRAM with DEV=CPU HCQ2=1, by run_tinygrad), made once per process and
    # shared with the demo's seeding, rather than a second identical run (~5 s).
    real = _real_demo_bytes()
    assert real is not None, "tinygrad is installed but its run of the demo's program failed (see the log)"
    rewrites = tmp_path_factory.mktemp("tinygrad-demo") / "rewrites.pkl"
    rewrites.write_bytes(real[0])
    return rewrites


def test_bottom_up_walk_and_plain_steps_replay_as_tinygrad_replays_them(demo_rewrites: Path) -> None:
    tables = registry.collect([demo_rewrites]).tables
    steps_table = tables["rewrite_steps"]
    contexts = tables["rewrite_contexts"]
    first_kernel = contexts.filter("codegen")["context"][0]
    first_schedule = contexts.filter(pl.col("name").str.starts_with("Schedule"))["context"][0]
    chosen = steps_table.filter(pl.col("context").is_in([first_kernel, first_schedule]) | pl.col("walk"))
    steps = [(c, s) for c, s in chosen.select("context", "step").iter_rows()]
    # The comparison means something only if every kind of step and real changes are in it.
    assert chosen["walk"].any() and chosen["bottom_up"].any() and chosen["matches"].sum() > 300
    theirs = serve_graphs(demo_rewrites, steps)
    ours = our_graphs(tables, steps)
    assert differing(ours, theirs) == []
    assert sum(bool(graph["changed"]) for graphs in theirs.values() for graph in graphs) > 100
