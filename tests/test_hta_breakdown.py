"""CI-only: our idle / compute / non-compute shares per rank equal HTA's temporal breakdown on real traces.

HTA (HolisticTraceAnalysis) is installed in a venv of its own, made once under
the temp folder (or $DASHBOARD_HTA_VENV), never into the project's; the test
skips when it cannot be installed here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.hta_breakdown import MAX_DIFFERENCE_PP, SHARES, HtaUnavailable, compare, hta_python, job_groups


@pytest.mark.shared
def test_breakdown_shares_match_hta_on_every_shared_kineto_sample(shared_dir: Path) -> None:
    folder = shared_dir / "samples" / "kineto"
    try:
        python = hta_python()
    except (HtaUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        pytest.skip(f"HTA cannot be installed in its own venv here: {exc}")
    rows = compare(folder, python)
    assert {row["job"] for row in rows} == set(job_groups(folder))  # every sample was compared
    for row in rows:
        for share in SHARES:
            difference = abs(100 * (row["ours"][share] - row["hta"][share]))
            assert difference <= MAX_DIFFERENCE_PP, (row["job"], row["rank"], share, row["hta"], row["ours"])
