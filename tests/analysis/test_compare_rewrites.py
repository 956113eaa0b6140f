"""Two tinygrad runs compared: contexts aligned by name, the first step whose graph differs, kernel time deltas,
on the page's section and in `dashboard compare A B --json` (generated pairs: no tinygrad needed)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from dashboard.analysis.compare import Side
from dashboard.cli.main import cli
from dashboard.demo.tinygrad_generated import VizBuilder, demo_pair
from dashboard.demo.tinygrad_pickles import record
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views.compare_sections import rewrites_comparison


def variant() -> VizBuilder:
    """The demo's program with E_16 over 32 elements (same name, another graph) and E_64 replaced by E_32."""
    builder = VizBuilder()
    builder.events.append(record("tinygrad.device", "ProfileDeviceEvent", device="CPU", tdiff=Decimal(0), props=None))
    schedule = builder.context("Schedule 3 Kernels n1", ("Schedule 3 Kernels n1",))
    graph = builder.uop("SINK", "void", (builder.uop("CONST", "float", (), 1.0),))
    builder.step(schedule, "View Tensor Graph", graph, where="tensor.py")
    builder.step(schedule, "rangeify", graph, [(graph, graph)], where="schedule/rangeify.py")
    kernels = [builder.kernel("E_16", 32), builder.kernel("E_32", 32), builder.kernel("E_n", 16, symbolic=True)]
    builder.launch("CPU", "E_16", kernels[0][1], 32, {}, "20.5")
    builder.launch("CPU", "E_32", kernels[1][1], 32, {})
    return builder


def ingest(store: RunStore, folder: Path, builder: VizBuilder, name: str) -> str:
    folder.mkdir(parents=True)
    rewrites, profile = builder.files()
    (folder / "rewrites.pkl").write_bytes(rewrites)
    (folder / "profile.pkl").write_bytes(profile)
    return ingest_paths(store, [folder], name=name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStore, str, str]:
    root = tmp_path_factory.mktemp("compare-rewrites")
    store = RunStore(root / "data")
    first = ingest(store, root / "a", demo_pair(), "tinygrad-a")
    return store, first, ingest(store, root / "b", variant(), "tinygrad-b")


def test_contexts_align_by_name_and_the_first_differing_step_is_found(runs: tuple[RunStore, str, str]) -> None:
    store, a, b = runs
    comparison = rewrites_comparison(store.open(a), store.open(b), None, None)
    rows = {row["name"]: row for row in comparison.aligned.to_dicts()}
    assert comparison.counts == {"contexts_a": 4, "contexts_b": 4, "both": 3, "only_a": 1, "only_b": 1,
                                 "differing": 1}
    assert rows["E_64"]["presence"] == "only A" and rows["E_32"]["presence"] == "only B"
    assert rows["E_n"]["differs"] is False and rows["Schedule 3 Kernels n1"]["differs"] is False
    e16 = rows["E_16"]
    assert e16["differs"] and e16["first_step"] == "View Base AST" and e16["reason"] == "input graph differs"
    assert (e16["first_step_a"], e16["first_step_b"]) == (0, 0)
    assert comparison.first is not None and comparison.first["name"] == "E_16"
    # Kernel time: every launch of the name in each profile (the generated launches last 1.5 µs; B's 20.5 µs).
    assert e16["kernel_ns_a"] > 0 and e16["kernel_delta_ns"] == e16["kernel_ns_b"] - e16["kernel_ns_a"] != 0


def test_a_run_against_itself_differs_nowhere(runs: tuple[RunStore, str, str]) -> None:
    store, a, _ = runs
    comparison = rewrites_comparison(store.open(a), store.open(a), None, None)
    assert comparison.first is None and comparison.counts["differing"] == 0 and comparison.counts["both"] == 4


def test_the_cli_reports_the_section(runs: tuple[RunStore, str, str]) -> None:
    store, a, b = runs
    result = CliRunner().invoke(cli, ["compare", a, b, "--json", "--data", str(store.data_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "rewrites" in report["shared_evidence"]
    section = report["rewrites"]
    assert section["first_difference"]["name"] == "E_16" and len(section["contexts"]) == 5
    text = CliRunner().invoke(cli, ["compare", a, b, "--data", str(store.data_dir)])
    assert "tinygrad rewrites: contexts A 4 · B 4" in text.output and "first difference: E_16" in text.output


def test_the_page_section_links_both_sides_to_the_first_differing_step(runs: tuple[RunStore, str, str]) -> None:
    from dashboard.layouts.compare_rewrites import rewrites_section

    store, a, b = runs
    section = rewrites_section(store.open(a), store.open(b), Side(a, None), Side(b, None))
    text = json.dumps(section.to_plotly_json(), default=lambda value: value.to_plotly_json())
    assert f"/compiler?run={a}&ctx=1&step=0" in text and f"/compiler?run={b}&ctx=1&step=0" in text
