"""Sort-based interval nesting used by the Kineto collector."""

from __future__ import annotations

import polars as pl

from dashboard.collectors.kineto.nesting import depth_from_parents, enclosing, flag_inherited, inherit, nest
from dashboard.collectors.kineto.ranges import module_path


def _tree(frame: pl.DataFrame) -> dict[str, tuple[str | None, int]]:
    names = frame.get_column("name")
    return {
        row["name"]: (None if row["parent_row"] is None else names[row["parent_row"]], row["depth"])
        for row in frame.iter_rows(named=True)
    }


def test_nest_handles_siblings_touching_ends_zero_length_and_tracks() -> None:
    frame = pl.DataFrame(
        {
            "t": [1, 1, 1, 1, 1, 1, 2],
            "name": ["A", "B", "C", "D", "E", "F", "H"],
            "start_ns": [0, 10, 20, 50, 60, 60, 5],
            "end_ns": [100, 50, 30, 60, 60, 60, 6],
        }
    )
    assert _tree(nest(frame, ["t"])) == {
        "A": (None, 0),
        "B": ("A", 1),
        "C": ("B", 2),
        "D": ("A", 1),  # starts where B ends: a sibling, not a child
        "E": ("A", 1),
        "F": ("E", 2),  # identical zero-length intervals nest in order
        "H": (None, 0),  # another track
    }


def test_nest_repairs_a_child_that_overruns_its_parent() -> None:
    # C overruns P by rounding; D starts after P ended but inside C.
    frame = pl.DataFrame(
        {
            "t": [1] * 4,
            "name": ["P", "C", "D", "Q"],
            "start_ns": [0, 5, 10_500, 20],
            "end_ns": [10_000, 11_000, 12_000, 30],
        }
    )
    tree = _tree(nest(frame, ["t"]))
    assert tree["C"] == ("P", 1) and tree["Q"] == ("C", 2)
    parent, depth = tree["D"]
    assert parent in (None, "C")  # never the closed P
    assert depth == (0 if parent is None else 2)


def test_enclosing_finds_the_innermost_eligible_open_range() -> None:
    ranges = nest(
        pl.DataFrame(
            {
                "t": [1, 1, 1, 1],
                "name": ["step", "op", "py_frame", "late"],
                "start_ns": [0, 10, 20, 200],
                "end_ns": [1000, 100, 40, 210],
            }
        ),
        ["t"],
    )
    eligible = ranges.get_column("name") != "py_frame"
    points = pl.DataFrame({"t": [1, 1, 1, 1, 2], "start_ns": [25, 150, 205, -1, 25]})
    found = enclosing(points, ranges, ["t"], eligible)
    names = ranges.get_column("name")
    assert [None if r is None else names[r] for r in found.to_list()] == ["op", "step", "late", None, None]


def test_inherit_flags_and_depth_by_pointer_jumping() -> None:
    parent = pl.Series([None, 0, 1, 2, 3, 0, None], dtype=pl.Int64)
    values = pl.Series([None, "L1", None, None, "L4", None, "root"], dtype=pl.String)
    assert inherit(values, parent).to_list() == [None, "L1", "L1", "L1", "L4", None, "root"]
    flags = pl.Series([False, False, True, False, False, False, False])
    assert flag_inherited(flags, parent).to_list() == [False, False, True, True, True, False, False]
    assert depth_from_parents(parent).to_list() == [0, 1, 2, 3, 4, 1, 0]


def test_module_path_from_module_hierarchy() -> None:
    assert module_path("TOP(C)::forward.A0(A)::forward.") == "A0"
    assert module_path("TOP(C)::forward.SELF(C)::call_b.B0(B)::forward.SELF(B)::call_a.A1(A)::forward.") == "B0.A1"
    assert module_path("TOP(ResNet)::forward.") == "ResNet"
    assert module_path("") is None and module_path(None) is None


def test_nest_orders_as_a_sort_on_every_key_would_though_constant_keys_are_skipped() -> None:
    # `file` and `pid` hold one value and `order` only nulls: the sort leaves them out; `tid` varies,
    # and `rank` varies only by its nulls, so both stay.
    frame = pl.DataFrame(
        {
            "file": [0] * 6,
            "pid": [7] * 6,
            "tid": [2, 1, 2, 1, 2, 1],
            "rank": [None, 1, 1, None, 1, 1],
            "order": pl.Series([None] * 6, dtype=pl.Int64),
            "name": ["a", "b", "c", "d", "e", "f"],
            "start_ns": [5, 0, 5, 0, 1, 0],
            "end_ns": [9, 10, 9, 4, 2, 10],
        }
    )
    keys = ["file", "pid", "tid", "start_ns", "end_ns", "rank", "order"]
    expected = frame.sort(keys, descending=[False, False, False, False, True, False, False], nulls_last=True,
                          maintain_order=True)
    nested = nest(frame, ["file", "pid", "tid"], order=["rank", "order"])
    assert nested.get_column("name").to_list() == expected.get_column("name").to_list()
    assert nest(frame.head(1), ["file", "pid", "tid"]).get_column("depth").to_list() == [0]
