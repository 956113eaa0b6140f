"""Kineto values no parser library should be left to word: huge times, deep nesting, bad UTF-8, huge ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from tests.collectors.test_kineto_parsing import launch, write, x


def _good() -> list[dict]:
    return [x("cpu_op", "aten::mm", 10, 50, **{"External id": 1}), *launch(11, 1, 20, 3, ext=1)]


def _warnings(path: Path) -> list[str]:
    return registry.collect([path]).warnings


@pytest.mark.parametrize(
    ("field", "value"),
    [("ts", 1e30), ("ts", -1e30), ("dur", 1e30), ("ts", 1e308), ("ts", "1e30"), ("ts", "nan"), ("ts", "inf")],
)
def test_times_beyond_any_clock_are_dropped_and_counted(tmp_path: Path, field: str, value: object) -> None:
    bad = x("cpu_op", "aten::bad", 12, 1, **{"External id": 2}) | {field: value}
    path = write(tmp_path / "t.json", [*_good(), bad])
    run = registry.collect([path])
    assert run.tables["ranges"]["name"].to_list() == ["aten::mm"]
    assert (f"{path}: dropped 1 ranges whose `ts` or `dur` is not a usable time (not finite, or beyond ±95 years)"
            in run.warnings)


def test_a_kernel_with_an_absurd_time_is_dropped_by_the_ten_year_rule(tmp_path: Path) -> None:
    # 2e15 µs is a representable time, but 60 years away from the rest of this trace.
    events = [*_good(), *launch(30, 2, 2e15, 3, ext=1)]
    path = write(tmp_path / "t.json", events)
    run = registry.collect([path])
    assert run.tables["kernels"].height == 1
    assert f"{path}: 1 kernel starts or ends more than 10 years away from the rest of the trace; dropped" \
        in run.warnings


@pytest.mark.parametrize("where", ["events", "args"])
def test_json_nested_100k_deep_is_one_clear_error(tmp_path: Path, where: str) -> None:
    depth = 100_000
    path = tmp_path / "deep.json"
    if where == "events":
        path.write_text('{"traceEvents": [' + "[" * depth + "]" * depth + "]}")
    else:
        event = json.dumps(x("cpu_op", "aten::mm", 1, 1))[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        path.write_text('{"traceEvents": [' + event + "]}")
    with pytest.raises(IngestError) as caught:
        registry.collect([path])
    assert caught.value.path == str(path)
    assert "nested too deeply to read (more than ~1,000 levels of brackets)" in caught.value.problem


def test_bytes_that_are_not_utf8_are_replaced_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", [*_good(), x("cpu_op", "aten::NAME", 12, 1)])
    data = path.read_bytes()
    offset = data.index(b"NAME")
    path.write_bytes(data.replace(b"NAME", b"N\xff\xfeE"))
    run = registry.collect([path])
    assert sorted(run.tables["ranges"]["name"].to_list()) == ["aten::N\ufffd\ufffdE", "aten::mm"]
    assert (f"{path}: 2 byte sequences that are not UTF-8 text, replaced by U+FFFD (first at byte offset "
            f"{offset + 1})") in run.warnings


def test_not_utf8_in_a_top_level_field_is_repaired_too(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", _good(), traceName="run-NAME")
    path.write_bytes(path.read_bytes().replace(b"NAME", b"\xc3("))
    run = registry.collect([path])
    assert run.tables["kernels"].height == 1
    assert any("1 byte sequences that are not UTF-8 text" in w for w in run.warnings)


def test_a_pid_of_2_to_the_64_keeps_the_event_without_an_id(tmp_path: Path) -> None:
    events = [*_good(), *launch(30, 2, 40, 3, ext=1)]
    events[-1]["pid"] = 2**64
    path = write(tmp_path / "t.json", events)
    run = registry.collect([path])
    kernels = run.tables["kernels"].sort("start_ns")
    assert kernels.height == 2 and kernels["device"].to_list() == [0, None]
    assert f"{path}: 1 `pid` values too large for an id (kept without a number)" in run.warnings


def test_a_correlation_of_2_to_the_64_is_left_empty_and_counted(tmp_path: Path) -> None:
    events = _good()
    events[-1]["args"]["correlation"] = 2**64
    path = write(tmp_path / "t.json", events)
    run = registry.collect([path])
    assert run.tables["kernels"]["correlation"].to_list() == [None]
    assert f"{path}: 1 `correlation` values too large for a 64-bit integer (left empty)" in run.warnings


@pytest.mark.parametrize("rank", [2**64, str(2**64), 2**31])
def test_a_rank_too_large_for_the_tables_is_ignored_with_a_warning(tmp_path: Path, rank: object) -> None:
    path = write(tmp_path / "t.json", _good(), distributedInfo={"rank": rank})
    run = registry.collect([path])
    assert run.tables["kernels"]["rank"].to_list() == [0]
    assert (f"{path}: rank {int(rank)} in distributedInfo is beyond the largest usable rank (2,147,483,647); "
            "ignored") in run.warnings


def test_a_base_time_beyond_int64_is_refused_with_where(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", _good(), baseTimeNanoseconds=2**64)
    with pytest.raises(IngestError) as caught:
        registry.collect([path])
    assert caught.value.problem == ("`baseTimeNanoseconds` is 18446744073709551616, not a time in ns "
                                    "(where: the top-level baseTimeNanoseconds field)")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"traceEvents": [1, x]}', "not valid JSON (where: byte offset 20)"),
        (b"[1, 2, 3]", "not a Kineto trace: expected a JSON object with `traceEvents`, found an array"),
    ],
)
def test_json_errors_carry_an_offset_not_the_parser_text(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    from dashboard.collectors.kineto.collector import COLLECTOR

    with pytest.raises(IngestError) as caught:
        COLLECTOR.collect([path], lambda fraction, message: None)
    assert caught.value.problem == problem


@pytest.mark.parametrize("damage", ["not utf-8", "deep"])
def test_the_parallel_decoder_hands_damaged_files_to_the_precise_single_process_path(tmp_path: Path,
                                                                                    damage: str) -> None:
    from dashboard.collectors.kineto import parallel as kineto_parallel

    events = [*_good() * 200, x("cpu_op", "aten::NAME", 12, 1)]
    path = write(tmp_path / "t.json", events)
    data = path.read_bytes()
    bad = b"N\xff\xfeE" if damage == "not utf-8" else b'NAME", "deep": ' + b"[" * 5000 + b"]" * 5000 + b', "x": "'
    path.write_bytes(data.replace(b"NAME", bad))
    small = {"min_bytes": 0, "task_bytes": 4096, "chunk_bytes": 1024, "workers": 3}
    assert kineto_parallel.decode_parallel(path, **small) is None
