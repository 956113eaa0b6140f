"""The Nsight Systems SQLite collector against generated exports (known truth)."""

from __future__ import annotations

import gzip
import sqlite3
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard import schema
from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress, probe_file
from dashboard.collectors.nsys import collector as nsys
from dashboard.collectors.nsys.nvtx import nest
from dashboard.demo import nsys_export
from dashboard.demo.nsys_export import BAD_UTF8_DECODED, KERNEL_NAMES, ExportOptions, write_export


def _collect(*paths: Path) -> dict[str, pl.DataFrame]:
    result = nsys.COLLECTOR.collect(list(paths), no_progress)
    return {name: schema.conform(name, frame) for name, frame in result.tables.items()}


def _edit(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.fixture(scope="module")
def modern(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, nsys_export.ExportTruth]:
    path = tmp_path_factory.mktemp("nsys") / "modern.sqlite"
    return path, write_export(path, ExportOptions(rank=3, steps=3, layers=3))


@pytest.fixture(scope="module")
def modern_tables(modern: tuple[Path, nsys_export.ExportTruth]) -> dict[str, pl.DataFrame]:
    return _collect(modern[0])


def test_sniff_claims_exports_and_nothing_else(tmp_path: Path, modern) -> None:
    assert nsys.COLLECTOR.sniff(probe_file(modern[0]))
    other = tmp_path / "other.sqlite"
    _edit(other, "CREATE TABLE StringIds (id INTEGER, value TEXT)", "CREATE TABLE notes (body TEXT)")
    assert not nsys.COLLECTOR.sniff(probe_file(other))
    text = tmp_path / "notes.txt"
    text.write_text("SQLite format 2 is not this\n")
    assert not nsys.COLLECTOR.sniff(probe_file(text))
    compressed = tmp_path / "modern.sqlite.gz"
    compressed.write_bytes(gzip.compress(modern[0].read_bytes()))
    assert nsys.COLLECTOR.sniff(probe_file(compressed))
    assert _collect(compressed)["kernels"].height == modern[1].kernels


def test_counts_and_totals_match_what_was_written(modern, modern_tables) -> None:
    truth, tables = modern[1], modern_tables
    kernels, copies = tables["kernels"], tables["memcpy"]
    assert kernels.height == truth.kernels
    assert (kernels["end_ns"] - kernels["start_ns"]).sum() == truth.kernel_ns
    real_copies = copies.filter(pl.col("kind") != "Memset")
    assert real_copies.height == truth.copies
    assert real_copies["bytes"].sum() == truth.copy_bytes
    assert copies.filter(pl.col("kind") == "Memset").height == truth.memsets
    # Backtrace duplicates (event class 67) are not API calls of their own.
    assert tables["api_calls"].height == truth.api_calls
    assert tables["ranges"].height == truth.nvtx_ranges
    assert set(kernels["rank"]) == {3}


def test_names_come_from_string_ids(modern_tables) -> None:
    kernels = modern_tables["kernels"]
    assert set(kernels["name"]) == {names[0] for names in KERNEL_NAMES.values()}  # demangled first
    gemm = kernels.filter(pl.col("name") == "ampere_sgemm_128x64_tn").row(0, named=True)
    assert (gemm["grid_x"], gemm["block_x"], gemm["registers"], gemm["shared_memory"]) == (64, 128, 122, 32768)
    calls = modern_tables["api_calls"]
    assert {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMalloc"} <= set(calls["name"])
    assert calls.filter(pl.col("name") == "cuModuleGetLoadingMode")["category"].to_list() == ["cuda_driver"]
    ranges = modern_tables["ranges"]
    assert "ncclAllReduce" in set(ranges["name"])  # a registered string, only reachable via textId
    assert set(ranges["category"]) == {"nvtx"}


def test_enum_tables_win_and_builtin_maps_cover_old_exports(tmp_path: Path) -> None:
    modern, legacy = tmp_path / "modern.sqlite", tmp_path / "legacy.sqlite"
    write_export(modern, ExportOptions(steps=2))
    write_export(legacy, ExportOptions(steps=2, legacy=True))
    for path in (modern, legacy):
        copies = _collect(path)["memcpy"]
        assert Counter(copies["kind"]) == {"HtoD": 2, "DtoH": 2, "Memset": 2}
        htod = copies.filter(pl.col("kind") == "HtoD")
        assert set(htod["src_kind"]) == {"Pinned"} and set(htod["dst_kind"]) == {"Device"}
    newer_kind = "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 14 WHERE copyKind = 2"
    _edit(modern, "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (14, 'CUDA_MEMCPY_KIND_FUTURE', 'Future copy')", newer_kind)
    _edit(legacy, newer_kind)
    assert Counter(_collect(modern)["memcpy"]["kind"])["Future copy"] == 2
    assert Counter(_collect(legacy)["memcpy"]["kind"])["kind 14"] == 2


def test_nvtx_nesting_follows_the_push_pop_stack(modern, modern_tables) -> None:
    ranges = modern_tables["ranges"]
    assert ranges["depth"].max() == modern[1].max_depth
    by_id = {row["id"]: row for row in ranges.iter_rows(named=True)}
    layer = next(row for row in by_id.values() if row["name"] == "layer1 backward")
    chain = []
    while layer is not None:
        chain.append((layer["name"], layer["depth"]))
        layer = by_id.get(layer["parent"])
    assert chain == [("layer1 backward", 3), ("backward", 2), ("step 0", 1), ("epoch 0", 0)]
    parents = ranges.join(ranges.select(parent="id", p_start="start_ns", p_end="end_ns"), on="parent")
    assert parents.height == ranges.filter(pl.col("parent").is_not_null()).height
    assert parents.filter((pl.col("p_start") > pl.col("start_ns")) | (pl.col("p_end") < pl.col("end_ns"))).is_empty()


def test_nest_handles_ties_and_overlaps() -> None:
    ranges = pl.DataFrame(
        {
            "thread": [1, 1, 1, 1, 1, 2],
            "name": ["outer", "a", "b", "mark-like", "overlap", "other thread"],
            "start_ns": [0, 10, 20, 20, 95, 5],
            "end_ns": [100, 20, 30, 20, 150, 50],
        }
    )
    nested = {row["name"]: row for row in nest(ranges).iter_rows(named=True)}
    names = {row["id"]: name for name, row in nested.items()}
    assert nested["a"]["depth"] == nested["b"]["depth"] == 1  # a ends where b starts: siblings
    assert names[nested["b"]["parent"]] == "outer"
    assert nested["mark-like"]["depth"] == 2 and names[nested["mark-like"]["parent"]] == "b"
    assert nested["overlap"]["depth"] == 1 and nested["overlap"]["parent"] is None  # not contained
    assert nested["other thread"]["depth"] == 0


def test_kernels_and_copies_attributed_to_enclosing_range(modern, modern_tables) -> None:
    truth = modern[1]
    assert Counter(modern_tables["kernels"]["op"].fill_null("")) == truth.kernels_by_op
    copies = modern_tables["memcpy"].filter(pl.col("kind") != "Memset")
    assert Counter(copies["op"].fill_null("")) == truth.copies_by_op
    assert BAD_UTF8_DECODED in set(copies["op"])  # a non-UTF-8 NVTX text, decoded with U+FFFD


def test_missing_tables_and_columns_are_tolerated(tmp_path: Path) -> None:
    bare = tmp_path / "bare.sqlite"
    truth = write_export(bare, ExportOptions(nvtx=False, memset=False))
    tables = _collect(bare)
    assert tables["ranges"].is_empty() and tables["kernels"]["op"].null_count() == truth.kernels
    assert "Memset" not in set(tables["memcpy"]["kind"])
    old = tmp_path / "old.sqlite"
    truth = write_export(old, ExportOptions(legacy=True))
    _edit(
        old,
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN dynamicSharedMemory",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN srcKind",
        "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET",
    )
    tables = _collect(old)
    assert tables["kernels"].height == truth.kernels
    assert set(tables["kernels"]["name"]) == {names[1] for names in KERNEL_NAMES.values()}  # short names
    assert tables["memcpy"]["src_kind"].null_count() == truth.copies


@pytest.mark.parametrize(
    ("options", "file_name", "rank", "source"),
    [
        (ExportOptions(rank=4), "anything.sqlite", 4, "NVTX thread name"),
        (ExportOptions(rank=5, rank_thread_name=False, rank_env=True), "x.sqlite", 5, "environment"),
        (ExportOptions(rank_thread_name=False), "job_rank2.sqlite", 2, "file name"),
        (ExportOptions(rank_thread_name=False), "profile_6.sqlite", 6, "file name"),
        # A digit glued to the user's own word is no rank (issue 30): the trace's fields, else 0.
        (ExportOptions(rank_thread_name=False), "saxpy_perlmutter6.sqlite", 0, "default"),
        (ExportOptions(rank_thread_name=False), "foo_report1.sqlite", 0, "default"),
        (ExportOptions(rank=2), "foo_report1.sqlite", 2, "NVTX thread name"),
        (ExportOptions(rank_thread_name=False), "report3.sqlite", 0, "default"),
    ],
)
def test_rank_sources(tmp_path: Path, options: ExportOptions, file_name: str, rank: int, source: str) -> None:
    write_export(tmp_path / file_name, options)
    result = nsys.COLLECTOR.collect([tmp_path / file_name], no_progress)
    assert set(result.tables["kernels"]["rank"]) == {rank}
    assert result.metadata["exports"][0]["rank_source"].startswith(source)


def test_clashing_ranks_are_renumbered_with_a_warning(tmp_path: Path) -> None:
    paths = [tmp_path / "a.sqlite", tmp_path / "b.sqlite"]
    for seed, path in enumerate(paths):
        write_export(path, ExportOptions(seed=seed))
    result = nsys.COLLECTOR.collect(paths, no_progress)
    assert set(result.tables["kernels"]["rank"]) == {0, 1}
    assert any("same rank" in warning for warning in result.warnings)


def test_broken_files_raise_clear_errors(tmp_path: Path, modern) -> None:
    data = modern[0].read_bytes()
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="truncated SQLite file: its header promises"):
        registry.collect([truncated])
    scrambled = tmp_path / "scrambled.sqlite"
    scrambled.write_bytes(data[:4096] + bytes(len(data) - 4096))
    with pytest.raises(IngestError, match="corrupt SQLite database"):
        registry.collect([scrambled])
    empty = tmp_path / "empty.sqlite"
    _edit(empty, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)", "CREATE TABLE TARGET_INFO_GPU (id)")
    with pytest.raises(IngestError, match="no CUDA kernels"):
        registry.collect([empty])


def test_demo_exports_go_through_the_registry(tmp_path: Path) -> None:
    run = registry.collect(nsys_export.write(tmp_path / "demo"))
    assert run.collectors == ["nsys"]
    assert set(run.tables["kernels"]["rank"]) == {0, 1}
    exports = run.metadata["nsys"]["exports"]
    assert [e["nsys_version"] for e in exports] == ["2024.5.1.113"] * 2
    assert [[g["active"] for g in e["gpus"]] for e in exports] == [[True, False], [False, True]]
