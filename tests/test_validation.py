"""Rows that cannot be right are dropped and counted, per table, with exact wording."""

from __future__ import annotations

import polars as pl

from dashboard import schema
from dashboard.collectors.validation import TEN_YEARS_NS, drop_impossible_rows, rows_of, trace_base_ns

T0 = 1_700_000_000_000_000_000  # an epoch-scale base, in ns


def _kernels(spans: list[tuple[int, int]]) -> pl.DataFrame:
    frame = pl.DataFrame({"name": [f"k{i}" for i in range(len(spans))], "start_ns": [s for s, _ in spans],
                          "end_ns": [e for _, e in spans]})
    return schema.conform("kernels", frame)


def test_end_before_start_is_dropped_and_counted() -> None:
    spans = [(T0 + i, T0 + i + 10) for i in range(200)] + [(T0 + 500 + i, T0 + 400) for i in range(144)]
    kept, warnings = drop_impossible_rows({"kernels": _kernels(spans)}, "trace.json")
    assert kept["kernels"].height == 200
    assert warnings == ["trace.json: 144 kernels end before they start; dropped"]


def test_singular_wording_and_every_rule_once_per_row() -> None:
    copies = schema.conform("memcpy", pl.DataFrame({
        "start_ns": [T0, T0 + 10, T0 + 20, -(2**63), T0 + 40],
        "end_ns": [T0 + 5, T0 + 5, T0 + 25, T0, T0 + 45],
        "bytes": [64, 64, -1, -1, None],  # unknown bytes (null) are not negative
    }))
    kept, warnings = drop_impossible_rows({"memcpy": copies}, "x.sqlite")
    assert kept["memcpy"]["start_ns"].to_list() == [T0, T0 + 40]
    assert warnings == [
        "x.sqlite: 1 copy starts or ends more than 10 years away from the rest of the trace; dropped",
        "x.sqlite: 1 copy ends before it starts; dropped",
        "x.sqlite: 1 copy has a negative byte count; dropped",
    ]


def test_the_base_is_the_median_so_wild_values_cannot_move_it() -> None:
    spans = [(T0 + i, T0 + i + 1) for i in range(5)] + [(2**62, 2**62 + 1), (-(2**63), 0)]
    tables = {"kernels": _kernels(spans), "ranges": schema.conform("ranges", pl.DataFrame(
        {"start_ns": [T0 + 7], "end_ns": [T0 + 8 + TEN_YEARS_NS]}))}
    assert abs(trace_base_ns(tables) - (T0 + 4)) < 1_000  # a float median: ns-exact does not matter here
    kept, warnings = drop_impossible_rows(tables, "t.json")
    assert kept["kernels"].height == 5 and kept["ranges"].height == 0
    assert warnings == [
        "t.json: 2 kernels start or end more than 10 years away from the rest of the trace; dropped",
        "t.json: 1 range starts or ends more than 10 years away from the rest of the trace; dropped",
    ]


def test_a_trace_near_zero_keeps_negative_times_within_ten_years() -> None:
    # nsys times are relative to the session start: a few seconds before it is fine.
    kept, warnings = drop_impossible_rows({"kernels": _kernels([(-5_000_000_000, -4_000_000_000), (0, 10)])}, "n")
    assert kept["kernels"].height == 2 and warnings == []


def test_tables_without_times_or_bytes_pass_untouched() -> None:
    memory = schema.empty("op_memory")
    kept, warnings = drop_impossible_rows({"op_memory": memory}, "log")
    assert kept["op_memory"] is memory and warnings == []


def test_row_nouns() -> None:
    assert rows_of("api_calls", 1) == "1 API call"
    assert rows_of("kernels", 5117) == "5,117 kernels"
    assert rows_of("op_meta", 2) == "2 rows of op_meta"


def test_groups_of_files_are_named_by_their_files_or_their_folder() -> None:
    from pathlib import Path

    from dashboard.collectors.registry import source_label

    assert source_label([Path("/d/a.json")]) == "/d/a.json"
    assert source_label([Path("/d/a.json"), Path("/d/b.json")]) == "/d/a.json, /d/b.json"
    assert source_label([Path(f"/d/r{i}.json") for i in range(8)]) == "8 files in /d"
    assert source_label([Path("/d/x/a"), Path("/d/y/b"), Path("/d/y/c"), Path("/d/z/d")]) == "4 files in /d"


def test_a_negative_detail_size_is_cleared_not_the_row() -> None:
    # Found by the long fuzz run: a huge or sign-flipped `shared memory` in a Kineto or nsys kernel
    # was stored as a negative size. The kernel ran; only that field is unreadable.
    kernels = _kernels([(T0 + i, T0 + i + 10) for i in range(4)]).with_columns(
        pl.Series("shared_memory", [0, -5, 1024, -1], dtype=pl.Int64))
    kept, warnings = drop_impossible_rows({"kernels": kernels}, "trace.json")
    assert kept["kernels"].height == 4
    assert kept["kernels"]["shared_memory"].to_list() == [0, None, 1024, None]
    assert warnings == ["trace.json: 2 kernels have a negative shared_memory; cleared"]
    one = kernels.with_columns(pl.Series("shared_memory", [0, -5, 1, 2], dtype=pl.Int64))
    assert drop_impossible_rows({"kernels": one}, "t")[1] == ["t: 1 kernel has a negative shared_memory; cleared"]


def test_negative_allocator_totals_are_cleared_only_where_they_are_absolute() -> None:
    # A damaged snapshot can give an absolute `allocated` below zero (found by fuzzing the snapshot
    # collector); a relative curve (running sum from the trace's start) may go below zero by design.
    events = schema.conform("device_memory", pl.DataFrame({
        "time_ns": [T0, T0 + 1, T0 + 2, T0 + 3], "bytes_delta": [10, -20, 5, -30],
        "allocated": [10, -10, -5, -35], "relative": [False, False, True, True]}))
    kept, warnings = drop_impossible_rows({"device_memory": events}, "snap.pickle")
    assert kept["device_memory"]["allocated"].to_list() == [10, None, -5, -35]
    assert warnings == ["snap.pickle: 1 allocator event has a negative allocated; cleared"]
