"""Multi-process decoding of big Kineto traces equals the single-process decode.

The thresholds are lowered so that small fixtures are cut into many tasks
and chunks, which exercises every cut, the worker protocol and the joins.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.kineto import parallel as kineto_parallel
from dashboard.collectors.kineto.decode import DecodedTrace, decode_file
from dashboard.demo import kineto_trace
from tests.collectors.test_kineto_parsing import launch, write, x

_SMALL = {"min_bytes": 0, "task_bytes": 4096, "chunk_bytes": 1024, "workers": 3}


def _parallel(path: Path, **overrides: int) -> DecodedTrace | None:
    return kineto_parallel.decode_parallel(path, **{**_SMALL, **overrides})


def _assert_same(parallel: DecodedTrace | None, serial: DecodedTrace) -> None:
    assert parallel is not None
    assert parallel.top == serial.top
    assert (parallel.events, parallel.ignored, parallel.lenient) == (serial.events, serial.ignored, serial.lenient)
    assert parallel.problems == serial.problems
    assert parallel.categories == serial.categories and sum(serial.categories.values()) == serial.events
    assert parallel.frames.keys() == serial.frames.keys()
    # Rows come grouped by category within each chunk, so their order depends
    # on where chunks are cut (in either path); the content must not.
    for kind, frame in serial.frames.items():
        other = parallel.frames[kind]
        assert other.height == frame.height, kind
        columns = sorted(frame.columns)
        assert sorted(other.columns) == columns, kind
        assert other.select(columns).sort(columns).equals(frame.select(columns).sort(columns)), kind


def _many_events(count: int) -> list[dict]:
    events = []
    for index in range(count):
        ts = 1000.0 + index * 10
        events.append(x("cpu_op", "aten::mm", ts, 8.0, **{"External id": index, "Input Dims": [[4, 8], [8, 2]]}))
        events += launch(ts + 1, 10_000 + index, ts + 3, 4.5, ext=index)
    return events


def test_demo_traces_decode_identically_in_parallel(tmp_path: Path) -> None:
    for path in kineto_trace.write(tmp_path):  # gzip files: decompressed once for the workers
        _assert_same(_parallel(path), decode_file(path))


def test_plain_trace_with_metadata_around_the_events(tmp_path: Path) -> None:
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "GPU"}],
        "distributedInfo": {"rank": 3},
        "traceEvents": _many_events(300),
        # top-level keys after the events: brackets in a string, a list of objects
        "traceName": "run ]x[ final",
        "extra": [1, [2]],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    serial = decode_file(path)
    parallel = _parallel(path)
    _assert_same(parallel, serial)
    assert parallel is not None and parallel.top["traceName"] == "run ]x[ final"


def test_pretty_printed_and_lenient_traces(tmp_path: Path) -> None:
    events = _many_events(120)
    for event in events[::7]:
        event["ts"] = str(event["ts"])  # numbers as strings switch chunks to lenient types
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=2))
    serial = decode_file(path)
    assert serial.problems  # the fixture does exercise the lenient path
    _assert_same(_parallel(path), serial)


def test_a_cut_inside_a_string_falls_back_to_one_process(tmp_path: Path) -> None:
    # Every name holds the boundary pattern, so some cut lands inside a string.
    events = [x("cpu_op", "op}, {" * 200, 1000.0 + i, 1.0, **{"External id": i}) for i in range(60)]
    path = write(tmp_path / "tricky.json", events)
    assert _parallel(path) is None
    assert decode_file(path).events == 60


@pytest.mark.parametrize(
    "content",
    [
        b'{"traceEvents": [',  # truncated
        b'{"nothing": []}',  # no events key
        b'{"traceEvents": [{"ph": "X"}]',  # unbalanced document
    ],
)
def test_documents_the_fast_checks_do_not_confirm_go_to_one_process(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "odd.json"
    path.write_bytes(content)
    assert _parallel(path) is None


def test_small_files_take_the_single_process_path(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", _many_events(50))
    assert _parallel(path, min_bytes=10**9) is None


def test_a_failing_worker_falls_back_without_losing_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_parallel, "_WORKER", "dashboard.no_such_worker_module")
    path = write(tmp_path / "t.json", _many_events(200))
    assert _parallel(path) is None
    assert path.exists()


def test_progress_reaches_the_end_and_temporary_files_are_removed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(kineto_parallel.tempfile, "tempdir", None)
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": _many_events(200)}).encode()))
    seen: list[float] = []
    trace = kineto_parallel.decode_parallel(path, seen.append, **_SMALL)
    assert trace is not None and trace.events == 600
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_worker_count_honours_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHBOARD_INGEST_WORKERS", "3")
    assert kineto_parallel.worker_count() == 3
    monkeypatch.delenv("DASHBOARD_INGEST_WORKERS")
    assert 1 <= kineto_parallel.worker_count() <= kineto_parallel.MAX_WORKERS


def test_gpu_frame_content_survives_the_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", _many_events(150))
    trace = _parallel(path)
    assert trace is not None
    gpu = trace.frames["gpu"].sort("correlation")
    assert gpu.height == 150
    assert gpu.get_column("correlation").to_list() == list(range(10_000, 10_150))
    assert gpu.select(pl.col("grid_x").unique()).to_series().to_list() == [4]


def test_shared_samples_decode_identically_in_parallel(shared_dir: Path) -> None:
    samples = sorted((shared_dir / "samples" / "kineto").glob("*.json*"))
    assert samples
    for path in samples:  # one-line, multi-line, legacy categories
        _assert_same(_parallel(path, task_bytes=256 * 1024, chunk_bytes=64 * 1024), decode_file(path))


def test_chunks_are_bracketed_in_place_and_the_bytes_restored(tmp_path: Path) -> None:
    import mmap

    from dashboard.collectors.kineto.worker import decode_range

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _many_events(40)}, separators=(",", ":")))  # `},{`: no spare byte
    original = path.read_bytes()
    start, stop = original.index(b"[") + 1, original.rindex(b"]")
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) as mapped:
        frames, counts = decode_range(mapped, start, stop, 512)  # many chunks sharing separator bytes
        assert mapped[:] == original
    assert counts["events"] == 120
    assert frames["gpu"].height == 40 and frames["range"].height == 40
    assert path.read_bytes() == original  # a private mapping never writes back


def test_gpu_and_runtime_names_stay_categorical_until_the_tables(tmp_path: Path) -> None:
    # Kernel names repeat (templates, hundreds of bytes each): kept as strings they were 40 % of the GPU
    # events' bytes in every copy an ingest makes; the tables still hold them as text.
    from dashboard.collectors.kineto.collector import COLLECTOR

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _many_events(200)}))
    for decoded in (decode_file(path), _parallel(path)):
        assert decoded is not None
        dtypes = {kind: frame.schema["name"] for kind, frame in decoded.frames.items() if frame.height}
        assert dtypes == {"gpu": pl.Categorical(), "api": pl.Categorical(), "range": pl.String()}
    tables = COLLECTOR.collect([path], lambda *_: None).tables
    assert tables["kernels"].schema["name"] == pl.String and tables["api_calls"].schema["name"] == pl.String
    assert tables["kernels"].get_column("name").unique().to_list() == ["sgemm_kernel"]


def test_one_cpu_decodes_the_mapped_file_in_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # With one CPU the ranges are decoded here, from the mapping (a range's pages go back once decoded),
    # not from the whole file read into memory: 1.35x a 262 MB trace at the peak instead of 1.8x.
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("no worker process with one CPU")

    monkeypatch.setattr(kineto_parallel.subprocess, "Popen", no_process)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _many_events(300)}))
    _assert_same(_parallel(path, workers=1), decode_file(path))


def test_an_error_while_building_a_chunks_columns_reaches_the_caller_as_itself(tmp_path: Path, monkeypatch) -> None:
    """The decoded events point into the mapped file: an error after the decode must still let the view go,
    so the caller sees that error (and the parallel path falls back), not a BufferError."""
    import mmap

    from dashboard.collectors.kineto import worker

    path = write(tmp_path / "t.json", _many_events(50))

    def broken(events, trace, parts):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    monkeypatch.setattr(worker, "frames_of_chunk", broken)
    data = path.read_bytes()
    start, stop = data.index(b"[{") + 1, data.rindex(b"}]") + 1
    with (open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) as mapped,
          pytest.raises(UnicodeDecodeError)):
        worker.decode_range(mapped, start, stop, 1024)
    # In the parallel path (this process decodes a share of the ranges), the same error falls back: None.
    monkeypatch.setattr(kineto_parallel, "decode_range", worker.decode_range)
    assert _parallel(path, workers=1) is None
