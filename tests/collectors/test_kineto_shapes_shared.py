"""Input shapes and dtypes of the real Kineto samples in ../shared, against the raw JSON read on its own."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.kineto.collector import COLLECTOR

pytestmark = pytest.mark.shared

SAMPLES = (
    "hta_trace_filter_sampled_rank-0.json.gz",
    "hta_trace_filter_sampled_rank-1.json.gz",
    "kineto_tb_plugin_resnet50_legacy_categories.pt.trace.json.gz",
)
NOT_RANGES = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_runtime", "Runtime",
              "cuda_driver", "Driver", "Trace"}


def _text(values: list | None) -> str | None:
    """The stored form, written independently of the collector: items as JSON, dtype names bare."""
    if values is None:
        return None
    return ", ".join(value if isinstance(value, str) and value else json.dumps(value) for value in values)


def _raw_inputs(path: Path) -> Counter[tuple[str, str | None, str | None]]:
    with gzip.open(path) as handle:
        events = json.load(handle)["traceEvents"]
    found: Counter[tuple[str, str | None, str | None]] = Counter()
    for event in events:
        args = event.get("args") or {}
        if event.get("ph") != "X" or event.get("cat") in NOT_RANGES:
            continue
        if "Input Dims" in args or "Input type" in args:
            found[(event["name"], _text(args.get("Input Dims")), _text(args.get("Input type")))] += 1
    return found


@pytest.mark.parametrize("name", SAMPLES)
def test_every_recorded_op_keeps_its_shapes_and_dtypes(shared_dir: Path, name: str) -> None:
    path = shared_dir / "samples" / "kineto" / name
    result = COLLECTOR.collect([path], lambda fraction, message: None)
    ranges = result.tables["ranges"]
    stored = ranges.filter(pl.col("input_shapes").is_not_null() | pl.col("input_dtypes").is_not_null())
    expected = _raw_inputs(path)
    assert sum(expected.values()) > 1_000  # every sample was recorded with record_shapes
    assert Counter(stored.select("name", "input_shapes", "input_dtypes").iter_rows()) == expected
    assert not any("Input" in warning for warning in result.warnings)


def test_a_known_backward_op_of_the_hta_sample(shared_dir: Path) -> None:
    # {"cat": "cpu_op", "name": "ClampBackward1", "args": {"External id": 41521, "Input Dims": [[2048]],
    #  "Input type": ["float"], ...}}: shared/formats/kineto.md quotes this line.
    path = shared_dir / "samples" / "kineto" / SAMPLES[0]
    ranges = COLLECTOR.collect([path], lambda fraction, message: None).tables["ranges"]
    row = ranges.filter(pl.col("correlation") == 41521).row(0, named=True)
    assert (row["name"], row["input_shapes"], row["input_dtypes"]) == ("ClampBackward1", "[2048]", "float")

