"""Property-based fuzzing (Hypothesis) of the parsers and the ingest contract (issue 14).

Derandomized (a fixed sequence of examples per test, the same on every machine) with small
example counts: the whole fuzz folder stays within the CI budget of two minutes. Each example
runs under its own alarm, so Hypothesis' deadline is off (a loaded CI machine is not a bug).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.collectors.dot.grammar import parse_dot
from dashboard.collectors.dot.graph import DotSyntaxError
from tests.support.fuzz_known import HARD_FAILURES, WORDING_FAILURES
from tests.support.fuzz_mutations import EXTREMES, make_case, mutations_for
from tests.support.fuzz_outcomes import FAILURES, ingest_outcome, time_limit
from tests.support.fuzz_seeds import FORMATS, build_seeds

# A backstop for a hang inside C code, which the per-case SIGALRM cannot interrupt (thread method: the
# signal method would take over the same alarm).
pytestmark = pytest.mark.timeout(300, method="thread")
SEEDS = build_seeds()
FUZZ = settings(derandomize=True, deadline=None, max_examples=60, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Text made mostly of what DOT's lexer cares about, so examples reach deep into the grammar.
_DOT_PIECES = st.sampled_from(['"', "\\", "[", "]", "{", "}", "<", ">", "=", ";", ",", ":", "->", "--", "/*", "*/",
                               "//", "#", "\n", " ", "a", "1", ".", "-", "+", "subgraph", "node", "edge", "graph",
                               "label", "é", "\x00", "\ufffd"])
_DOT_TEXT = st.lists(st.one_of(_DOT_PIECES, st.text(max_size=4)), max_size=120).map("".join)


@FUZZ
@given(body=_DOT_TEXT)
def test_dot_parser_returns_or_raises_a_syntax_error_quickly(body: str) -> None:
    with time_limit(2.0):
        try:
            graphs = parse_dot("digraph G {\n" + body + "\n}\n")
        except DotSyntaxError as error:
            assert error.line is None or 1 <= error.line <= body.count("\n") + 3
            assert len(str(error).splitlines()) == 1
        else:
            assert graphs and graphs[0].directed


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: name.lower() not in {"graph", "digraph", "node", "edge", "subgraph", "strict"})
_LABEL = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)


def _quoted(text: str) -> str:
    # DOT escapes only `"` and `\`; a `\n`, `\l`, `\r` pair in a label means a line break when read back.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@FUZZ
@given(labels=st.dictionaries(_NAME, _LABEL, min_size=1, max_size=8), data=st.data())
def test_dot_round_trip_keeps_nodes_edges_and_labels(labels: dict[str, str], data: st.DataObject) -> None:
    names = list(labels)
    edges = data.draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=10))
    separator = data.draw(st.sampled_from([", ", " ", "; ", "  ,  "]))
    lines = [f"  {name} [label={_quoted(label)}{separator}shape=box];" for name, label in labels.items()]
    lines += [f"  {src} -> {dst} [weight={n}];" for n, (src, dst) in enumerate(edges)]
    with time_limit(2.0):
        [graph] = parse_dot("digraph G {\n" + "\n".join(lines) + "\n}\n")
    assert list(graph.nodes) == names
    assert {name: node.attrs["label"] for name, node in graph.nodes.items()} == labels
    assert [(e.src, e.dst, e.attrs["weight"]) for e in graph.edges] == [
        (src, dst, str(n)) for n, (src, dst) in enumerate(edges)]


def _live_classes(format_name: str) -> list[str]:
    """Mutation classes without a known failure (those are xfailed, class by class, in the corpus)."""
    return [m for m in sorted(set(mutations_for(SEEDS[format_name][0])))
            if (format_name, m) not in HARD_FAILURES and (format_name, m) not in WORDING_FAILURES]


@pytest.mark.parametrize("format_name", FORMATS)
def test_hypothesis_chosen_mutations_keep_the_contract(format_name: str) -> None:
    classes = _live_classes(format_name)

    @settings(FUZZ, max_examples=25)
    @given(mutation=st.sampled_from(classes), index=st.integers(min_value=1000, max_value=2**32))
    def check(mutation: str, index: int) -> None:
        case = make_case(SEEDS[format_name], index, master_seed=1, mutation=mutation)
        with tempfile.TemporaryDirectory(prefix="fuzz-") as work:
            outcome = ingest_outcome(case.write(Path(work)), timeout=10.0)
        assert outcome.kind not in FAILURES, f"{case.case_id}: {outcome}"

    check()


_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float(v) if v not in ("NaN", "Infinity") else v for v in EXTREMES if v[-1].isdigit()]),
    st.text(max_size=5),
    st.none(),
)


@settings(FUZZ, max_examples=40)
@given(field=st.sampled_from(["ts", "dur", "pid", "tid"]), value=_NUMBERS,
       category=st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy"]))
def test_kineto_event_fields_take_any_json_value(field: str, value: object, category: str) -> None:
    document = json.loads(SEEDS["kineto_json"][0].data)
    event = next(e for e in document["traceEvents"] if e.get("cat") == category)
    event[field] = value
    with tempfile.TemporaryDirectory(prefix="fuzz-") as work:
        path = Path(work) / "trace.json"
        path.write_text(json.dumps(document, allow_nan=True))
        outcome = ingest_outcome([path], timeout=10.0)
    assert outcome.kind not in FAILURES, f"{field}={value!r} in a {category} event: {outcome}"
