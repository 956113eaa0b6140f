"""/compiler's tinygrad view on a generated VIZ pair (no tinygrad needed): state, lists, graphs, program."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dashboard.demo.tinygrad_generated import demo_pair
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import Run, RunStore
from dashboard.views import tinygrad as view
from dashboard.views.tinygrad_data import installed_tinygrad, pattern_source


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("tinygrad-view")
    folder = root / "sources"
    folder.mkdir()
    rewrites, profile = demo_pair().files()
    (folder / "rewrites.pkl").write_bytes(rewrites)
    (folder / "profile.pkl").write_bytes(profile)
    store = RunStore(root / "data")
    return store.open(ingest_paths(store, [folder], name="tinygrad"))


def test_the_state_opens_the_first_kernel_and_keeps_only_what_exists(run: Run) -> None:
    state = view.State.from_query({}, run)
    assert (state.ctx, state.step, state.match) == (1, 0, 0)  # context 0 is the schedule
    assert view.State.from_query({"ctx": "99", "step": "50", "match": "7"}, run).ctx == 1
    clamped = view.State.from_query({"ctx": "2", "step": "1", "match": "40"}, run)
    assert (clamped.ctx, clamped.step, clamped.match) == (2, 1, 1)  # the step has one match
    assert clamped.to_query() == {"ctx": "2", "step": "1", "match": "1"}


def test_the_lists_are_vizs_contexts_and_steps(run: Run) -> None:
    contexts = view.context_rows(run, 0)
    assert [row["name"] for row in contexts] == ["Schedule 3 Kernels n1", "E_16", "E_64", "E_n"]
    steps = view.step_rows(run, 0, 1)
    assert [row["name"] for row in steps] == ["View Base AST", "early movement ops", "expander", "linearize/render",
                                             "View Program"]
    assert view.ansi_segments("r\x1b[34m_8\x1b[0m_x") == [("r", None), ("_8", "#0d6efd"), ("_x", None)]


def test_a_match_redraws_the_graph_with_its_change_framed_and_its_diff(run: Run) -> None:
    start = view.graph_view(run, view.State.from_query({"ctx": "1", "step": "1"}, run))
    assert start.match == 0 and start.changed == 0 and start.diff == [] and start.elements
    after = view.graph_view(run, view.State.from_query({"ctx": "1", "step": "1", "match": "1"}, run))
    assert after.match == 1 and after.changed >= 1 and not after.pending
    framed = [e for e in after.elements if "changed" in e.get("classes", "").split() and "source" not in e["data"]]
    assert len(framed) == after.changed
    assert after.diff[:2] == ["--- before", "+++ after"] and any(line.startswith("+UOp(") for line in after.diff)
    assert after.pattern is not None and after.pattern.endswith(":100") and after.seconds == pytest.approx(1.5e-6)
    nodes = [e for e in after.elements if "source" not in e["data"]]
    assert all("position" in e and e["data"]["colour"].startswith("#") for e in nodes)


def test_a_kernels_program_shows_source_uops_and_disassembly(run: Run) -> None:
    program = view.program_view(run, view.State.from_query({"ctx": "1"}, run))
    assert program is not None and program.kernel == "E_16"
    assert program.source and "E_16" in program.source
    assert program.uops and program.uops.splitlines()[0].split()[:2] == ["0", "Ops.PARAM"]
    assert dict(program.facts)["FLOPs"] == "16"
    if shutil.which("objdump") is None:
        assert "objdump is not installed" in program.disassembly_note
    else:  # the generated binary is no object file: objdump says so, in one line
        assert program.disassembly is None and "objdump cannot read this binary" in program.disassembly_note
    assert view.program_view(run, view.State.from_query({"ctx": "0"}, run)) is None  # a schedule: no program


def test_a_patterns_line_comes_only_from_the_installed_tinygrad_of_the_same_release(tmp_path: Path) -> None:
    assert pattern_source("/etc/passwd", 1, "0.14.0") is None
    assert pattern_source("/x/tinygrad/../../../etc/passwd", 1, "0.14.0") is None
    installed = installed_tinygrad()
    if installed is None:
        pytest.skip("tinygrad is not installed here")
    root, release = installed
    ops = root / "uop" / "ops.py"
    line = ops.read_text().split("\n").index("class UOpMetaClass(type):") + 1
    assert pattern_source("/elsewhere/site-packages/tinygrad/uop/ops.py", line, release) == "class UOpMetaClass(type):"
    assert pattern_source("/elsewhere/tinygrad/uop/ops.py", line, "0.0.1") is None  # another release: lines move
