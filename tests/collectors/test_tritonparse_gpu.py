"""A real tritonparse trace from the project's H200 run (tests/data/gpu): launches on a GPU, the autotuner's
benchmark among them, and its verdict as tritonparse's parser records it. Counts are taken from the files
independently of the collector."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl

from dashboard.collectors import registry

DATA = Path(__file__).parent.parent / "data" / "gpu"
RAW, MAPPED = DATA / "tritonparse_h200.ndjson.gz", DATA / "tritonparse_h200_mapped.ndjson.gz"


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_the_raw_h200_trace() -> None:
    records = _records(RAW)
    launches = [r for r in records if r["event_type"] == "launch"]
    collected = registry.collect([RAW])
    table = collected.tables["ir_launches"]
    assert table.height == len(launches) == 744
    per_kernel = {name: sum(1 for r in launches if r["name"] == name) for name in {r["name"] for r in launches}}
    assert dict(table.group_by("kernel").len().iter_rows()) == per_kernel == {"add_kernel": 742, "scale_kernel": 2}
    kernels = collected.tables["ir_kernels"]
    assert kernels.height == 3 and set(kernels["target"]) == {"cuda:90"}
    assert set(kernels["triton_version"]) == {"3.6.0"}
    # Every launch names a traced compile; a 1-D grid is (x, 1, 1) as Triton pads it.
    assert table["compile"].null_count() == 0 and set(table["grid_y"]) == {1}
    hashes = dict(zip(kernels["hash"], kernels["compile"], strict=True))
    assert table["compile"].to_list() == [hashes[r["compilation_metadata"]["hash"]] for r in launches]
    assert "ir_autotune" not in collected.tables  # Triton 3.6 writes no autotune record
    assert collected.warnings == []


def test_the_parsed_h200_trace_names_the_winner_and_the_benchmark() -> None:
    records = _records(MAPPED)
    (session,) = [r for r in records if r["event_type"] == "autotune_analysis"]
    collected = registry.collect([MAPPED])
    tuned = collected.tables["ir_autotune"]
    assert tuned.height == len(session["compilation_analysis"]["configs"]) == 2
    (best,) = tuned.filter(pl.col("best")).to_dicts()
    winner_hash = session["winner_compilation_hash"]
    assert best["config"] == f"num_warps: 8, num_stages: 3, num_ctas: 1 (compile {winner_hash[:8]})"
    launches = collected.tables["ir_launches"]
    benchmark = set(session["launch_occurrence_ids"]["benchmark"])
    assert launches["benchmark"].sum() == len(benchmark) == sum(
        1 for r in records if r["event_type"] == "launch" and r["occurrence_id"] in benchmark)
    kernels = collected.tables["ir_kernels"]
    winner = kernels.filter(pl.col("hash") == session["winner_compilation_hash"])["compile"].item()
    mine = launches.filter(pl.col("compile") == winner)
    assert mine.filter(~pl.col("benchmark")).height == len(session["launch_occurrence_ids"]["winner"])
    assert not any("does not know" in w for w in collected.warnings)
