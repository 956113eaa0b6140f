"""Ranks from file names: explicit patterns only (issue 30), one rule for every collector."""

from __future__ import annotations

import pytest

from dashboard.collectors.rank_names import rank_from_name


@pytest.mark.parametrize(("name", "rank"), [
    ("job_rank-3.json", 3), ("rank_3.pickle", 3), ("w_rank3of8.json", 3), ("trace.Rank12.sqlite", 12),
    ("RANK-0.nsys-rep", 0), ("profile_3.nsys-rep", 3), ("trace-12.sqlite", 12), ("snapshot_0.pickle", 0),
    ("job_7.pt.trace.json.gz", 7),
])
def test_explicit_patterns_give_the_rank(name: str, rank: int) -> None:
    assert rank_from_name(name) == rank


@pytest.mark.parametrize("name", [
    "foo_report1.sqlite", "saxpy_perlmutter6.sqlite", "report3.sqlite", "frank3.json", "trace.json",
    "run2_final.pickle",  # a digit inside the user's word, not a trailing field
    "gpu-host_48213.1700000000123456789.pt.trace.json",  # the profiler handler's <host>_<pid>.<ns>: a pid
    "events_1700000000123.json",  # a 13-digit field is a time, not a rank
])
def test_no_rank_without_an_explicit_pattern(name: str) -> None:
    assert rank_from_name(name) is None
