"""Python call stacks as intervals on the capture clock, with bounded overhead."""

from __future__ import annotations

import json
import sys
import threading

import polars as pl
import pytest

from dashboard.capture.cupti_fake import FakeCuptiBackend
from dashboard.capture.session import CaptureSession
from dashboard.capture.stacks import StackLimits, StackRecorder, describe, is_user_code

THIS_FILE = __file__


class Ticks:
    """A clock that counts its readings: every timestamp is distinct and ordered."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 10
        return self.now


def leaf() -> int:
    return 1


def middle() -> int:
    return leaf() + leaf()


def outer() -> int:
    return middle() + json.loads("1")  # json is stdlib: skipped


def recurse(n: int) -> int:
    return 0 if n == 0 else 1 + recurse(n - 1)


def failing() -> None:
    raise ValueError("unwinds")


def generator():
    yield 1
    yield 2


def _record(body, limits: StackLimits | None = None) -> tuple[pl.DataFrame, StackRecorder]:
    recorder = StackRecorder(Ticks(), limits or StackLimits())
    assert recorder.start()
    try:
        body()
    finally:
        recorder.stop()
    return recorder.frame(), recorder


def _functions(frame: pl.DataFrame) -> list[str]:
    return [name.split(" (")[0] for name in frame.sort("start_ns").get_column("function")]


def test_nested_calls_become_intervals_with_depth() -> None:
    frame, recorder = _record(outer)
    assert recorder.mechanism in ("sys.setprofile", "sys.monitoring")
    rows = frame.sort("start_ns")
    assert _functions(rows) == ["outer", "middle", "leaf", "leaf"]
    assert rows.get_column("depth").to_list() == [0, 1, 2, 2]
    assert (rows.get_column("end_ns") > rows.get_column("start_ns")).all()
    parent, child = rows.row(0, named=True), rows.row(1, named=True)
    assert parent["start_ns"] < child["start_ns"] and child["end_ns"] < parent["end_ns"]
    assert rows.get_column("thread").unique().to_list() == [threading.get_native_id()]
    assert rows.row(0, named=True)["function"] == f"outer (test_stacks.py:{outer.__code__.co_firstlineno})"


def test_stdlib_and_third_party_frames_are_skipped_by_default() -> None:
    frame, _ = _record(lambda: json.dumps({"a": [1, 2]}) and pl.DataFrame({"a": [1]}).height)
    assert not any("json" in f or "polars" in f for f in frame.get_column("function"))
    assert is_user_code(outer.__code__, StackLimits())
    assert not is_user_code(json.dumps.__code__, StackLimits())
    assert is_user_code(json.dumps.__code__, StackLimits(skip_stdlib=False))
    assert not is_user_code(StackRecorder.start.__code__, StackLimits())  # the profiler's own code


def test_include_predicate_replaces_the_default_filter() -> None:
    only_leaf = StackLimits(include=lambda code: code.co_name == "leaf")
    frame, _ = _record(outer, only_leaf)
    assert _functions(frame) == ["leaf", "leaf"]
    assert frame.get_column("depth").to_list() == [0, 0]  # depth counts recorded frames


def test_depth_is_bounded() -> None:
    frame, _ = _record(lambda: recurse(30), StackLimits(max_depth=5))
    assert frame.height == 5
    assert sorted(frame.get_column("depth").to_list()) == [0, 1, 2, 3, 4]


def test_interval_count_is_capped_with_a_warning() -> None:
    frame, recorder = _record(lambda: [leaf() for _ in range(100)], StackLimits(max_intervals=10))
    assert frame.height <= 12  # the cap, plus frames still open when it was hit
    assert any("stopped after 10" in w for w in recorder.warnings)


def test_exceptions_and_generators_close_their_frames() -> None:
    def body() -> None:
        with pytest.raises(ValueError):
            failing()
        assert list(generator()) == [1, 2]

    frame, _ = _record(body)
    names = _functions(frame)
    assert names.count("failing") == 1
    assert names.count("generator") == 3  # each resume until exhaustion is one activation


def test_threads_started_during_the_capture_are_recorded() -> None:
    def body() -> None:
        worker = threading.Thread(target=middle)
        worker.start()
        worker.join()

    frame, _ = _record(body)
    threads = frame.filter(pl.col("function").str.starts_with("middle")).get_column("thread").to_list()
    assert len(threads) == 1 and threads[0] != threading.get_native_id()


def test_frames_open_at_stop_end_at_stop() -> None:
    recorder = StackRecorder(Ticks())

    def body() -> None:
        recorder.start()
        leaf()

    body()
    recorder.stop()
    frame = recorder.frame()
    assert _functions(frame) == ["leaf"]  # body began before the capture: never half-recorded


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring does not conflict with setprofile")
def test_another_profiler_is_not_clobbered() -> None:
    previous = sys.getprofile()
    sys.setprofile(lambda *args: None)
    try:
        recorder = StackRecorder(Ticks())
        assert recorder.start() is False
        assert "another profiler" in recorder.warnings[0]
    finally:
        sys.setprofile(previous)


def test_describe_names_the_function_and_where_it_is() -> None:
    assert describe(leaf.__code__) == f"leaf (test_stacks.py:{leaf.__code__.co_firstlineno})"


def test_session_stacks_share_the_capture_clock() -> None:
    gpu = FakeCuptiBackend()
    session = CaptureSession("s", backend=gpu, layers=False, stacks=StackLimits(include=_this_file))
    with session:
        middle()
        gpu.launch_kernel("_Z3fooi", 100)
    stack = session.tables()["stack"]
    assert set(_functions(stack)) == {"middle", "leaf"}
    assert stack.get_column("rank").unique().to_list() == [0]
    assert session.started_ns <= stack.get_column("start_ns").min()
    assert stack.get_column("end_ns").max() <= session.stopped_ns


def _this_file(code) -> bool:
    return code.co_filename == THIS_FILE and code.co_name in ("middle", "leaf")
