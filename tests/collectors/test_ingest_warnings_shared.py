"""The warnings ingest prints for the real samples in ../shared/samples, exactly (CI-only)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from dashboard.cli.main import cli
from dashboard.store import RunStore

pytestmark = pytest.mark.shared

HTA = "hta_trace_filter_sampled_rank-{}.json.gz"
LEGACY = "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz"
NSYS = "pipit_saxpy-mpi-cuda_nsys_perlmutter0.sqlite"


def _ingest(path: Path, data: Path) -> tuple[int, list[str], str]:
    result = CliRunner().invoke(cli, ["ingest", str(path), "--data", str(data)])
    lines = [line for line in result.stderr.splitlines() if not line.startswith("ingest: ")]  # progress
    return result.exit_code, lines, result.stdout.strip()


@pytest.mark.parametrize(
    ("folder", "name", "expected"),
    [
        ("kineto", HTA.format(0), []),
        ("kineto", HTA.format(1), []),
        # The 2021 plugin trace's 12,838 `[memory]` instants (no category) are read; its 2 other instants are the
        # profiler's markers (iteration start, record window end): bookkeeping, not data, so no warning.
        ("kineto", LEGACY, []),
        ("nsys", NSYS, []),
    ],
)
def test_each_sample_prints_exactly_its_warnings(shared_dir: Path, tmp_path: Path, folder: str, name: str,
                                                 expected: list[str]) -> None:
    path = shared_dir / "samples" / folder / name
    exit_code, lines, run_id = _ingest(path, tmp_path / "data")
    assert exit_code == 0
    assert lines == [f"warning: {path}: {text}" for text in expected]
    info = RunStore(tmp_path / "data").open(run_id).info
    assert info.warnings == [f"{path}: {text}" for text in expected]
    assert "kernels" in info.evidence


def test_a_real_trace_without_its_kernels_says_what_it_still_holds(shared_dir: Path, tmp_path: Path) -> None:
    with gzip.open(shared_dir / "samples" / "kineto" / HTA.format(0)) as handle:
        document = json.load(handle)
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") != "kernel"]
    path = tmp_path / "no_kernels.json"
    path.write_text(json.dumps(document))
    exit_code, lines, run_id = _ingest(path, tmp_path / "data")
    assert exit_code == 0
    assert lines == [f"warning: {path}: no GPU kernels (2,329 CPU ops, 1,204 CUDA runtime calls, 73 user "
                     "annotations, 40 GPU copies, 10 GPU memsets, 1 profiler spans)"]
    assert RunStore(tmp_path / "data").open(run_id).info.evidence == ["kernels", "layers"]  # copies remain


def test_a_real_export_whose_kernels_end_before_they_start(shared_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / NSYS
    shutil.copyfile(shared_dir / "samples" / "nsys" / NSYS, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1")
    exit_code, lines, run_id = _ingest(path, tmp_path / "data")
    assert exit_code == 0
    assert lines == [f"warning: {path}: 5 kernels end before they start; dropped"]
    info = RunStore(tmp_path / "data").open(run_id).info
    assert info.row_counts.get("kernels", 0) == 0 and info.row_counts["memcpy"] == 15


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        # edge_cases holds a group whose smem liveness dump has no combined graph beside it.
        ("edge_cases", ["edge_cases#3: no combined graph: the group is incomplete (the compile stopped between "
                        "dumps?)"]),
        ("fa_bwd", []),
        ("gemm", []),
        ("gemm_no_debug", []),
        ("multi_kernel_real_order", []),
    ],
)
def test_each_planner_sample_prints_exactly_its_warnings(shared_dir: Path, tmp_path: Path, folder: str,
                                                         expected: list[str]) -> None:
    exit_code, lines, run_id = _ingest(shared_dir / "samples" / "ws" / folder, tmp_path / "data")
    assert exit_code == 0
    assert lines == [f"warning: {text}" for text in expected]
    info = RunStore(tmp_path / "data").open(run_id).info
    assert info.warnings == expected
    assert "planner" in info.evidence
