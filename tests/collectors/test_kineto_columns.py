"""Grouping decoded Kineto events and pulling their columns, on typed and lenient structs alike."""

from __future__ import annotations

from collections import Counter

import msgspec
import pytest

from dashboard.collectors.kineto.columns import RawColumns, group_events
from dashboard.collectors.kineto.event_types import FAST as _FAST
from dashboard.collectors.kineto.event_types import LENIENT as _LENIENT

CHUNK = msgspec.json.encode([
    {"ph": "X", "cat": "kernel", "name": "k0", "ts": 1, "args": {"grid": [4, 2, 1], "correlation": 7}},
    {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 3, "ts": 2},
    {"ph": "X", "cat": "Kernel", "name": "legacy", "ts": 3, "args": {"block": [128, 1, 1]}},
    {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 3, "ts": 4, "bp": "e"},
    {"ph": "X", "cat": "kernel", "name": "k1", "ts": 5, "args": {"grid": [8, 1, 1], "correlation": 9}},
    {"ph": "X", "name": "no category", "ts": 6},
    {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 5, "ts": 7},
])


def _groups(decoder: msgspec.json.Decoder, lenient: bool) -> list[tuple[str | None, str | None, list[str]]]:
    return [(category, ph, [f"{event.name}@{int(event.ts)}" for event in group])
            for category, ph, group in group_events(decoder.decode(CHUNK), lenient)]


@pytest.mark.parametrize(("decoder", "lenient"), [(_FAST, False), (_LENIENT, True)])
def test_events_grouped_by_category_and_phase_in_file_order(decoder: msgspec.json.Decoder, lenient: bool) -> None:
    groups = sorted(_groups(decoder, lenient), key=lambda group: (str(group[0]), str(group[1]), group[2]))
    # The legacy "Kernel" category is a group of its own under the modern name; a category with
    # two phases (fwdbwd s / f) is split; every group keeps the file order.
    assert groups == [
        (None, "X", ["no category@6"]),
        ("fwdbwd", "f", ["fwdbwd@4"]),
        ("fwdbwd", "s", ["fwdbwd@2", "fwdbwd@7"]),
        ("kernel", "X", ["k0@1", "k1@5"]),
        ("kernel", "X", ["legacy@3"]),
    ]


def test_typed_columns_share_the_args_list_and_read_nested_fields() -> None:
    kernels = next(group for category, ph, group in group_events(_FAST.decode(CHUNK), False)
                   if category == "kernel" and len(group) == 2)
    columns = RawColumns(kernels, False, Counter())
    assert columns.values("args.grid.x") == [4, 8]
    assert columns.values("args.grid.y") == [2, 1]
    assert columns.values("args.correlation") == [7, 9]
    assert columns.values("args.block.x") == [None, None]
    # One args list serves every args field of the group.
    assert columns.values("args") is columns.values("args")
    assert [s.to_list() for s in columns.triple("args.grid", "grid")] == [[4, 8], [2, 1], [1, 1]]
