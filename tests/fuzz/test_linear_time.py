"""Every Python regular expression that reads user input runs in linear time (issue 14, Deliver 1).

Each case feeds one pattern (or the function around it) the input that makes a backtracking
pattern blow up: a long run of what a nested or adjacent quantifier can split many ways, followed
by a character that makes the match fail. At 200,000 characters a quadratic pattern needs minutes,
an exponential one forever; a linear one needs milliseconds, so a 2 s alarm separates them even
on a loaded machine. Patterns evaluated by polars (Rust's regex crate) are linear by construction
and not listed here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dashboard.analysis import timeline_lanes
from dashboard.collectors.dot import grammar as dot_grammar
from dashboard.collectors.kineto import ranges as kineto_ranges
from dashboard.collectors.torch_snapshot import bounded as snapshot_bounded
from dashboard.collectors.triton_ir import headers as ir_headers
from dashboard.collectors.triton_ws import blocks as triton_ws_blocks
from dashboard.collectors.triton_ws import collector as triton_ws
from dashboard.collectors.triton_ws import semantics as triton_ws_semantics
from dashboard.figures import text_width
from tests.support.fuzz_outcomes import time_limit

# A backstop for a hang inside C code, which the per-case SIGALRM cannot interrupt (thread method: the
# signal method would take over the same alarm).
pytestmark = pytest.mark.timeout(300, method="thread")
N = 200_000


def _dot(text: str) -> Callable[[], object]:
    def parse() -> object:
        try:
            return dot_grammar.parse_dot(text)
        except dot_grammar.DotSyntaxError as error:
            return error

    return parse


CASES: dict[str, Callable[[], object]] = {
    # DOT lexer: unclosed attribute list / HTML label / string / comment / port chain.
    "dot attribute list unclosed": _dot("digraph G {\n a [" + "x" * N + "\n}"),
    "dot attribute list, one bad pair": _dot("digraph G {\n a [" + "k=v  " * (N // 5) + "!]\n}"),
    "dot attribute list, numbers": _dot("digraph G {\n a [" + "k=1.5 " * (N // 6) + "!]\n}"),
    "dot attribute list, joined strings": _dot('digraph G {\n a [' + 'k="x" + "y" ' * (N // 12) + "!]\n}"),
    "dot html label unclosed": _dot("digraph G {\n a [label=<" + "x" * N + "]\n}"),
    "dot html label, nested tags unclosed": _dot("digraph G {\n a [label=<" + "<b>x</b>" * (N // 8) + "]\n}"),
    "dot string unclosed": _dot('digraph G {\n a [label="' + "x\\\"" * (N // 3) + "]\n}"),
    "dot comment unclosed": _dot("digraph G {\n /*" + "*" * N + "\n}"),
    "dot ports": _dot("digraph G {\n a" + " : p" * (N // 4) + " : \n}"),
    "dot blanks and semicolons": _dot("digraph G {" + " ;" * (N // 2) + " !"),
    "dot numerals": _dot("digraph G {\n a [k=" + "1." * (N // 2) + "]\n}"),
    # A chart label's width (figures.text_width): its markup and line breaks over kernel names and run ids.
    "chart label markup unclosed": lambda: text_width.text_px("<" * N),
    "chart label tags and breaks": lambda: text_width.text_px("<b" + "<br " * (N // 4) + "x"),
    # An allocator snapshot's opcode walk: a possessive run of fixed-length pieces, then an over-long
    # length-prefixed string it must stop before.
    "snapshot opcode run": lambda: snapshot_bounded._FIXED_RUN.match(b"K\x01" * (N // 2) + b"\x8c\xff"),
    # Finding a graph in a file and the planner's blocks in a log.
    "graph start line": lambda: triton_ws._GRAPH_START.fullmatch("digraph" + " " * N + "!"),
    "header line": lambda: triton_ws._HEADER_LINE.match("=== " + " ===\t" * (N // 5) + "x"),
    "planner log marker": lambda: triton_ws._PLANNER_LOG.search("[MemoryPlanner" * (N // 14)),
    "kernel name in a log": lambda: list(triton_ws_blocks._KERNEL.finditer("\n" * N + " tt.fun")),
    "dumped-to line": lambda: triton_ws_blocks._DUMPED.search("Dumped SMEM liveness to: x" + " " * N + "y\nz"),
    "block start and end": lambda: list(triton_ws_blocks._BLOCK_END.finditer("}" + " " * N + "x\n" * 5)),
    # Planner labels.
    "op label, many `x = f(`": lambda: triton_ws_semantics._op_label("a = f(" * (N // 6) + "!"),
    "op label, three lines": lambda: triton_ws_semantics._op_label("a = f()" * (N // 7) + "\nx\ny"),
    "op second line": lambda: triton_ws_semantics._SECOND_LINE.match(", L1" * (N // 4) + "x"),
    "smem buffer label": lambda: triton_ws_semantics._SMEM_LABEL.match(" B1 [1-2) size=1" * (N // 16) + "x"),
    "tmem buffer label": lambda: triton_ws_semantics._TMEM_LABEL.match(" 1x1 [1-2)" * (N // 10) + "x"),
    "channel edge label": lambda: triton_ws_semantics._EDGE_LABEL.match('ch1 B1\n"' + 'x"' * N + "\n(SMEM)x"),
    "summary table": lambda: triton_ws_semantics._SUMMARY_ROW.findall("<TR>" + "<TD>x</TD>" * (N // 10)),
    # Kernel names on the timeline.
    "kernel name, nested templates": lambda: timeline_lanes.display_name("f" + "<" * N + ">" * N + "()"),
    "kernel name, long word": lambda: timeline_lanes.display_name("a" * N + " elementwise_kernel"),
    "kernel name, nested parameters": lambda: timeline_lanes.display_name("k" + "(" * N + ")" * N),
    # Kineto's module hierarchy (`TOP(Net)::forward.fc1(Linear)::forward`).
    "kineto module path": lambda: kineto_ranges.module_path("a(" + ")::x" * (N // 4) + "\ny"),
    # Triton IR dump headers: split with string methods, never `.+?` before optional groups.
    "mlir dump header": lambda: ir_headers.parse_header("// -----// IR Dump After " + " on (" * (N // 5)),
    "mlir dump header, anchors": lambda: ir_headers.parse_header(
        "// -----// IR Dump Before X: a ('" + "a' operation: @" * (N // 16) + " //----- //"),
    "llvm dump header": lambda: ir_headers.parse_header("*** IR Dump After " + "x Failed on " * (N // 12)),
    "internal dump header": lambda: ir_headers.parse_header(
        "// -----// W internal IR Dump Before: " + " " * N + "x"),
}


# Kineto's module hierarchy (`TOP(Net)::forward.fc1(Linear)::forward`): `^(\w+)\((.*?)\)(?:::.*)?$` retries
# `(?:::.*)?$` at every `)`, quadratic; kineto_ranges.py belongs to the error-contract work (issue 14).
QUADRATIC_TODAY: dict[str, object] = {}


@pytest.mark.parametrize("case", [
    *CASES,
    *(pytest.param(name, marks=pytest.mark.xfail(strict=False, reason="issue 14: kineto_ranges._MODULE_PART is "
                                                 "quadratic; fix: find the first `)` followed by `::` or the "
                                                 "end in one search"))
      for name in QUADRATIC_TODAY),
])
def test_pattern_is_linear(case: str) -> None:
    with time_limit(2.0):
        {**CASES, **QUADRATIC_TODAY}[case]()


def test_every_python_regex_module_is_audited() -> None:
    """A new `import re` in a module that reads input must add its patterns above (or say why not)."""
    audited_elsewhere = {
        # Input patterns checked above.
        "collectors/dot/grammar.py", "collectors/dot/lazy_regex.py",  # compiles the grammar's patterns
        "collectors/triton_ws/collector.py", "collectors/triton_ws/blocks.py",
        "collectors/triton_ws/semantics.py", "analysis/timeline_lanes.py",
        # Single-pass patterns without nested or adjacent quantifiers over the same characters
        # (character classes, anchored literals, bounded `\d{1,4}`): linear as written.
        "views/file_names.py", "figures/planner_graph.py", "collectors/nsys/enums.py", "collectors/nsys/readers.py",
        "collectors/tt/common.py", "collectors/tt/runtime_log.py", "collectors/kineto/decode.py",
        "collectors/kineto/parallel.py", "collectors/kineto/tables.py", "capture/rank_merge.py",
        "capture/cupti_backend.py", "app.py", "store/runs.py", "collectors/kineto/flops.py", "views/chart_events.py",
        "analysis/kernel_names.py", "analysis/kernel_name_parse.py", "views/memory_data.py", "pages/home.py",
        "collectors/tinygrad/__init__.py", "collectors/tinygrad/values.py",
        "analysis/uop_shown.py",  # literal alternatives and one anchored `\d+ bytes [0-9a-f]+`
        "views/tinygrad.py",  # an ANSI colour code: ESC [ digits-and-semicolons m
        "collectors/torch_snapshot/bounded.py",  # the opcode run, checked above
        "collectors/kineto/ranges.py", "collectors/triton_ir/headers.py",
        "figures/text_width.py",  # chart labels' markup and line breaks, checked above
        # Possessive or single-path patterns over disjoint character classes, literals, or tokens
        # that cannot overlap (one alternative per first character): linear as written.
        "analysis/compiler_memory.py", "collectors/failures.py", "collectors/triton_ir/bodies.py",
        "collectors/triton_ir/folders.py", "collectors/triton_ir/locs.py", "collectors/triton_ir/logs.py",
        "layouts/ir_code.py", "layouts/run_warnings.py",
        # Over bounded text only: file names (at most 255 bytes) and a device name cut to 200 characters.
        "analysis/gpu_peak_flops.py", "collectors/rank_names.py", "collectors/tritonparse/__init__.py",
        "ingest/uploads.py",  # an upload's file name (cut to 120 characters) and a 32-hex id
        # Path components of disjoint classes (no `/` inside one), over an exception's one-line message.
        "server/messages.py",
        # Runs on Graphviz's own SVG output (one <svg> element), never on user text.
        "figures/graphviz_svg.py",
        # Runs on Dash's own script tags for the page (`[^"]*` runs split by literals), never on user text.
        "layouts/lazy_libraries.py",
        "server/asset_bundles.py",  # and on assets/' own file names; `[^"?]+` runs split by literals
    }
    package = Path(timeline_lanes.__file__).resolve().parents[1]
    using_re = {str(path.relative_to(package)) for path in package.rglob("*.py")
                if "import re\n" in path.read_text(encoding="utf-8")}
    assert using_re <= audited_elsewhere, f"not audited yet: {sorted(using_re - audited_elsewhere)}"
