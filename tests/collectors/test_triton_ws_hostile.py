"""Hostile DOT (issue 14): inputs that hung the lexer or reached polars now fail fast, in one line.

Each time bound is a SIGALRM: before the fix these inputs ran for minutes (time x4 per two
characters), so the alarm turns a hang into a failure instead of a stuck test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from dashboard.collectors.dot.grammar import MAX_NESTING
from dashboard.demo import ws_dumps
from dashboard.demo.ws_dump_text import combined_graph, smem_liveness
from tests.support.fuzz_outcomes import time_limit

REPO = Path(__file__).resolve().parents[2]
BIG = "12345678901234567890123456789012"  # 32 digits: past i64 and u64, an i128 for polars


def _ingest_error(path: Path, seconds: float = 2.0) -> IngestError:
    """The IngestError of ingesting `path`, which must come within `seconds`."""
    started = time.perf_counter()
    with time_limit(seconds), pytest.raises(IngestError) as error:
        registry.collect([path])
    assert time.perf_counter() - started < seconds
    message = str(error.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: ")
    return error.value


@pytest.mark.parametrize("length", [34, 3000, 300_000])
def test_unclosed_attribute_list_fails_fast(tmp_path: Path, length: int) -> None:
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n  a [" + "x" * length + "\n}\n")
    error = _ingest_error(path)
    assert "line 2" in error.problem and "unterminated attribute list" in error.problem


@pytest.mark.parametrize("opening", ['a [label=<', 'a [label="', "/* ", 'a [label=<<B>x</B>'])
def test_unclosed_html_string_and_comment_fail_fast(tmp_path: Path, opening: str) -> None:
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n" + opening + "x" * 50_000 + "\n}\n")
    assert "DOT syntax error at line 2" in _ingest_error(path).problem


def test_blank_separated_attribute_pairs_fail_fast_when_one_is_bad(tmp_path: Path) -> None:
    # Two blanks between pairs could be split between two `\s*` in 2^pairs ways.
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n a [" + "k=v  " * 40 + "!]\n}\n")
    assert "malformed attribute list near '!]" in _ingest_error(path).problem


def test_many_blank_separated_pairs_still_parse(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n a [" + "  ".join(f"k{i}=v{i}" for i in range(5000)) + "]\n}\n")
    with time_limit(5):
        run = registry.collect([path])
    assert run.tables["dot_nodes"]["attributes"].str.contains('"k4999": "v4999"').all()


def test_deep_braces_are_a_syntax_error_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n" + "subgraph { " * 50_000 + "a" + " }" * 50_000 + "\n}\n")
    assert f"braces nested more than {MAX_NESTING} deep" in _ingest_error(path, 10).problem


def test_cli_ingest_of_the_issue_reproducer_answers_one_line(tmp_path: Path) -> None:
    """`printf 'digraph G {\\n  a [%s\\n}\\n' xxxx... > g.dot; dashboard ingest g.dot` (ran for minutes)."""
    path = tmp_path / "g.dot"
    path.write_text("digraph G {\n  a [" + "x" * 34 + "\n}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(path), "--data", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert done.returncode == 1
    # Progress lines (`ingest:  0.0% ...`) may come first on a slow machine; the failure is one line.
    errors = [line for line in done.stderr.splitlines() if not line.startswith("ingest:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {path}: DOT syntax error at line 2"), done.stderr


def test_32_digit_attribute_in_a_plain_graph_is_kept_as_text(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text(f"digraph G {{\n a [width={BIG}, label={BIG}];\n a -> b [weight={BIG}];\n}}\n")
    run = registry.collect([path])
    assert run.tables["dot_nodes"]["label"].to_list() == [BIG, None]
    assert BIG in run.tables["dot_edges"]["attributes"][0]


@pytest.mark.parametrize("field", ["size", "buffer id", "channel uid"])
def test_32_digit_number_in_a_planner_label_is_a_warning_naming_its_line(tmp_path: Path, field: str) -> None:
    text = smem_liveness(ws_dumps.attention_kernel())
    needle = {"size": " size=", "buffer id": " B", "channel uid": 'label="ch'}[field]
    at = text.index(needle, text.index("subgraph cluster_smem_1")) + len(needle)
    digits = len(text[at:]) - len(text[at:].lstrip("0123456789"))
    broken = text[:at] + BIG + text[at + digits:]
    path = tmp_path / "dumps" / "smem_liveness_0.dot"
    path.parent.mkdir()
    path.write_text(broken)
    line = broken.count("\n", 0, at) + 1
    with time_limit(5):
        run = registry.collect([path])  # polars' i128 ComputeError before the fix
    [warning] = [w for w in run.warnings if "out of range" in w]
    assert f"line {line}" in warning and BIG[:20] in warning and "skipped" in warning
    assert len(warning.splitlines()) == 1
    assert run.tables["ws_buffers"]["bytes"].max() < 2**63


def test_32_digit_op_id_keeps_the_op_with_its_label(tmp_path: Path) -> None:
    kernel = ws_dumps.attention_kernel()
    text = combined_graph(kernel)
    at = text.index('label="[') + len('label="[')
    digits = len(text[at:]) - len(text[at:].lstrip("0123456789"))
    path = tmp_path / "dumps" / "combined_graph_1.dot"
    path.parent.mkdir()
    path.write_text(text[:at] + BIG + text[at + digits:])
    run = registry.collect([path])
    assert any("out of range; kept with the label as the op name" in w for w in run.warnings)
    ops = run.tables["ws_ops"]
    assert ops.filter(ops["op"].str.starts_with(f"[{BIG}]")).height == 1


def test_string_continued_after_a_backslash_keeps_its_attribute(tmp_path: Path) -> None:
    """`label="first \\<newline>second"` is one string (C convention); it used to vanish from the list."""
    path = tmp_path / "g.dot"
    path.write_text('digraph G {\n a [label="first \\\nsecond", color=red];\n}\n')
    run = registry.collect([path])
    assert run.tables["dot_nodes"]["label"].to_list() == ["first second"]
    assert '"color": "red"' in run.tables["dot_nodes"]["attributes"][0]
