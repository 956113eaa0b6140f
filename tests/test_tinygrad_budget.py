"""The ingest budget of an upload holding tinygrad VIZ pickles: each counts HEAVY_PICKLE_WEIGHT times its size
(it unpickles to ~19 bytes per byte where a trace's JSON takes ~10), so a realistic rewrites.pkl is not stopped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dashboard.demo.tinygrad_generated import demo_pair
from dashboard.ingest.budget import input_megabytes, scaled_budget
from dashboard.ingest.input_size import HEAVY_PICKLE_WEIGHT, ExpansionLimit, measured_bytes
from dashboard.settings import DEFAULT_INGEST_MEMORY_MB_BASE, DEFAULT_INGEST_MEMORY_MB_PER_MB

MB = 1024 * 1024


def test_a_tinygrad_pickle_counts_heavier_than_other_input(tmp_path: Path) -> None:
    rewrites, profile = demo_pair().files()
    (tmp_path / "rewrites.pkl").write_bytes(rewrites)
    packed = gzip.compress(profile)
    (tmp_path / "profile.pkl.gz").write_bytes(packed)
    (tmp_path / "notes.txt").write_bytes(b"x" * 10_000)
    # As stored (a gzip file at its compressed size) and as the ingest child measures it (decompressed):
    # the pickles weighted both times.
    on_disk = (len(rewrites) + len(packed)) * HEAVY_PICKLE_WEIGHT + 10_000
    assert input_megabytes([tmp_path]) == pytest.approx(on_disk / MB, abs=2 / MB)
    measured = int(len(rewrites) * HEAVY_PICKLE_WEIGHT) + int(len(profile) * HEAVY_PICKLE_WEIGHT) + 10_000
    assert measured_bytes([tmp_path], ExpansionLimit()) == measured
    (tmp_path / "broken.pkl.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 40)  # not readable: counted at its size
    assert input_megabytes([tmp_path / "broken.pkl.gz"]) == pytest.approx(42 / MB)


def test_the_absolute_expansion_limit_counts_the_bytes_read_not_their_weight(tmp_path: Path) -> None:
    rewrites, profile = demo_pair().files()
    (tmp_path / "1-rewrites.pkl").write_bytes(rewrites)
    (tmp_path / "2-profile.pkl.gz").write_bytes(gzip.compress(profile))
    exact = ExpansionLimit(absolute=len(rewrites) + len(profile))
    assert measured_bytes([tmp_path], exact) == int(len(rewrites) * HEAVY_PICKLE_WEIGHT) + \
        int(len(profile) * HEAVY_PICKLE_WEIGHT)


def test_the_default_budget_leaves_room_for_a_100_mb_rewrites_pickle(tmp_path: Path) -> None:
    rewrites, _ = demo_pair().files()
    big = tmp_path / "rewrites.pkl"
    big.write_bytes(rewrites + b"\x00" * (100 * MB - len(rewrites)))  # the head is what tells the format
    budget = scaled_budget([big], fixed_seconds=None, fixed_memory_mb=None, seconds_base=60, seconds_per_mb=1,
                           memory_mb_base=DEFAULT_INGEST_MEMORY_MB_BASE,
                           memory_mb_per_mb=DEFAULT_INGEST_MEMORY_MB_PER_MB, seconds_hint="s", memory_hint="m")
    # Measured (benchmarks/tinygrad_ingest.py): a 41 MB rewrites.pkl peaks at 774 MB, ~19 MB per MB.
    assert budget.memory_mb is not None and budget.memory_mb > 1.5 * 19 * 100
