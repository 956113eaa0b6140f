"""CI-only: `report --json`'s gpu_time_hta per rank equals HTA's temporal breakdown on the shared Kineto traces.

Two checks. One always runs where ../shared is: against HTA's own numbers as benchmarks/hta_breakdown.py printed
them from HolisticTraceAnalysis 0.5.0 (`HTA_PRINTED`). The other runs HTA itself, installed in a venv of its own
(made once under the temp folder, or $DASHBOARD_HTA_VENV), never into the project's; it skips when HTA cannot be
installed here.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from benchmarks.hta_breakdown import (
    HTA_PRINTED,
    MAX_DIFFERENCE_PP,
    SHARES,
    HtaUnavailable,
    compare,
    hta_python,
    job_groups,
    our_breakdown,
)


@pytest.mark.shared
def test_gpu_time_hta_matches_the_numbers_hta_printed(shared_dir: Path) -> None:
    folder = shared_dir / "samples" / "kineto"
    assert {job for job, _ in HTA_PRINTED} == set(job_groups(folder))  # every sample has HTA's numbers
    for job, traces in job_groups(folder).items():
        with tempfile.TemporaryDirectory() as work:
            ours = {row["rank"]: row for row in our_breakdown(traces, Path(work))["ranks"]}
        for (printed_job, rank), (span_us, *shares) in HTA_PRINTED.items():
            if printed_job != job:
                continue
            assert ours[rank]["span_us"] == span_us  # the same events: the same span, to the µs
            for share, hta in zip(SHARES, shares, strict=True):
                assert abs(100 * (ours[rank][share] - hta)) <= MAX_DIFFERENCE_PP, (job, rank, share)


@pytest.mark.shared
def test_gpu_time_hta_matches_hta_run_here(shared_dir: Path) -> None:
    folder = shared_dir / "samples" / "kineto"
    try:
        python = hta_python()
    except (HtaUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        pytest.skip(f"HTA cannot be installed in its own venv here: {exc}")
    rows = compare(folder, python)
    assert {row["job"] for row in rows} == set(job_groups(folder))  # every sample was compared
    for row in rows:
        assert row["ours"]["span_us"] == row["hta"]["span_us"]
        for share in SHARES:
            difference = abs(100 * (row["ours"][share] - row["hta"][share]))
            assert difference <= MAX_DIFFERENCE_PP, (row["job"], row["rank"], share, row["hta"], row["ours"])
