"""The guards every restricted unpickler shares (collectors/safe_pickle.py), independent of any format."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from dashboard.collectors.safe_pickle import HASH_BUDGET, RefusedPickle, SafeUnpickler, hash_is_bounded


class _Careless(SafeUnpickler):
    """A subclass whose find_class would hand out anything: the base must still refuse to call it."""

    def find_class(self, module: str, name: str) -> Any:
        return getattr(__import__(module), name)


def test_a_callable_find_class_did_not_allow_is_never_called(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    data = pickle.dumps(_Payload(marker), protocol=4)
    with pytest.raises(RefusedPickle, match="no allowed global gave"):
        _Careless(io.BytesIO(data)).load()
    assert not marker.exists()


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize(("value", "bounded"), [
    ("plain", True), (12, True), ((1, "a", (2.5, None)), True), (frozenset({1, (2, 3)}), True),
    (tuple(range(HASH_BUDGET + 1)), False),
])
def test_hash_is_bounded_counts_nested_items(value: object, bounded: bool) -> None:
    assert hash_is_bounded(value) is bounded


def test_a_doubling_tuple_is_unbounded_though_small() -> None:
    value: tuple = ()
    for _ in range(40):
        value = (value, value)  # 2^40 items when hashed, 40 objects in memory
    assert not hash_is_bounded(value)


def test_keys_of_a_plain_pickle_load_as_pickle_loads_them() -> None:
    data = pickle.dumps({("a", 1): [1, 2], "b": {frozenset({3}): None}, 4: {(5, (6,))}}, protocol=4)
    assert SafeUnpickler(io.BytesIO(data)).load() == pickle.loads(data)
