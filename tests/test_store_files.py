"""Writing a run's files: tables time-sorted in parallel, sources copied in the background."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard import schema
from dashboard.ingest.pipeline import SourceCopy
from dashboard.store.files import write_tables


def _kernels(starts: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame({"name": [f"k{i}" for i in range(len(starts))], "start_ns": starts,
                         "end_ns": [None if s is None else s + 5 for s in starts], "rank": [0] * len(starts)})


def test_tables_are_written_time_sorted_nulls_last(tmp_path: Path) -> None:
    counts = write_tables(tmp_path, {"kernels": _kernels([30, None, 10, 20]), "memcpy": schema.empty("memcpy")})
    assert counts == {"kernels": 4, "memcpy": 0}
    written = pl.read_parquet(tmp_path / "kernels.parquet")
    assert written.get_column("start_ns").to_list() == [10, 20, 30, None]
    assert written.get_column("name").to_list() == ["k2", "k3", "k0", "k1"]
    write_tables(tmp_path, {"kernels": _kernels([1, 2, None])})  # already in order: kept as it is
    assert pl.read_parquet(tmp_path / "kernels.parquet").get_column("name").to_list() == ["k0", "k1", "k2"]


def test_a_source_copy_gives_the_copied_names_or_its_own_error(tmp_path: Path) -> None:
    source = tmp_path / "trace.json"
    source.write_bytes(b"{}" * 1000)
    copying = SourceCopy([source], tmp_path / "run" / "source")
    assert copying.result() == ["trace.json"]
    assert (tmp_path / "run" / "source" / "trace.json").read_bytes() == source.read_bytes()
    failing = SourceCopy([tmp_path / "missing.json"], tmp_path / "other" / "source")
    with pytest.raises(FileNotFoundError):
        failing.result()


def test_a_table_writer_writes_as_tables_arrive_and_refuses_one_twice(tmp_path: Path) -> None:
    from dashboard.store.files import TableWriter

    writer = TableWriter(tmp_path)
    writer.write("ranges", pl.DataFrame({"name": ["step"], "start_ns": [1], "end_ns": [9], "rank": [0]}))
    writer.write("kernels", _kernels([5, 3]))
    assert writer.tables == ["ranges", "kernels"]
    with pytest.raises(ValueError, match="handed over twice"):
        writer.write("kernels", _kernels([1]))
    assert writer.finish() == {"ranges": 1, "kernels": 2}  # in the order handed over
    assert pl.read_parquet(tmp_path / "kernels.parquet").get_column("start_ns").to_list() == [3, 5]


def test_a_failed_write_is_raised_by_finish(tmp_path: Path) -> None:
    from dashboard.store.files import TableWriter

    writer = TableWriter(tmp_path / "missing-folder")
    writer.write("kernels", _kernels([1]))
    with pytest.raises(OSError):
        writer.finish()
