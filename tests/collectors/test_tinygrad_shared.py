"""The tinygrad collector against the shared real sample (tinygrad 0.14.0, CPU: a matmul, relu and sum
scheduled and compiled, nothing run). Compared with tinygrad's own reading where tinygrad is installed."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.demo.tinygrad_viz import tinygrad_installed
from tests.support.tinygrad_compare import differences, serve_reading

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def sample(shared_dir: Path) -> Path:
    return shared_dir / "samples" / "tinygrad"


def test_the_sample_reads_as_tinygrad_0_14_with_every_kernels_program(sample: Path) -> None:
    run = registry.collect([sample / "rewrites.pkl", sample / "profile.pkl"])
    assert run.warnings == [] and run.metadata["tinygrad"]["runs"][0]["release"] == "0.14.0"
    programs = run.tables["rewrite_contexts"].filter("codegen")
    assert programs.height >= 1
    assert programs.select(pl.col("source").is_not_null() & pl.col("binary").is_not_null()
                           & pl.col("program_trace").is_not_null()).to_series().all()
    uops = run.tables["rewrite_uops"]
    program_ops = uops.filter(pl.col("trace").is_in(programs["program_trace"].to_list()))["op"]
    assert set(program_ops) == {"PROGRAM"}


@pytest.mark.skipif(not tinygrad_installed(), reason="tinygrad is not installed (the `tinygrad` extra)")
def test_the_sample_reads_as_tinygrad_reads_it(sample: Path) -> None:
    run = registry.collect([sample / "rewrites.pkl", sample / "profile.pkl"])
    assert differences(run.tables, serve_reading(sample / "rewrites.pkl", sample / "profile.pkl")) == []
