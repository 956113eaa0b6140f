"""`compare` of two CUDA-memory runs: per-device peak allocated / reserved deltas and culprits, hand-computed."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dashboard.analysis.compare import Side
from dashboard.cli.compare_report import build_report
from dashboard.cli.compare_text import format_report
from dashboard.cli.main import cli
from dashboard.demo import torch_snapshot as demo
from dashboard.ingest.pipeline import ingest_paths
from dashboard.layouts.compare_sections import more_sections
from dashboard.store import RunStore
from dashboard.views.compare_sections import section_figures

MIB = demo.MIB
A, B, D = ([{"filename": f"/home/me/{name}.py", "line": 3, "name": "forward"}] for name in "abd")


def _snapshot(path: Path, bigger: bool) -> Path:
    """A: 4 MiB (a.py) + 8 MiB (b.py) in one 20 MiB segment: peak 12 MiB, reserved 20 MiB, culprit b.py.
    B: the same, then 12 MiB (d.py) in its own 12 MiB segment: peak 24 MiB, reserved 32 MiB, culprit d.py;
    and a second device with 2 MiB (a.py) in a 20 MiB segment."""
    builder = demo.SnapshotBuilder()
    builder.alloc(4 * MIB, A)
    builder.alloc(8 * MIB, B)
    builders = [builder]
    if bigger:
        builder.free(builder.alloc(12 * MIB, D))  # the peak is not the end
        second = demo.SnapshotBuilder(device=1)
        second.alloc(2 * MIB, A)
        builders.append(second)
    path.write_bytes(pickle.dumps(demo.snapshot_of(builders)))
    return path


@pytest.fixture()
def runs(tmp_path: Path) -> tuple[RunStore, str, str]:
    store = RunStore(tmp_path / "data")
    run_a = ingest_paths(store, [_snapshot(tmp_path / "a.pickle", bigger=False)], name="before")
    run_b = ingest_paths(store, [_snapshot(tmp_path / "b.pickle", bigger=True)], name="after")
    return store, run_a, run_b


def test_peak_deltas_per_device_with_culprits(runs: tuple[RunStore, str, str]) -> None:
    store, run_a, run_b = runs
    report = build_report(store.open(run_a), store.open(run_b))
    assert "cuda_memory" in report["shared_evidence"]
    section = report["cuda_memory"]
    assert (section["rank_a"], section["rank_b"]) == (0, 0)
    first, second = section["devices"]
    assert first["device"] == "cuda:0"
    assert (first["peak_allocated_a"], first["peak_allocated_b"], first["allocated_delta"]) == (
        12 * MIB, 24 * MIB, 12 * MIB)
    assert first["allocated_change"] == 1.0
    assert (first["peak_reserved_a"], first["peak_reserved_b"], first["reserved_delta"]) == (
        20 * MIB, 32 * MIB, 12 * MIB)
    assert first["reserved_change"] == pytest.approx(0.6)
    assert (first["culprit_a"], first["culprit_bytes_a"]) == ("me/b.py:3 forward", 8 * MIB)
    assert (first["culprit_b"], first["culprit_bytes_b"]) == ("me/d.py:3 forward", 12 * MIB)
    assert second["device"] == "cuda:1" and second["peak_allocated_a"] is None
    assert (second["peak_allocated_b"], second["allocated_delta"], second["allocated_change"]) == (2 * MIB, None, None)


def test_readable_report_has_the_cuda_lines(runs: tuple[RunStore, str, str]) -> None:
    store, run_a, run_b = runs
    text = format_report(build_report(store.open(run_a), store.open(run_b)))
    assert ("  cuda:0   peak allocated A     12 MiB · B     24 MiB · B − A +12 MiB (+100.0%) · culprit A "
            "me/b.py:3 forward (8 MiB) · culprit B me/d.py:3 forward (12 MiB)") in text
    assert "           peak reserved  A     20 MiB · B     32 MiB · B − A +12 MiB (+60.0%)" in text
    assert "  cuda:1   peak allocated A          – · B      2 MiB · B − A – · culprit B me/a.py:3 forward (2 MiB)" \
        in text


def _find(component: Any, component_id: str) -> Any:
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children] if children is not None else []:
        found = _find(child, component_id)
        if found is not None:
            return found
    return None


def _texts(component: Any) -> list[str]:
    if isinstance(component, str):
        return [component]
    children = getattr(component, "children", None)
    items = children if isinstance(children, list | tuple) else [children] if children is not None else []
    return [text for child in items for text in _texts(child)]


def test_compare_page_section_and_chart(runs: tuple[RunStore, str, str]) -> None:
    store, run_a, run_b = runs
    a, b = Side(run_a, None), Side(run_b, None)
    sections = more_sections(store.open(run_a), store.open(run_b), a, b)
    section = next(s for s in sections if getattr(s, "id", None) == "compare-cuda-memory-section")
    table = _find(section, "compare-cuda-memory-peaks")
    first_row = table.children[1].children[0]
    cells = [" ".join(_texts(cell)) for cell in first_row.children]
    assert cells == ["cuda:0", "12 MiB", "24 MiB", "+12 MiB (+100.0%)", "20 MiB", "32 MiB", "+12 MiB (+60.0%)",
                     "me/b.py:3 forward (8 MiB)", "me/d.py:3 forward (12 MiB)"]
    link_b = first_row.children[-1].children
    peak_b = store.open(run_b).frame("device_memory").sort("allocated", descending=True)["time_ns"][0]
    assert link_b.href == f"/memory?run={run_b}&rank=0&device=cuda%3A0&at={peak_b}"
    figure = section_figures(store, a, b)["compare-cuda-memory"]
    allocated_b = next(t for t in figure.data if t.name.startswith("B") and t.xaxis == "x")
    assert list(allocated_b.x) == ["cuda:0", "cuda:1"] and list(allocated_b.y) == [24, 2]  # MiB


def test_the_compare_command_prints_the_cuda_section(runs: tuple[RunStore, str, str], tmp_path: Path) -> None:
    _, run_a, run_b = runs
    result = CliRunner().invoke(cli, ["compare", run_a, run_b, "--json", "--data", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    devices = json.loads(result.output)["cuda_memory"]["devices"]
    assert [(d["device"], d["allocated_delta"], d["reserved_delta"]) for d in devices] == [
        ("cuda:0", 12 * MIB, 12 * MIB), ("cuda:1", None, None)]


def _events(rank: int, device: str, sizes: list[int]) -> Any:
    import polars as pl

    from dashboard import schema

    allocated, rows = 0, []
    for index, size in enumerate(sizes):
        allocated += size
        rows.append({"rank": rank, "device": device, "time_ns": 1_000 * (index + 1), "addr": 4096 * (index + 1),
                     "bytes_delta": size, "allocated": allocated, "reserved": 2 * allocated, "op": "aten::empty",
                     "relative": False, "action": "alloc"})
    return schema.conform("device_memory", pl.DataFrame(rows))


def test_rank_against_rank_pairs_devices_by_index_not_name() -> None:
    """Rank 0 ran on cuda:0, rank 1 on cuda:1: no name in common, so the i-th device of each side pairs up
    (matched by name, every delta read "–")."""
    import polars as pl

    from dashboard import schema
    from dashboard.analysis.compare_cuda_memory import peak_deltas

    none = schema.empty("memory_segments")
    deltas = peak_deltas(_events(0, "cuda:0", [4 * MIB, 8 * MIB]), none, _events(1, "cuda:1", [4 * MIB, 12 * MIB]),
                         none)
    row = deltas.row(0, named=True)
    assert deltas.height == 1 and row["device"] == "cuda:0 ↔ cuda:1"
    assert (row["device_a"], row["device_b"]) == ("cuda:0", "cuda:1")
    assert (row["peak_allocated_a"], row["peak_allocated_b"], row["allocated_delta"]) == (12 * MIB, 16 * MIB, 4 * MIB)
    # Sides sharing a device name still pair by name (a device only one side has stays alone).
    both = peak_deltas(_events(0, "cuda:1", [MIB]), none, pl.concat([_events(0, "cuda:0", [MIB]),
                                                                      _events(0, "cuda:1", [2 * MIB])]), none)
    assert both.select("device", "device_a", "device_b").rows() == [("cuda:0", None, "cuda:0"),
                                                                    ("cuda:1", "cuda:1", "cuda:1")]
