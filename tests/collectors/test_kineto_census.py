"""A Kineto run says what it holds: files without kernels, unknown device categories, ignored events."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.collectors.test_kineto_parsing import launch, write, x

UNKNOWN_TAIL = "not analysed as kernels, copies or ops (categories the dashboard does not know; kept as ranges of " \
               "their own category)"


def _ops(count: int, start: float = 0.0) -> list[dict]:
    return [x("cpu_op", f"aten::op{i}", start + i * 10, 5, **{"External id": i}) for i in range(count)]


def _metadata() -> list[dict]:
    return [{"ph": "M", "name": "process_name", "pid": 50, "tid": 0, "args": {"name": "python"}}]


def test_a_trace_of_profiler_ranges_and_ops_warns_that_it_has_no_kernels(tmp_path: Path, data_dir: Path) -> None:
    """HTA's cupti_profiler trace: profiler ranges and CPU ops, no kernel."""
    ranges = [x("cuda_profiler_range", f"range{i}", i * 100, 50, pid=0, tid=1) for i in range(3)]
    path = write(tmp_path / "cupti_profiler.json", [*_metadata(), *ranges, *_ops(5)])
    run = registry.collect([path])
    assert run.warnings == [
        f"{path}: no GPU kernels (5 CPU ops, 3 cuda_profiler_range events)",
        f"{path}: 3 cuda_profiler_range events {UNKNOWN_TAIL}",
    ]
    run_id = ingest_paths(RunStore(data_dir), [path])
    info = RunStore(data_dir).open(run_id).info
    assert info.warnings == run.warnings
    assert "kernels" not in info.evidence and "layers" in info.evidence


def test_api_calls_alone_do_not_make_a_kernel_run(tmp_path: Path, data_dir: Path) -> None:
    calls = [x("cuda_runtime", "cudaMalloc", 5 + i, 1, **{"correlation": i}) for i in range(2)]
    path = write(tmp_path / "cpu_only.json", [*_ops(4), *calls])
    run_id = ingest_paths(RunStore(data_dir), [path])
    info = RunStore(data_dir).open(run_id).info
    assert info.row_counts["api_calls"] == 2
    assert "kernels" not in info.evidence
    assert info.warnings == [f"{path}: no GPU kernels (4 CPU ops, 2 CUDA runtime calls)"]


def test_another_accelerators_device_events_are_counted_and_named(tmp_path: Path) -> None:
    device = [x("mtia_ccp_events", f"mtia_kernel_{i}", 20 + i, 1, pid=2, tid=3) for i in range(4)]
    events = [*_ops(1), *launch(1, 1, 5, 2, ext=0), *device]
    path = write(tmp_path / "mtia.json", events)
    run = registry.collect([path])
    assert run.warnings == [f"{path}: 4 mtia_ccp_events events {UNKNOWN_TAIL}"]
    assert run.tables["ranges"].filter(category="mtia_ccp_events").height == 4


def test_ignored_instants_are_counted_per_category(tmp_path: Path) -> None:
    # `[memory]` instants become device_memory and are no longer reported ignored; other instants are.
    memory = [{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 50, "tid": 50, "ts": 3 + i,
               "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": 64}} for i in range(2)]
    legacy = [{"ph": "i", "name": "[memory]", "pid": 50, "tid": 50, "ts": 4, "s": "t",
               "args": {"Device Type": 1, "Device Id": 0, "Bytes": -64}}]
    others = [{"ph": "i", "cat": "cpu_instant_event", "name": "Iteration Start: PyTorch Profiler", "pid": 50,
               "tid": 50, "ts": 2, "s": "g"}, {"ph": "i", "name": "Record Window End", "pid": 50, "tid": 50, "ts": 9}]
    path = write(tmp_path / "t.json", [*_metadata(), *_ops(1), *launch(1, 1, 5, 2, ext=0), *memory, *legacy, *others])
    run = registry.collect([path])
    # The profiler's own markers (iteration start, record window end) are bookkeeping, never a warning.
    assert run.warnings == []
    assert run.tables["device_memory"].height == 3


def test_a_user_instant_beside_the_profiler_markers_is_still_reported(tmp_path: Path) -> None:
    markers = [{"ph": "i", "cat": "cpu_instant_event", "name": "Iteration Start: PyTorch Profiler", "pid": 50,
                "tid": 50, "ts": 2, "s": "g"}, {"ph": "i", "name": "Record Window End", "pid": 50, "tid": 50, "ts": 9}]
    mine = [{"ph": "i", "cat": "cpu_instant_event", "name": "checkpoint saved", "pid": 50, "tid": 50, "ts": 5}]
    path = write(tmp_path / "t.json", [*_metadata(), *_ops(1), *launch(1, 1, 5, 2, ext=0), *markers, *mine])
    assert registry.collect([path]).warnings == [f"{path}: ignored 1 cpu_instant_event instants (not intervals)"]


def test_memory_instants_alone_are_named_in_the_no_kernels_warning(tmp_path: Path) -> None:
    memory = [{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 50, "tid": 50, "ts": 3,
               "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": 64}}]
    path = write(tmp_path / "t.json", [*_metadata(), *_ops(1), *memory])
    assert registry.collect([path]).warnings == [f"{path}: no GPU kernels (1 memory events, 1 CPU ops)"]


def test_a_kernel_trace_gets_no_census_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", [*_metadata(), *_ops(2), *launch(1, 1, 5, 2, ext=0)])
    assert registry.collect([path]).warnings == []


def test_many_categories_are_summed_after_six(tmp_path: Path) -> None:
    events = [x(f"cat{i}", "e", i, 1) for i in range(8) for _ in range(8 - i)]
    path = write(tmp_path / "t.json", events)
    warnings = registry.collect([path]).warnings
    assert warnings[0] == (f"{path}: no GPU kernels (8 cat0 events, 7 cat1 events, 6 cat2 events, 5 cat3 events, "
                           "4 cat4 events, 3 cat5 events, 3 events of 2 more categories)")


@pytest.mark.parametrize("legacy", [False, True])
def test_legacy_category_names_count_as_their_modern_ones(tmp_path: Path, legacy: bool) -> None:
    kernel = launch(1, 1, 5, 2, ext=0)
    if legacy:
        kernel[1]["cat"], kernel[0]["cat"] = "Kernel", "Runtime"
    path = write(tmp_path / "t.json", [*_ops(1), *kernel])
    assert registry.collect([path]).warnings == []
