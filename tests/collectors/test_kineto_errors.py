"""Bad Kineto input: clear IngestErrors for broken files, counted warnings for broken events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, probe_file
from dashboard.collectors.kineto.collector import COLLECTOR
from tests.collectors.test_kineto_parsing import collect, launch, write, x


def _good_events() -> list[dict]:
    return [x("cpu_op", "aten::add", 10, 5, **{"External id": 1}), *launch(11, 1, 20, 3, ext=1)]


def _expect_error(path: Path, *fragments: str) -> None:
    with pytest.raises(IngestError) as caught:
        COLLECTOR.collect([path], lambda fraction, message: None)
    assert caught.value.path == str(path)
    for fragment in fragments:
        assert fragment in caught.value.problem, caught.value.problem


def test_truncated_json(tmp_path: Path) -> None:
    data = write(tmp_path / "full.json", _good_events()).read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: len(data) // 2])
    _expect_error(path, "truncated JSON")


def test_truncated_and_corrupt_gzip(tmp_path: Path) -> None:
    data = write(tmp_path / "full.json.gz", _good_events(), gz=True).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) - 12])
    _expect_error(cut, "truncated gzip")
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(data[:10] + bytes(b ^ 0x5A for b in data[10:]))
    with pytest.raises(IngestError, match="gzip"):
        COLLECTOR.collect([corrupt], lambda fraction, message: None)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\x00\x01\x02binary", "not valid JSON"),
        (b"[1, 2, 3]", "expected a JSON object with `traceEvents`"),
        (b'{"schemaVersion": 1}', "no `traceEvents` array"),
        (b'{"traceEvents": {"a": 1}}', "`traceEvents` is not an array"),
        (b'{"traceEvents": []}', "holds no events"),
        (b'{"traceEvents": [1, 2]} trailing', "not valid JSON"),
    ],
)
def test_documents_that_are_not_traces(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    _expect_error(path, fragment)


def test_events_missing_fields_are_skipped_and_counted(tmp_path: Path) -> None:
    events = [
        *_good_events(),
        {"ph": "X", "cat": "kernel", "name": "no_ts", "pid": 0, "tid": 7, "dur": 3, "args": {"correlation": 5}},
        {"ph": "X", "cat": "cpu_op", "name": "no_dur", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
        17,
        "not an event",
    ]
    result = collect(write(tmp_path / "t.json", events))
    assert result.tables["kernels"]["name"].to_list() == ["sgemm_kernel"]
    assert result.tables["ranges"]["name"].to_list() == ["aten::add"]
    text = "\n".join(result.warnings)
    assert "skipped 1 GPU events without `name`, `ts`, `dur`" in text
    assert "skipped 2 ranges without `name`, `ts`, `dur`" in text
    assert "2 events that are not JSON objects (skipped)" in text


def test_numeric_strings_are_converted_and_other_strings_skipped(tmp_path: Path) -> None:
    events = [
        x("cpu_op", "aten::add", "10.5", "5", **{"External id": 1}),
        x("cpu_op", "aten::bad", "yesterday", 5, **{"External id": 2}),
    ]
    result = collect(write(tmp_path / "t.json", events))
    ranges = result.tables["ranges"]
    assert ranges["name"].to_list() == ["aten::add"]
    assert ranges.select("start_ns", "end_ns").row(0) == (10500, 15500)
    text = "\n".join(result.warnings)
    assert "`ts` values given as strings (converted to numbers)" in text
    assert "skipped 1 ranges without" in text


def test_negative_durations_are_dropped_and_duplicates_kept_once(tmp_path: Path) -> None:
    same_start = x("cpu_op", "aten::add_twin", 10, 5, **{"External id": 1})  # differs only by name: kept
    events = [*_good_events(), *_good_events(), same_start, x("cpu_op", "aten::neg", 40, -2.0, **{"External id": 9})]
    result = collect(write(tmp_path / "t.json", events))
    assert result.tables["kernels"].height == 1 and result.tables["api_calls"].height == 1
    assert sorted(result.tables["ranges"]["name"].to_list()) == ["aten::add", "aten::add_twin"]
    text = "\n".join(result.warnings)
    assert "dropped 1 ranges with a negative `dur`" in text
    assert "removed 1 exact duplicate GPU events" in text
    assert "removed 1 exact duplicate runtime calls" in text
    assert "removed 1 exact duplicate ranges" in text


def test_sniff_recognises_kineto_by_content(tmp_path: Path) -> None:
    trace = write(tmp_path / "anything.bin", _good_events(), gz=True)
    assert COLLECTOR.sniff(probe_file(trace))
    # a long deviceProperties list pushes traceEvents past the sniff window
    props = [{"id": i, "name": "GPU" * 200} for i in range(200)]
    late = write(tmp_path / "late.json", _good_events(), deviceProperties=props, distributedInfo={"rank": 0})
    assert b'"traceEvents"' not in probe_file(late).head
    assert COLLECTOR.sniff(probe_file(late))
    for content in (b'{"nodes": [], "edges": []}', b"[]", b"ph,cat,name\nX,kernel,k", b"\x1f\x8b"):
        other = tmp_path / "other.dat"
        other.write_bytes(content)
        if content.startswith(b"\x1f\x8b"):
            other.write_bytes(gzip.compress(json.dumps({"rows": [1, 2]}).encode()))
        assert not COLLECTOR.sniff(probe_file(other)), content


def test_registry_ingests_a_folder_of_rank_files(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in range(2):
        write(folder / f"trace_rank_{rank}.json.gz", _good_events(), gz=True,
              distributedInfo={"backend": "nccl", "rank": rank, "world_size": 2})
    run = registry.collect([folder])
    assert run.collectors == ["kineto"]
    assert run.tables["kernels"]["rank"].sort().to_list() == [0, 1]
    assert run.metadata["kineto"]["distributedInfo"]["1"]["world_size"] == 2
