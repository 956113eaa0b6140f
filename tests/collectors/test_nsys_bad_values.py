"""Nsight Systems exports with cells no export should hold: one clear line, or dropped and counted."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from dashboard.demo.nsys_export import ExportOptions, ExportTruth, write_export

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExportTruth]:
    path = tmp_path_factory.mktemp("nsys") / "base.sqlite"
    return path, write_export(path, ExportOptions(rank=0, steps=1, layers=1))


def _variant(export: tuple[Path, ExportTruth], folder: Path, *statements: str) -> Path:
    path = folder / "edited.sqlite"
    shutil.copyfile(export[0], path)
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    return path


def test_kernels_ending_before_they_start_are_dropped_and_counted(export, tmp_path: Path) -> None:
    """Defect 3: this export ingested with exit 0 and a negative total kernel time."""
    path = _variant(export, tmp_path, f"UPDATE {KERNEL} SET end = start - 1000 WHERE rowid <= 4")
    run = registry.collect([path])
    kernels = run.tables["kernels"]
    assert kernels.height == export[1].kernels - 4
    assert (kernels["end_ns"] - kernels["start_ns"]).min() >= 0
    assert f"{path}: 4 kernels end before they start; dropped" in run.warnings


@pytest.mark.parametrize(
    ("statement", "table", "warning"),
    [
        (f"UPDATE {KERNEL} SET start = -9223372036854775808 WHERE rowid = 1", "kernels",
         "1 kernel starts or ends more than 10 years away from the rest of the trace; dropped"),
        (f"UPDATE {KERNEL} SET end = -9223372036854775808 WHERE rowid = 1", "kernels",
         "1 kernel starts or ends more than 10 years away from the rest of the trace; dropped"),
        ("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = -9223372036854775808 WHERE rowid = 1", "api_calls",
         "1 API call starts or ends more than 10 years away from the rest of the trace; dropped"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -9223372036854775808 WHERE rowid = 1", "memcpy",
         "1 copy has a negative byte count; dropped"),
    ],
)
def test_minus_2_to_the_63_is_dropped_and_counted(export, tmp_path: Path, statement: str, table: str,
                                                   warning: str) -> None:
    path = _variant(export, tmp_path, statement)
    run = registry.collect([path])
    assert f"{path}: {warning}" in run.warnings
    frame = run.tables[table]
    assert frame.filter(pl.col("start_ns") < 0).height == 0
    assert frame.filter(pl.col("end_ns") < pl.col("start_ns")).height == 0


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (f"UPDATE {KERNEL} SET start = 'hello' WHERE rowid = 1",
         f"text where an integer is expected (where: table {KERNEL}, column start, 1 row, first at rowid 1: "
         "'hello')"),
        (f"UPDATE {KERNEL} SET gridX = 'x' WHERE rowid IN (2, 3)",
         f"text where an integer is expected (where: table {KERNEL}, column gridX, 2 rows, first at rowid 2: 'x')"),
        (f"UPDATE {KERNEL} SET start = 1e30 WHERE rowid = 1",
         f"a fractional or too large number where an integer is expected (where: table {KERNEL}, column start, "
         "1 row, first at rowid 1: '1.0e+30')"),
        (f"UPDATE {KERNEL} SET deviceId = x'0102' WHERE rowid = 1",
         f"binary data where an integer is expected (where: table {KERNEL}, column deviceId, 1 row, first at "
         "rowid 1: '\\x01\\x02')"),
        ("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 'abc' WHERE rowid = 1",
         "text where an integer is expected (where: table CUPTI_ACTIVITY_KIND_RUNTIME, column correlationId, "
         "1 row, first at rowid 1: 'abc')"),
    ],
)
def test_a_wrong_typed_cell_is_one_line_naming_table_column_and_row(export, tmp_path: Path, statement: str,
                                                                    problem: str) -> None:
    path = _variant(export, tmp_path, statement)
    with pytest.raises(IngestError) as caught:
        registry.collect([path])
    assert caught.value.path == str(path)
    assert caught.value.problem == problem


def test_an_export_without_kernels_says_so(export, tmp_path: Path) -> None:
    path = _variant(export, tmp_path, f"DELETE FROM {KERNEL}")
    run = registry.collect([path])
    truth = export[1]
    copies = truth.copies + truth.memsets
    assert run.warnings[0] == (f"{path}: no GPU kernels ({copies:,} copies and memsets, {truth.api_calls:,} CUDA API "
                               f"calls, {truth.nvtx_ranges:,} NVTX ranges)")


def test_a_damaged_database_is_named_in_plain_words(export, tmp_path: Path) -> None:
    path = tmp_path / "damaged.sqlite"
    data = bytearray(export[0].read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 2: page * 4] = b"\xa5" * (page * 2)  # scribble over the schema's pages
    path.write_bytes(bytes(data))
    with pytest.raises(IngestError) as caught:
        registry.collect([path])
    assert caught.value.problem.startswith("corrupt SQLite database")
    assert caught.value.problem.endswith(": the database is damaged (malformed pages)")  # not SQLite's wording
