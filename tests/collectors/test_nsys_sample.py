"""The Nsight Systems collector against the shipped real export (nsys 2022.2, schema 2.9.1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import probe_file
from dashboard.collectors.nsys import collector as nsys

pytestmark = pytest.mark.shared

SAMPLE = Path("samples/nsys/pipit_saxpy-mpi-cuda_nsys_perlmutter0.sqlite")


@pytest.fixture(scope="module")
def sample(shared_dir: Path) -> Path:
    return shared_dir / SAMPLE


def _sql(path: Path, query: str) -> tuple:
    # An independent count straight from the file, with no collector code involved.
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute(query).fetchone()


def test_sample_totals_equal_plain_sql(sample: Path) -> None:
    assert nsys.COLLECTOR.sniff(probe_file(sample))
    run = registry.collect([sample])
    kernels, copies = run.tables["kernels"], run.tables["memcpy"]
    count, total = _sql(sample, 'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL')
    assert (kernels.height, (kernels["end_ns"] - kernels["start_ns"]).sum()) == (count, total)
    copy_count, copy_bytes = _sql(sample, "SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert (copies.height, copies["bytes"].sum()) == (copy_count, copy_bytes)
    (calls,) = _sql(sample, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)")
    assert run.tables["api_calls"].height == calls


def test_sample_names_kinds_rank_and_attribution(sample: Path) -> None:
    run = registry.collect([sample])
    kernels = run.tables["kernels"]
    assert set(kernels["name"]) == {"saxpy(double *, double *, double *, double, int)"}
    assert set(kernels["op"]) == {"saxpy"}  # each launch sits inside its NVTX `saxpy` range
    copies = run.tables["memcpy"].group_by("kind", "src_kind", "dst_kind").len().sort("kind")
    assert copies.rows() == [("DtoH", "Device", "Pageable", 5), ("HtoD", "Pageable", "Device", 10)]
    ranges = run.tables["ranges"]
    assert {"MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Finalize", "saxpy"} == set(ranges["name"])
    assert ranges.filter(pl.col("depth") > 0).is_empty()
    export = run.metadata["nsys"]["exports"][0]
    assert export["rank"] == 0 and export["rank_source"] == "NVTX thread name 'MPI Rank 0'"
    assert export["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    assert (export["schema_version"], export["session_start_utc_ns"]) == ("2.9.1", 1687813257637297504)
