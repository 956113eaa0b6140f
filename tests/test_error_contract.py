"""The error contract, walked through every collector: success with `warning:` lines, or exactly one
`error: FILE: ...` line; never a traceback, never a parser library's own words."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from dashboard.cli.main import cli
from dashboard.collectors import registry
from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn
from dashboard.demo import tt_memory_log
from dashboard.demo.nsys_export import ExportOptions, write_export
from dashboard.ingest.jobs import IngestJobs
from dashboard.store import RunStore

REPO = Path(__file__).resolve().parents[1]

# Words that only a library (or Python itself) would put in a message.
LIBRARY_WORDS = (
    "Traceback", "Error:", "InvalidOperationError", "ComputeError", "RecursionError", "UnicodeDecodeError",
    "i128", "polars", "msgspec", "infer_schema_length", "This error occurred", "Hint", "codec can't",
    "strict_cast", "DepthLimitExceeded", "TapeError", "maximum recursion", "JSON is malformed",
)
DEEP = 100_000


def _kineto(events: list, **top: object) -> bytes:
    return json.dumps({"schemaVersion": 1, **top, "traceEvents": events}).encode()


def _event(**fields: object) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
            "args": {"correlation": 1}} | fields


def _kineto_cases(folder: Path) -> dict[str, Path]:
    cases = {
        "kineto ts 1e30": _kineto([_event(), _event(ts=1e30)]),
        "kineto dur 1e30": _kineto([_event(dur=1e30)]),
        "kineto pid 2**64": _kineto([_event(), _event(pid=2**64)]),
        "kineto rank 2**64": _kineto([_event()], distributedInfo={"rank": 2**64}),
        "kineto base 2**64": _kineto([_event()], baseTimeNanoseconds=2**64),
        "kineto 100k deep": b'{"traceEvents": [' + b"[" * DEEP + b"]" * DEEP + b"]}",
        "kineto not utf-8": _kineto([_event(name="NAME")]).replace(b"NAME", b"\xff\xfe"),
        "kineto truncated": _kineto([_event()] * 50)[:700],
        "kineto end before start": _kineto([_event(), _event(dur=-5)]),
    }
    paths = {}
    for name, data in cases.items():
        path = folder / (name.replace(" ", "_").replace("*", "") + ".json")
        path.write_bytes(data)
        paths[name] = path
    return paths


def _nsys_cases(folder: Path) -> dict[str, Path]:
    base = folder / "nsys_base.sqlite"
    write_export(base, ExportOptions(rank=0, steps=1, layers=1))
    kernel = "CUPTI_ACTIVITY_KIND_KERNEL"
    edits = {
        "nsys -2**63 start": f"UPDATE {kernel} SET start = -9223372036854775808 WHERE rowid = 1",
        "nsys -2**63 end": f"UPDATE {kernel} SET end = -9223372036854775808 WHERE rowid = 1",
        "nsys text in start": f"UPDATE {kernel} SET start = 'hello' WHERE rowid = 1",
        "nsys 1e30 in start": f"UPDATE {kernel} SET start = 1e30 WHERE rowid = 1",
        "nsys blob in deviceId": f"UPDATE {kernel} SET deviceId = x'00ff' WHERE rowid = 1",
        "nsys end before start": f"UPDATE {kernel} SET end = start - 5",
        "nsys shared memory overflow": f"UPDATE {kernel} SET staticSharedMemory = 9223372036854775807, "
                                       "dynamicSharedMemory = 9223372036854775807 WHERE rowid = 1",
    }
    paths = {}
    for name, statement in edits.items():
        path = folder / (name.replace(" ", "_").replace("*", "") + ".sqlite")
        shutil.copyfile(base, path)
        with sqlite3.connect(path) as conn:
            conn.execute(statement)
        paths[name] = path
    damaged = folder / "nsys_damaged.sqlite"
    data = bytearray(base.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 2: page * 4] = b"\xa5" * (page * 2)
    damaged.write_bytes(bytes(data))
    paths["nsys damaged pages"] = damaged
    return paths


def _tt_cases(folder: Path) -> dict[str, Path]:
    head = b'{"memory_config": {}, "total_operations": 1, "operations": ['
    documents = {
        "tt json 100k deep": head + b"[" * DEEP + b"]" * DEEP + b"]}",
        "tt json not utf-8": head + b'{"op_type": "A\xff\xfe"}]}',
        "tt json broken": head + b'{"op_type": x}]}',
        "tt json wrong shape": head + b"1, 2]}",
    }
    paths = {}
    for name, data in documents.items():
        path = folder / name.replace(" ", "_") / "m_memory.json"
        path.parent.mkdir()
        path.write_bytes(data)
        paths[name] = path
    run_dir = tt_memory_log.write(folder / "tt_log", n_ops=40, with_json=False)[0]
    log = next(run_dir.glob("*.log"))
    text = log.read_bytes()
    cut = folder / "tt_cut" / log.name
    cut.parent.mkdir()
    cut.write_bytes(text[: len(text) // 2])
    paths["tt log cut mid-block"] = cut
    garbled = folder / "tt_garbled" / log.name
    garbled.parent.mkdir()
    garbled.write_bytes(text.replace(b"MB", b"\xff\xfe", 5))
    paths["tt log with non-utf-8 bytes"] = garbled
    return paths


def _dot_cases(folder: Path) -> dict[str, Path]:
    texts = {
        "dot syntax error": b"digraph g {\n  a -> -> b;\n}\n",
        "dot not utf-8": b"digraph g {\n  a [label=\"\xff\xfe\"];\n  a -> b;\n}\n",
        "dot unbalanced": b"digraph g {\n  a -> b;\n",
        "dot nested subgraphs": b"digraph g {\n" + b"subgraph { " * 3000 + b"a -> b" + b" }" * 3000 + b"\n}\n",
    }
    paths = {}
    for name, data in texts.items():
        path = folder / (name.replace(" ", "_") + ".dot")
        path.write_bytes(data)
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad")
    return {**_kineto_cases(folder), **_nsys_cases(folder), **_tt_cases(folder), **_dot_cases(folder)}


def _ingest(path: Path, data: Path, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["ingest", str(path), "--data", str(data), *extra])
    return result.exit_code, result.stdout, result.stderr


def assert_contract(exit_code: int, stdout: str, stderr: str, path: Path) -> None:
    # Progress lines (`ingest: 70.0% ...`) appear when an ingest takes over a second; they are not messages.
    lines = [line for line in stderr.splitlines() if not line.startswith("ingest: ")]
    for word in LIBRARY_WORDS:
        assert word not in stderr, stderr
    if exit_code == 0:
        assert stdout.strip(), "a run id on stdout"
        assert all(line.startswith(f"warning: {path}") for line in lines), stderr
        return
    assert exit_code == 1, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"error: {path}: "), stderr


@pytest.mark.parametrize("collector", ["kineto", "nsys", "tt", "dot"])
def test_every_collector_keeps_the_contract_on_bad_input(cases: dict[str, Path], tmp_path: Path,
                                                         collector: str) -> None:
    chosen = {name: path for name, path in cases.items() if name.startswith(collector)}
    assert len(chosen) >= 4
    outcomes = {}
    for name, path in chosen.items():
        exit_code, stdout, stderr = _ingest(path, tmp_path / "data")
        assert_contract(exit_code, stdout, stderr, path)
        outcomes[name] = exit_code
    assert any(outcomes.values()), outcomes  # at least one case of each format is refused
    if collector in ("kineto", "nsys"):
        assert not all(outcomes.values()), outcomes  # and bad rows in a good file are dropped, not refused


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("kineto ts 1e30", "warning: {path}: dropped 1 GPU events whose `ts` or `dur` is not a usable time "
                           "(not finite, or beyond ±95 years)"),
        ("kineto 100k deep", "error: {path}: JSON nested too deeply to read (more than ~1,000 levels of brackets)"),
        ("kineto end before start", "warning: {path}: dropped 1 GPU events with a negative `dur`"),
        ("nsys end before start", "warning: {path}: 6 kernels end before they start; dropped"),
        ("nsys -2**63 start", "warning: {path}: 1 kernel starts or ends more than 10 years away from the rest of "
                              "the trace; dropped"),
        ("tt json broken", "error: {path}: not valid JSON (where: line 1, column 73)"),
        ("tt json wrong shape", "error: {path}: the memory.json's `operations` are not JSON objects (where: the "
                                "`operations` list)"),
        ("tt json 100k deep", "error: {path}: JSON nested too deeply to read (more levels of brackets than a "
                              "parser can follow)"),
    ],
)
def test_exact_lines(cases: dict[str, Path], tmp_path: Path, name: str, line: str) -> None:
    path = cases[name]
    _, _, stderr = _ingest(path, tmp_path / "data")
    assert line.format(path=path) in stderr.splitlines(), stderr


class _BrokenCollector:
    """A real collector whose parser hits a value polars refuses: the safety net must word it."""

    name = "broken"
    description = "broken test format (.broken)"

    def sniff(self, probe: Probe) -> bool:
        return probe.path.suffix == ".broken"

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        pl.Series([1e30]).cast(pl.Int64, strict=True)  # raises InvalidOperationError
        raise AssertionError("unreachable")


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    collector = _BrokenCollector()
    registry.register(collector)
    path = tmp_path / "x.broken"
    path.write_text("anything")
    yield path
    registry.unregister(collector)


def test_the_safety_net_words_an_unexpected_failure_and_logs_its_traceback(
        broken: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="dashboard"), pytest.raises(IngestError) as caught:
        registry.collect([broken])
    assert str(caught.value) == (f"{broken}: holds a number too large or of the wrong type for its column")
    assert caught.value.__cause__ is not None  # --debug shows the chain
    logged = [r for r in caplog.records if r.exc_info]
    assert logged and "InvalidOperationError" in logged[0].exc_info[0].__name__
    exit_code, _, stderr = _ingest(broken, tmp_path / "data")
    assert (exit_code, stderr) == (1, f"error: {broken}: holds a number too large or of the wrong type for its "
                                      "column\n")


def test_debug_shows_the_traceback(cases: dict[str, Path], tmp_path: Path) -> None:
    path = cases["kineto rank 2**64"].with_name("deep_for_debug.json")
    shutil.copyfile(cases["kineto 100k deep"], path)
    command = [sys.executable, "-m", "dashboard.app", "ingest", str(path), "--data", str(tmp_path / "d")]
    quiet = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)
    loud = subprocess.run([*command, "--debug"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert quiet.returncode == loud.returncode == 1
    assert quiet.stderr.count("\n") == 1 and "Traceback" not in quiet.stderr
    assert "Traceback" in loud.stderr
    assert loud.stderr.splitlines()[-1] == quiet.stderr.strip()


def test_an_upload_that_fails_reports_one_plain_line(cases: dict[str, Path], tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    jobs = IngestJobs(RunStore(tmp_path / "data"))
    upload = jobs.new_upload_folder()
    shutil.copyfile(cases["nsys text in start"], upload / "trace.sqlite")
    with caplog.at_level(logging.WARNING, logger="dashboard"):
        status = jobs.status(jobs.run_sync(upload))
    assert status["state"] == "error"
    assert status["error"] == ("trace.sqlite: text where an integer is expected (where: table "
                               "CUPTI_ACTIVITY_KIND_KERNEL, column start, 1 row, first at rowid 1: 'hello')")


def test_an_upload_hitting_the_safety_net_logs_the_traceback_for_the_server(
        broken: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Uploads parse in a child process (ingest.budget), which knows only the built-in collectors, so the
    # broken collector registered here cannot run there: the child's report of an unexpected error is
    # what reaches the job, with the library's text in it. The page must get the plain line anyway.
    from dashboard.ingest import jobs as jobs_module
    from dashboard.ingest.budget import ChildIngestFailed

    def child_hit_a_parser_bug(*_args: object, **_kwargs: object) -> str:
        raise ChildIngestFailed("InvalidOperationError", "conversion from `f64` to `i64` failed in column 'ts'")

    monkeypatch.setattr(jobs_module, "run_in_child", child_hit_a_parser_bug)
    jobs = IngestJobs(RunStore(tmp_path / "data"))
    upload = jobs.new_upload_folder()
    shutil.copyfile(broken, upload / "x.broken")
    with caplog.at_level(logging.WARNING, logger="dashboard"):
        status = jobs.status(jobs.run_sync(upload))
    assert status["error"] == "x.broken: the ingest failed on content it does not handle"
    assert "f64" not in status["error"] and "InvalidOperationError" not in status["error"]
    assert any(r.exc_info for r in caplog.records)
