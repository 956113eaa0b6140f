"""DDP: one capture per rank, partial files in a staging folder, merged into one run."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.capture.cupti_fake import FakeCuptiBackend
from dashboard.capture.markers import mark
from dashboard.capture.rank_merge import merge_rank_partials, rank_from_env, write_merged_run
from dashboard.capture.session import CaptureSession
from dashboard.collectors.base import IngestError
from dashboard.store import RunStore


def test_rank_comes_from_the_launcher_environment() -> None:
    assert rank_from_env({}) == 0
    assert rank_from_env({"LOCAL_RANK": "3"}) == 3
    assert rank_from_env({"SLURM_PROCID": "5", "LOCAL_RANK": "1"}) == 5
    assert rank_from_env({"RANK": "7", "SLURM_PROCID": "5", "LOCAL_RANK": "1"}) == 7
    assert rank_from_env({"RANK": "not-a-number", "LOCAL_RANK": "2"}) == 2


def test_session_takes_its_rank_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "4")
    assert CaptureSession("x", backend=FakeCuptiBackend(), layers=False).rank == 4


def _capture_rank(staging, rank: int, kernels: int) -> None:
    gpu = FakeCuptiBackend(device_id=rank)
    with CaptureSession("ddp", backend=gpu, rank=rank, layers=False, staging=staging), mark(f"step on {rank}"):
        for _ in range(kernels):
            gpu.launch_kernel("_Z9allreducePfi", 1000)
        gpu.memcpy(1024, "DtoD", "Device", "Device")


def test_two_ranks_merge_into_one_run_with_a_rank_column(tmp_path) -> None:
    staging = tmp_path / "staging"
    _capture_rank(staging, 0, kernels=3)
    _capture_rank(staging, 1, kernels=5)
    assert sorted(p.name for p in staging.glob("*.json")) == ["capture.rank0.json", "capture.rank1.json"]

    merged = merge_rank_partials(staging)
    assert merged.ranks == [0, 1]
    kernels = merged.tables["kernels"]
    assert kernels.group_by("rank").len().sort("rank").get_column("len").to_list() == [3, 5]
    assert kernels.filter(pl.col("rank") == 1).get_column("device").unique().to_list() == [1]
    assert set(merged.tables["ranges"].get_column("name")) == {"step on 0", "step on 1"}

    run_id = write_merged_run(staging, tmp_path / "data", name="ddp")
    run = RunStore(tmp_path / "data").open(run_id)
    assert run.frame("kernels").get_column("rank").unique().sort().to_list() == [0, 1]
    assert run.frame("memcpy").height == 2
    assert run.info.metadata["capture_ranks"] == [0, 1]


def test_a_rank_cannot_write_twice_into_one_staging_folder(tmp_path) -> None:
    _capture_rank(tmp_path, 0, kernels=1)
    with pytest.raises(FileExistsError, match="rank 0 already wrote"):
        _capture_rank(tmp_path, 0, kernels=1)


def test_incomplete_and_broken_partials(tmp_path) -> None:
    with pytest.raises(IngestError, match="no complete rank capture"):
        merge_rank_partials(tmp_path)
    _capture_rank(tmp_path, 0, kernels=2)
    # A rank that died before writing its json is not merged.
    (tmp_path / "kernels.rank1.parquet").write_bytes(b"half a file")
    assert merge_rank_partials(tmp_path).ranks == [0]
    (tmp_path / "capture.rank2.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(IngestError, match=r"capture\.rank2\.json: unreadable"):
        merge_rank_partials(tmp_path)
    (tmp_path / "capture.rank2.json").write_text('{"rank": 2, "tables": ["kernels"]}', encoding="utf-8")
    with pytest.raises(IngestError, match=r"kernels\.rank2\.parquet: missing or unreadable"):
        merge_rank_partials(tmp_path)
