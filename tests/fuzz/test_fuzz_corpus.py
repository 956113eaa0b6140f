"""The mutation corpus through the real ingest: every format x every mutation class (issue 14).

Each case is a seed from the project's own generators with one mutation (see
tests/support/fuzz_mutations.py), ingested by `registry.collect` under an alarm. It must ingest,
or fail with one `IngestError` line naming the file in the project's words; never a traceback,
never a hang, never a stored interval that ends before it starts or a negative byte count.
Cases are deterministic: `python benchmarks/fuzz.py --replay CASE_ID` rebuilds and reruns one.
The long run (10,000+ cases per format) is `benchmarks/fuzz.py`.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.fuzz_known import HARD_FAILURES, WORDING_FAILURES
from tests.support.fuzz_mutations import make_case, mutations_for
from tests.support.fuzz_outcomes import FAILURES, LIBRARY_TEXT, OK, Outcome, ingest_outcome
from tests.support.fuzz_seeds import FORMATS, build_seeds, stored_bytes

# A backstop for a hang inside C code, which the per-case SIGALRM cannot interrupt (thread method: the
# signal method would take over the same alarm).
pytestmark = pytest.mark.timeout(300, method="thread")
CASES_PER_CLASS = {"dot_plain": 60, "dot_planner": 60, "nsys": 60}  # cheap per case: more of them
DEFAULT_CASES_PER_CLASS = 24
CASE_SECONDS = 10.0  # the alarm: a parse of these ~200 KB seeds takes well under 0.1 s

SEEDS = build_seeds()


def _params(known: dict[tuple[str, str], str]) -> list[object]:
    params = []
    for format_name in FORMATS:
        for mutation in sorted(set(mutations_for(SEEDS[format_name][0]))):
            reason = known.get((format_name, mutation))
            marks = [pytest.mark.xfail(strict=False, reason=reason)] if reason else []
            params.append(pytest.param(format_name, mutation, marks=marks, id=f"{format_name}-{mutation}"))
    return params


@functools.cache
def _outcomes(format_name: str, mutation: str) -> list[tuple[str, Outcome]]:
    """(case id, outcome) of every case of one class; computed once for both tests below."""
    results = []
    with tempfile.TemporaryDirectory(prefix="fuzz-") as work:
        for index in range(CASES_PER_CLASS.get(format_name, DEFAULT_CASES_PER_CLASS)):
            case = make_case(SEEDS[format_name], index, master_seed=0, mutation=mutation)
            folder = Path(work) / str(index)
            results.append((case.case_id, ingest_outcome(case.write(folder), timeout=CASE_SECONDS)))
            shutil.rmtree(folder)
    return results


def _report(failures: list[str]) -> str:
    return f"{len(failures)} cases broke the contract (replay: python benchmarks/fuzz.py --replay ID):\n" + \
        "\n".join(failures)


@pytest.mark.parametrize("format_name", FORMATS)
def test_seed_ingests_cleanly(tmp_path: Path, format_name: str) -> None:
    """The unmutated seeds are valid input: a failure below is the mutation's doing."""
    for seed in SEEDS[format_name]:
        path = tmp_path / seed.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(stored_bytes(seed, seed.data))
        outcome = ingest_outcome([path], timeout=CASE_SECONDS)
        assert outcome.kind == OK, f"{seed.name}: {outcome}"


@pytest.mark.parametrize(("format_name", "mutation"), _params(HARD_FAILURES))
def test_no_traceback_hang_multi_line_error_or_negative_value(format_name: str, mutation: str) -> None:
    hard = FAILURES - {LIBRARY_TEXT}
    failures = [f"{case_id}: {o.kind} after {o.seconds:.2f} s: {o.detail[:240]}"
                for case_id, o in _outcomes(format_name, mutation) if o.kind in hard]
    assert not failures, _report(failures)


@pytest.mark.parametrize(("format_name", "mutation"), _params(WORDING_FAILURES))
def test_errors_are_one_line_in_the_projects_words(format_name: str, mutation: str) -> None:
    failures = [f"{case_id}: {o.detail[:240]}" for case_id, o in _outcomes(format_name, mutation)
                if o.kind == LIBRARY_TEXT]
    assert not failures, _report(failures)
