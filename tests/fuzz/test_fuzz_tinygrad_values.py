"""Well-formed tinygrad VIZ pickles with any value in any field: what byte mutations rarely reach.

A flipped byte mostly breaks the pickle itself (the corpus' cases end in the unpickler); here the
pickle stays valid and one field of one object (an event's time, a step's matches, a UOp's sources,
a program's estimates, an enum's value) takes a value of another type or an extreme one. The ingest
must still succeed or fail with one line (issue 14's contract), never a traceback or a hang.
"""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.demo.tinygrad_generated import VizBuilder, demo_pair
from dashboard.demo.tinygrad_pickles import Dataclass, Reduced, record
from tests.support.fuzz_outcomes import FAILURES, ingest_outcome

pytestmark = pytest.mark.timeout(300, method="thread")
FUZZ = settings(derandomize=True, deadline=None, max_examples=150, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8), st.binary(max_size=8),
    st.sampled_from([Decimal("NaN"), Decimal("-1e30"), Decimal("1e999999"), Decimal("-0"), Decimal("12.5")]),
    st.just(()), st.just([]), st.just({}), st.just((1, "a", None)), st.just([[[[]]]]),
    st.just(record("tinygrad.helpers", "TracingKey", display_name=7, keys=None, ret=-1, tb="tb")),
)


def _targets(builder: VizBuilder) -> list[tuple[str, Any]]:
    """Every object whose fields a case may change: (kind, object), in a fixed order."""
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()
    pending: list[Any] = [builder.events, builder.keys, builder.rewrites, list(builder.uop_fields.items())]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Dataclass):
            found.append(("fields", item))
            pending.extend(item.fields.values())
        elif isinstance(item, Reduced):
            found.append(("args", item))
            pending.extend(item.args)
        elif isinstance(item, list | tuple):
            if isinstance(item, tuple) and len(item) == 2 and type(item[0]) is int and isinstance(item[1], tuple):
                found.append(("uop", item))  # (trace number, UOp fields)
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return found


def _mutate(builder: VizBuilder, index: int, slot: int, value: Any) -> str:
    kind, target = _targets(builder)[index % len(_targets(builder))]
    if kind == "fields" and target.fields:
        name = sorted(target.fields)[slot % len(target.fields)]
        target.fields[name] = value
        return f"{type(target).__name__}.{name}"
    if kind == "args" and target.args:
        position = slot % len(target.args)
        target.args = (*target.args[:position], value, *target.args[position + 1:])
        return f"{type(target).__name__}[{position}]"
    if kind == "uop":
        number, fields = target
        position = slot % len(fields)
        builder.uop_fields[number] = (*fields[:position], value, *fields[position + 1:])
        return f"uop {number}[{position}]"
    return "nothing"


@FUZZ
@given(index=st.integers(min_value=0, max_value=10_000), slot=st.integers(min_value=0, max_value=20),
       value=_VALUES, file=st.sampled_from(["rewrites.pkl", "profile.pkl", "both"]))
def test_any_value_in_any_field_keeps_the_contract(index: int, slot: int, value: Any, file: str) -> None:
    builder = demo_pair()
    changed = _mutate(builder, index, slot, value)
    rewrites, profile = builder.files()
    with tempfile.TemporaryDirectory(prefix="fuzz-tinygrad-") as work:
        paths = []
        for name, data in (("rewrites.pkl", rewrites), ("profile.pkl", profile)):
            if file in (name, "both"):
                (Path(work) / name).write_bytes(data)
                paths.append(Path(work) / name)
        outcome = ingest_outcome(paths, timeout=10.0)
    assert outcome.kind not in FAILURES, f"{changed} = {value!r}: {outcome}"
