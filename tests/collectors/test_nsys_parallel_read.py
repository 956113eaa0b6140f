"""The Nsight Systems reader's side-by-side read and its launch attribution keys."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.nsys.collector import read_export
from dashboard.collectors.nsys.nvtx import call_ranges, launch_ranges, nest
from dashboard.demo.nsys_export import ExportOptions, write_export


def test_one_cpu_and_several_read_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = tmp_path / "rank0.sqlite"
    write_export(export, ExportOptions(steps=30))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    side_by_side = read_export(export)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    one_thread = read_export(export)
    assert side_by_side.tables.keys() == one_thread.tables.keys()
    for table, frame in side_by_side.tables.items():
        assert frame.height > 0, table
        assert frame.equals(one_thread.tables[table]), table
    assert side_by_side.rank == one_thread.rank
    assert side_by_side.metadata == one_thread.metadata
    assert side_by_side.tables["kernels"]["op"].drop_nulls().len() > 0  # attribution happened


def _ranges() -> pl.DataFrame:
    return nest(pl.DataFrame({"thread": [7, 7], "name": ["outer", "inner"], "start_ns": [0, 10],
                              "end_ns": [100, 50]}))


def test_ids_too_large_to_pack_still_match_their_own_call() -> None:
    # Packed as pid * 2**32 + correlation, (1, 0) and (0, 2**32) would collide: such ids use both columns.
    calls = pl.DataFrame({"pid": [1, 0], "correlation": [0, 2**32], "thread": [7, 7],
                          "start_ns": [20, 60], "end_ns": [30, 70]})
    per_call = call_ranges(calls, _ranges())
    activity = pl.DataFrame({"pid": [0, 1, 5], "correlation": [2**32, 0, 0]})
    assert launch_ranges(activity, per_call).to_list() == ["outer", "inner", None]


def test_a_repeated_correlation_keeps_its_first_call() -> None:
    calls = pl.DataFrame({"pid": [3, 3], "correlation": [9, 9], "thread": [7, 7],
                          "start_ns": [20, 60], "end_ns": [30, 70]})
    per_call = call_ranges(calls, _ranges())
    assert per_call.height == 1
    assert launch_ranges(pl.DataFrame({"pid": [3], "correlation": [9]}), per_call).to_list() == ["inner"]
