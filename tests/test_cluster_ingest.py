"""Cluster ingest: partitioned layout, the reduce step, `--cluster` errors, and 8 ranks on a LocalCluster."""

from __future__ import annotations

import socket
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from dashboard.analysis.gpu_busy import activity_intervals, gpu_busy
from dashboard.analysis.rank_summaries import rank_summaries, reduce_summaries
from dashboard.cli.main import cli
from dashboard.ingest.cluster_worker import TOKEN_FILE, FolderNotShared, parse_file
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.rank_runs import partitioned_run, rank_traces

TABLES = ("kernels", "memcpy", "ranges", "api_calls")


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_partitioned_run_reads_like_the_single_file_run(tmp_path: Path) -> None:
    """The map step without Dask: parse_file per rank into a staging folder, published like a cluster ingest."""
    inputs = rank_traces(tmp_path / "ranks", 3, kernels=1200)
    store = RunStore(tmp_path / "data")
    single = store.open(ingest_paths(store, [inputs], name="single"))
    parted = store.open(partitioned_run(store, inputs))
    files = sorted(inputs.iterdir())
    assert (parted.info.path / "kernels" / "rank=2" / "part-2.parquet").is_file()
    assert not (parted.info.path / "kernels.parquet").exists()
    for table in TABLES:
        assert single.has(table)
        assert parted.frame(table).schema == single.frame(table).schema
        assert _sorted(parted.frame(table)).equals(_sorted(single.frame(table))), table
    assert (parted.info.path / "source" / "ranks" / "rank-1.json").read_bytes() == files[1].read_bytes()


def test_reduce_of_per_rank_summaries_equals_the_summary_of_allrank_traces(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [rank_traces(tmp_path / "ranks", 3, kernels=4500)], name="all"))
    tables = {t: run.frame(t) for t in TABLES}
    per_rank = [{t: f.filter(pl.col("rank") == r) for t, f in tables.items()} for r in range(3)]
    reduced = reduce_summaries([rank_summaries(part) for part in per_rank])
    whole = rank_summaries(tables)
    for name in ("kernels", "steps", "busy"):
        assert _sorted(reduced[name]).equals(_sorted(whole[name])), name
    steps = reduced["steps"]
    assert steps.get_column("rank").unique().sort().to_list() == [0, 1, 2]
    assert steps.filter(pl.col("rank") == 0).get_column("step").to_list() == [0, 1, 2]  # 4500 units: 3 steps
    assert (steps.get_column("source") == "ProfilerStep").all()
    # Two files claiming one rank add up in the kernel summary instead of giving two rows.
    doubled = reduce_summaries([rank_summaries(per_rank[0]), rank_summaries(per_rank[0])])["kernels"]
    once = whole["kernels"].filter(pl.col("rank") == 0)
    assert doubled.height == once.height
    assert doubled.get_column("total_ns").sum() == 2 * once.get_column("total_ns").sum()


def test_cluster_scheduler_unreachable_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    from dashboard.ingest import cluster as cluster_ingest

    monkeypatch.setattr(cluster_ingest, "CONNECT_TIMEOUT_S", 1.0)
    address = f"tcp://127.0.0.1:{_free_port()}"
    result = CliRunner().invoke(cli, ["ingest", str(rank_traces(tmp_path / "r", 1, 100)), "--data",
                                      str(tmp_path / "data"), "--cluster", address])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith(f"error: {address}: cannot reach the Dask scheduler within 1 s"), result.output
    assert not (tmp_path / "data" / "runs").exists() or not any((tmp_path / "data" / "runs").iterdir())


def test_cluster_data_folder_not_shared_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that does not see the staging folder the client wrote: simulated by the client writing
    its token to a folder of its own (as on a local disk), so the worker finds none in the data folder."""
    distributed = pytest.importorskip("distributed")
    from dashboard.ingest import cluster as cluster_ingest

    def token_on_local_disk(staging: Path) -> str:
        (tmp_path / "client-only").mkdir(exist_ok=True)
        (tmp_path / "client-only" / TOKEN_FILE).write_text("x", encoding="utf-8")
        return "x"

    monkeypatch.setattr(cluster_ingest, "_write_token", token_on_local_disk)
    cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    monkeypatch.setattr(cluster_ingest, "connect", lambda address, workers=None: distributed.Client(cluster))
    try:
        result = CliRunner().invoke(cli, ["ingest", str(rank_traces(tmp_path / "r", 1, 100)), "--data",
                                          str(tmp_path / "data"), "--cluster", "local"])
    finally:
        cluster.close()
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert "cannot see the run's staging folder" in last and "filesystem every Dask worker mounts" in last
    assert list((tmp_path / "data" / "runs").iterdir()) == []
    assert list((tmp_path / "data" / ".staging").iterdir()) == []  # nothing half-written is left
    with pytest.raises(FolderNotShared):
        parse_file(str(tmp_path / "r" / "rank-0.json"), str(tmp_path / "data"), "x", 0, "rank-0.json")


def test_eight_ranks_on_a_local_cluster_of_two_worker_processes(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    inputs = rank_traces(tmp_path / "ranks", 8, kernels=2500)
    data = tmp_path / "data"
    result = CliRunner().invoke(cli, ["ingest", str(inputs), "--data", str(data), "--cluster", "local",
                                      "--workers", "2"])
    assert result.exit_code == 0, result.output
    store = RunStore(data)
    run = store.open(result.output.strip().splitlines()[-1])
    assert run.info.metadata["cluster"]["workers"] == 2
    assert run.info.metadata["cluster"]["files"] == 8
    assert sorted(run.info.metadata["summaries"]) == ["busy", "kernels", "steps"]
    reference = store.open(ingest_paths(store, [inputs], name="one-process"))
    for table in TABLES:
        mine, theirs = run.frame(table), reference.frame(table)
        per_rank = mine.group_by("rank").len().sort("rank")
        assert per_rank.get_column("rank").to_list() == list(range(8)), table
        assert per_rank.equals(theirs.group_by("rank").len().sort("rank")), table
        assert _sorted(mine).equals(_sorted(theirs)), table
    assert run.info.row_counts == reference.info.row_counts
    kernels = run.frame("kernels")
    summary = run.summary("kernels")
    assert summary is not None
    totals = kernels.group_by("rank").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns")).sort("rank")
    assert summary.group_by("rank").agg(pl.col("total_ns").sum().alias("ns")).sort("rank").equals(totals)
    steps = run.summary("steps")
    assert steps is not None and steps.group_by("rank").len().get_column("len").to_list() == [2] * 8
    busy = run.summary("busy")
    expected = gpu_busy(activity_intervals(kernels, run.frame("memcpy")))
    assert busy is not None and busy.sort("rank").equals(expected)
    assert reference.summary("kernels") is None  # a single-process run has no summaries


def test_client_side_pieces_of_the_reduce(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from dashboard.ingest.cluster import _merge_metadata, _shared_rank_warnings, source_names
    from dashboard.ingest.cluster_worker import PartResult

    def part(file: str, ranks: list[int], meta: dict) -> PartResult:
        return PartResult(file=file, collectors=["kineto"], row_counts={}, ranks=ranks, summaries={},
                          metadata={"kineto": meta})

    parts = [part("/t/a.json", [0], {"ranks": [0], "files": [{"rank": 0}], "gpu": "A100"}),
             part("/t/b.json", [0], {"ranks": [0], "files": [{"rank": 0}], "gpu": "H100"}),
             part("/t/c.json", [1], {"ranks": [1], "files": [{"rank": 1, "x": 2}]})]
    warnings = _shared_rank_warnings(parts)
    assert warnings == ["/t/b.json: rank 0 is also claimed by a.json; both are kept under rank 0"]
    merged = _merge_metadata(parts)["kineto"]
    assert merged["ranks"] == [0, 1] and merged["gpu"] == "A100"
    assert merged["files"] == [{"rank": 0}, {"rank": 1, "x": 2}]
    folder = tmp_path / "job"
    (folder / "sub").mkdir(parents=True)
    files = [folder / "r0.json", folder / "sub" / "r1.json", tmp_path / "other" / "job"]
    names = source_names([folder, tmp_path / "other" / "job"], files)
    assert names == {files[0]: "job/r0.json", files[1]: "job/sub/r1.json", files[2]: "1/job"}


def test_a_broken_rank_fails_the_cluster_ingest_in_one_line_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    from dashboard.ingest import cluster as cluster_ingest

    inputs = rank_traces(tmp_path / "ranks", 3, kernels=200)
    broken = inputs / "rank-1.json"
    broken.write_bytes(broken.read_bytes()[:5000])
    cluster = distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=":0")
    monkeypatch.setattr(cluster_ingest, "connect", lambda address, workers=None: distributed.Client(cluster))
    try:
        result = CliRunner().invoke(cli, ["ingest", str(inputs), "--data", str(tmp_path / "data"),
                                          "--cluster", "local"])
    finally:
        cluster.close()
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"error: {broken}: truncated JSON: the file ends before the trace document does")
    assert list((tmp_path / "data" / "runs").iterdir()) == []
    assert list((tmp_path / "data" / ".staging").iterdir()) == []
