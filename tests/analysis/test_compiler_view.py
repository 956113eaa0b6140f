"""/compiler's pure logic: compile and step choice, comparisons, diffs, the memory plan, the page render."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis import compiler as view
from dashboard.analysis.compiler_memory import memory_plan, module_totals
from dashboard.ingest.pipeline import ingest_paths
from dashboard.layouts.ir_code import code_html
from tests.collectors.triton_ir_fixtures import compile_log, ttgir


def test_diff_views_agree() -> None:
    before = "\n".join(f"line {i}" for i in range(40))
    after = before.replace("line 5", "line five").replace("line 30\n", "")
    diff = view.diff_texts(before, after, "a", "b")
    assert (diff.removed, diff.added) == (2, 1)
    assert diff.unified[:2] == ["--- a", "+++ b"]
    assert "-line 5" in diff.unified and "+line five" in diff.unified and "-line 30" in diff.unified
    tags = [row.tag for row in diff.side]
    assert "fold" in tags  # the unchanged middle is folded
    changed = [row for row in diff.side if row.tag not in ("equal", "fold")]
    assert [(r.left, r.right) for r in changed] == [("line 5", "line five"), ("line 30", "")]
    assert view.diff_texts(before, before, "a", "b").unified == []


def test_parse_compare() -> None:
    assert view.parse_compare("", 2, 5) == view.Compared(2, 4)
    assert view.parse_compare(None, 2, 0) is None
    assert view.parse_compare("7", 2, 5) == view.Compared(2, 7)
    assert view.parse_compare("1:12", 2, 5) == view.Compared(1, 12)
    assert view.parse_compare("x", 2, 5) is None


def test_memory_plan_of_allocated_ttgir() -> None:
    text = ttgir("k", 128, shared=17408)
    plan = memory_plan(text)
    smem = plan.filter(pl.col("memory") == "SMEM").row(0, named=True)
    assert (smem["op"], smem["offset"], smem["size"], smem["shape"]) == ("ttg.local_alloc", 1024, 16384, "128x64")
    tmem = plan.filter(pl.col("memory") == "TMEM").row(0, named=True)
    assert (tmem["op"], tmem["offset"], tmem["size"]) == ("ttng.tmem_alloc", 0, 64)
    assert module_totals(text) == {"shared": 17408, "tmem": 128}
    assert memory_plan(ttgir("k", 128)).is_empty()


def test_code_html_window_follows_the_marked_line() -> None:
    text = "\n".join(f"%{i} = arith.addi %a, %b : i32" for i in range(1, 5001))
    html, (first, last, total) = code_html(text, {4000}, limit=1000)
    assert total == 5000 and first <= 4000 <= last and last - first + 1 == 1000
    assert 'class="code-line hl" data-ir-line="4000"' in html
    assert '<span class="tk-op">arith.addi</span>' in html


@pytest.fixture
def compiler_run(tmp_path: Path) -> str:
    from dashboard.layouts import server_state
    from dashboard.settings import Settings

    store = server_state.configure(Settings(data_dir=tmp_path / "data", seed_demo=False))
    log = tmp_path / "dump.txt"
    log.write_text(compile_log("add_kernel", 1024) + compile_log("add_kernel", 2048))
    return ingest_paths(store, [log], name="ir")


def test_render_and_state(compiler_run: str) -> None:
    from dashboard.layouts import server_state
    from dashboard.layouts.compiler_panels import panels
    from dashboard.views import compiler as compiler_view
    from dashboard.views.compiler_data import compiler_data

    run = server_state.current_store().open(compiler_run)

    def state_of(**query: str) -> compiler_view.State:
        return compiler_view.State.from_query(query, run)

    state = state_of(compile="0", step="2")
    out = panels(run, state)
    assert out["step"] == "2" and len(out["step_options"]) == 9  # a native select's value: text
    assert "#0 step 1" in out["diff_note"] and "#0 step 2" in out["diff_note"]
    assert 'data-ir-line="1"' in out["ir"]
    # the same pass in the other compile is offered, and compared
    same = [o for o in out["compare_options"] if o["value"] == "1:2"]
    assert same and "same pass" in same[0]["label"]
    other = panels(run, state_of(compile="0", step="2", cmp="1:2", view="side"))
    assert "−2 / +2 lines" in other["diff_note"]  # make_range and tt.reduce name the BLOCK
    assert "ir-side" in other["diff"]
    # a Python line lights up IR lines at this step and in every stage
    lit = panels(run, state_of(compile="0", step="2", pyline="6"))
    assert 'class="code-line hl"' in lit["ir"]
    assert "IR in 3 stages" in lit["stages_note"] and lit["stages"].count("ir-excerpt") == 3
    # an IR line click picks its Python line; a chart click picks the step
    step_text = compiler_data(run).steps.filter(pl.col("compile") == 0)["text_id"][2]
    clicked = compiler_view.next_state(run, state, "compiler-click", None, None, None, None, None,
                              {"kind": "ir", "line": 10, "text": step_text, "stage": "ttir"})
    assert clicked.pyline == 6
    assert compiler_view.next_state(run, state, "compiler-pass-chart", None, None, None, None,
                           {"points": [{"x": 7}]}, None).step == 7
    assert compiler_view.next_state(run, state, "compiler-compile", 1, None, None, None, None, None).compile == 1
    # what the URL names is kept only where the run has it
    assert state_of(compile="9", step="99", cmp="7:1", pyline="0").url_state() == {
        "compile": "0", "step": "", "cmp": "", "view": "", "pyline": ""}
    assert state_of(step="x", view="sideways").to_query() == {"compile": "0"}


def test_planner_link_when_the_log_holds_planner_graphs(tmp_path: Path) -> None:
    from dashboard.demo.ws_dumps import attention_kernel, debug_log_text
    from dashboard.layouts import server_state
    from dashboard.layouts.compiler_panels import links
    from dashboard.settings import Settings
    from dashboard.views import compiler as compiler_view

    store = server_state.configure(Settings(data_dir=tmp_path / "data", seed_demo=False))
    log = tmp_path / "debug.txt"
    log.write_text(compile_log("attn_fwd", 1024) * 40 + debug_log_text([("attn_fwd", attention_kernel(), True)]))
    run_id = ingest_paths(store, [log], name="both")
    assert {"compiler", "planner"} <= set(store.open(run_id).info.evidence)
    run = store.open(run_id)
    found = links(run, compiler_view.State.from_query({"compile": "0"}, run))
    assert any(getattr(link, "href", "") == f"/planner?run={run_id}" for link in found)


def test_braces_survive_colouring() -> None:
    html, _ = code_html('#blocked = #ttg.blocked<{sizePerThread = [1]}>\nscf.for {\n}', set())
    assert "&#123;sizePerThread" in html and "&#125;&gt;" in html
    assert "{" not in html and "}" not in html


def test_a_huge_step_sends_a_bounded_window(tmp_path: Path) -> None:
    from dashboard.layouts import server_state
    from dashboard.layouts.compiler_panels import panels
    from dashboard.layouts.ir_code import MAX_RENDER_LINES
    from dashboard.settings import Settings
    from dashboard.views import compiler as compiler_view

    store = server_state.configure(Settings(data_dir=tmp_path / "data", seed_demo=False))
    ops = "".join(f"    %v{i} = arith.addi %pid, %pid : i32 loc(#loc1)\n" for i in range(5000))
    log = compile_log("big", 64).replace("    %pid = tt.get_program_id x : i32 loc(#loc1)\n",
                                         "    %pid = tt.get_program_id x : i32 loc(#loc1)\n" + ops)
    (tmp_path / "big.txt").write_text(log)
    run_id = ingest_paths(store, [tmp_path / "big.txt"], name="big")
    run = store.open(run_id)
    out = panels(run, compiler_view.State.from_query({"compile": "0", "step": "2"}, run))
    assert out["ir"].count("data-ir-line=") == MAX_RENDER_LINES
    assert "of 50" in out["ir_note"] and "shown" in out["ir_note"]
    assert len(out["ir"]) + len(out["diff"]) < 2_000_000


def test_python_source_comes_only_from_the_runs_own_copy(tmp_path: Path) -> None:
    """A log names Python paths; the server must not read them off its disk (issue 14: nothing outside
    the data folder), only the copy kept with the run."""
    from dashboard.layouts import server_state
    from dashboard.settings import Settings
    from dashboard.views.compiler_data import python_source

    outside = tmp_path / "elsewhere" / "secret_settings.py"
    outside.parent.mkdir()
    outside.write_text("API_TOKEN = 'do-not-serve'\n")
    store = server_state.configure(Settings(data_dir=tmp_path / "data", seed_demo=False))
    log = tmp_path / "dump.txt"
    log.write_text(compile_log("add_kernel", 1024))
    run_id = ingest_paths(store, [log], name="no-source")
    assert python_source(store.open(run_id), str(outside)) is None
    kept = tmp_path / "folder"
    kept.mkdir()
    (kept / "dump.txt").write_text(compile_log("add_kernel", 1024))
    (kept / "secret_settings.py").write_text("import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n")
    with_copy = ingest_paths(store, [kept], name="with-source")
    lines = python_source(store.open(with_copy), str(outside))
    assert lines is not None and "@triton.jit" in lines
