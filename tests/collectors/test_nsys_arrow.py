"""The Arrow reader of Nsight Systems exports (ADBC's SQLite driver) gives what the row reader gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.nsys import db as nsys_db
from dashboard.demo.nsys_export import ExportOptions, write_export


def test_arrow_and_row_readers_give_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    export = tmp_path / "rank0.sqlite"
    write_export(export, ExportOptions(steps=20))
    used = {"arrow": 0, "rows": 0}
    arrow_frame = nsys_db.Export._arrow_frame

    def counted(self: nsys_db.Export, table: str, fields: dict, where: str) -> object:
        frame = arrow_frame(self, table, fields, where)
        used["arrow" if frame is not None else "rows"] += 1
        return frame

    monkeypatch.setattr(nsys_db.Export, "_arrow_frame", counted)
    by_arrow = registry.collect([export]).tables
    assert used["arrow"] >= 4  # kernels, copies, runtime calls and NVTX ranges at least go through Arrow
    # The export holds an NVTX text that is not UTF-8: repaired on the Arrow side as the row reader does
    # (compared below), no longer sending the whole NVTX table (nor StringIds) to the row reader.
    assert used["rows"] == 0
    monkeypatch.setattr(nsys_db, "adbc_sqlite", None)
    by_rows = registry.collect([export]).tables
    assert by_arrow.keys() == by_rows.keys()
    for table, frame in by_arrow.items():
        assert frame.equals(by_rows[table]), table


def test_text_in_a_number_column_falls_back_to_the_row_reader_and_its_message(tmp_path: Path) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    import sqlite3

    export = tmp_path / "bad.sqlite"
    write_export(export, ExportOptions(steps=2))
    with sqlite3.connect(export) as conn:
        conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'hello' WHERE rowid = 3")
    with pytest.raises(registry.IngestError, match="text where an integer is expected"):
        registry.collect([export])
