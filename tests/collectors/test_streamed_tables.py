"""A collector that streams its tables (Kineto) gives, through the registry's sink, exactly the tables and
warnings it gives when the registry collects them at the end."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from benchmarks.gen_kineto_trace import write_trace
from dashboard.collectors import registry


def _with_a_far_away_kernel(path: Path) -> Path:
    """A generated trace plus one kernel twenty years away: dropped, with a warning, either way."""
    document = json.loads(write_trace(path, 400).read_text())
    far = dict(next(e for e in document["traceEvents"] if e.get("cat") == "kernel"))
    far["ts"] = far["ts"] + 20 * 365 * 86_400 * 1_000_000
    far["args"] = {**far.get("args", {}), "correlation": 987_654_321}
    document["traceEvents"].append(far)
    path.write_text(json.dumps(document))
    return path


def test_streamed_tables_equal_collected_ones(tmp_path: Path) -> None:
    trace = _with_a_far_away_kernel(tmp_path / "rank-0.pt.trace.json")
    at_the_end = registry.collect([trace])
    streamed: dict[str, pl.DataFrame] = {}

    def sink(table: str, frame: pl.DataFrame) -> None:
        assert table not in streamed
        streamed[table] = frame

    run = registry.collect([trace], sink=sink)
    assert run.tables == {}  # everything went through the sink
    assert set(streamed) == set(at_the_end.tables) >= {"kernels", "api_calls", "ranges"}
    for table, frame in at_the_end.tables.items():
        assert streamed[table].equals(frame), table
    assert sorted(run.warnings) == sorted(at_the_end.warnings)
    assert any("more than 10 years away" in warning for warning in run.warnings)


def test_several_groups_are_joined_at_the_end_not_streamed(tmp_path: Path) -> None:
    from dashboard.demo.nsys_export import ExportOptions, write_export

    trace = write_trace(tmp_path / "rank-0.pt.trace.json", 50)
    export = tmp_path / "rank1.sqlite"
    write_export(export, ExportOptions(steps=5))
    got: list[str] = []
    run = registry.collect([trace, export], sink=lambda table, frame: got.append(table))
    assert got == []  # kernels of both formats are one table: joined at the end
    alone = registry.collect([trace]).tables["kernels"].height
    assert run.tables["kernels"].height > alone  # both formats' kernels
