"""Chrome-trace / Perfetto JSON export: valid JSON, every row an event, exact times, named tracks."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from dashboard import schema
from dashboard.cli.main import cli
from dashboard.exports.perfetto import CPU_SLOT, PID_STRIDE, encode_trace, trace_parts, write_trace
from dashboard.store import RunStore
from tests.support.kernel_tables import CPU_THREAD, kernel_tables

TABLE_CATS = {"kernels": {"kernel"}, "memcpy": {"memcpy"}}


def export(tables: dict[str, pl.DataFrame], **kwargs) -> dict:
    return json.loads(b"".join(encode_trace(tables, run_id="r1", **kwargs)))


def complete_events(trace: dict) -> list[dict]:
    return [event for event in trace["traceEvents"] if event["ph"] == "X"]


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    return kernel_tables()


@pytest.fixture(scope="module")
def trace(tables) -> dict:
    return export(tables)


def test_output_is_json_of_the_legacy_trace_format(trace: dict) -> None:
    assert trace["displayTimeUnit"] == "ns"
    assert trace["otherData"]["run"] == "r1"
    events = trace["traceEvents"]
    assert events and {event["ph"] for event in events} == {"X", "M", "s", "f"}
    for event in events:
        # What Perfetto's JSON importer needs of each kind of event.
        assert isinstance(event["name"], str) and event["name"]
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert 0 < event["pid"] < 2**31 and 0 <= event["tid"] < 2**31
        if event["ph"] == "X":
            assert isinstance(event["ts"], float) and isinstance(event["dur"], float)
            assert event["ts"] >= 0 and event["dur"] >= 0
            assert isinstance(event["cat"], str) and isinstance(event["args"], dict)
        elif event["ph"] == "M":
            assert event["name"] in {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}
            assert isinstance(event["args"], dict)
        else:
            assert isinstance(event["id"], int) and isinstance(event["ts"], float)


def test_one_complete_event_per_table_row(tables, trace: dict) -> None:
    by_cat = Counter(event["cat"] for event in complete_events(trace))
    assert by_cat["kernel"] == tables["kernels"].height
    assert by_cat["memcpy"] == tables["memcpy"].height
    assert by_cat["cuda_runtime"] == tables["api_calls"].height
    range_cats = Counter(tables["ranges"].get_column("category").to_list())
    for category, count in range_cats.items():
        assert by_cat[category] == count
    assert sum(by_cat.values()) == sum(frame.height for frame in tables.values())


def test_names_times_and_durations_round_trip_to_the_nanosecond(tables, trace: dict) -> None:
    origin = int(trace["otherData"]["origin_ns"])
    assert origin == min(int(frame.get_column("start_ns").min()) for frame in tables.values())
    exported = pl.DataFrame(
        [{"name": e["name"], "start_ns": origin + round(e["ts"] * 1000), "dur_ns": round(e["dur"] * 1000),
          "correlation": e["args"]["correlation"]} for e in complete_events(trace) if e["cat"] == "kernel"]
    ).sort("start_ns", "correlation")
    expected = tables["kernels"].select(
        "name", "start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"), "correlation"
    ).sort("start_ns", "correlation")
    assert exported.equals(expected)


def test_tracks_are_named_rank_gpu_stream(tables, trace: dict) -> None:
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert processes[1 * PID_STRIDE + 0] == "rank 0 · GPU 0"
    assert processes[2 * PID_STRIDE + 1] == "rank 1 · GPU 1"
    assert processes[1 * PID_STRIDE + CPU_SLOT] == "rank 0 · CPU"
    kernels = [e for e in complete_events(trace) if e["cat"] == "kernel"]
    # Each kernel sits on the thread named after its stream, in its rank's GPU process.
    for event in kernels:
        assert threads[(event["pid"], event["tid"])] == f"stream {event['args']['stream']}"
        assert event["pid"] == (1 + int(processes[event["pid"]].split()[1])) * PID_STRIDE + event["args"]["device"]
    # Every track used has a name; CPU thread ids too big for 32 bits keep their real id in the name.
    used = {(e["pid"], e["tid"]) for e in complete_events(trace)}
    assert used <= set(threads)
    assert f"thread {CPU_THREAD}" in threads.values()
    # A GPU annotation gets its own lane beside its stream: it need not nest with the kernels.
    annotation = next(e for e in complete_events(trace) if e["cat"] == "gpu_user_annotation")
    assert threads[(annotation["pid"], annotation["tid"])] == "stream 7 · annotations"


def test_flows_join_each_launch_to_its_kernel(tables, trace: dict) -> None:
    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    finishes = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "f"}
    assert set(starts) == set(finishes) and len(starts) == tables["kernels"].height
    kernel_at = {(e["pid"], e["tid"], e["ts"]) for e in complete_events(trace) if e["cat"] == "kernel"}
    api_at = {(e["pid"], e["tid"], e["ts"]) for e in complete_events(trace) if e["cat"] == "cuda_runtime"}
    for flow_id, start in starts.items():
        finish = finishes[flow_id]
        assert finish["bp"] == "e"
        assert (start["pid"], start["tid"], start["ts"]) in api_at
        assert (finish["pid"], finish["tid"], finish["ts"]) in kernel_at
    assert not any(e["ph"] in "sf" for e in export(tables, flows=False)["traceEvents"])


def test_chunked_encoding_gives_the_same_trace(tables, trace: dict) -> None:
    assert export(tables, chunk_rows=7) == trace


def test_missing_values_do_not_break_the_export() -> None:
    kernels = schema.conform("kernels", pl.DataFrame({
        "name": [None, "k"], "start_ns": [10, None], "end_ns": [None, 50], "stream": [None, 3],
    }))
    trace = export({"kernels": kernels})
    events = complete_events(trace)
    # A kernel without a start cannot be placed and is left out; the rest keep defaults.
    assert [(e["name"], e["ts"], e["dur"]) for e in events] == [("(unnamed)", 0.0, 0.0)]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {"stream ?"}


def test_no_trace_tables_give_an_empty_but_valid_trace() -> None:
    trace = export({"op_memory": schema.empty("op_memory"), "kernels": schema.empty("kernels")})
    assert trace["traceEvents"] == []
    assert trace_parts({}).empty


def test_write_trace_reports_the_bytes_written(tables) -> None:
    buffer = io.BytesIO()
    size = write_trace(tables, buffer, run_id="r1")
    assert size == len(buffer.getvalue()) > 0
    assert json.loads(buffer.getvalue())["traceEvents"]


def test_a_large_run_is_exported_without_per_event_python(tables) -> None:
    many = pl.concat([tables["kernels"].with_columns(pl.col("start_ns") + i * 10_000_000,
                                                     pl.col("end_ns") + i * 10_000_000) for i in range(625)])
    assert many.height == 100_000
    parts = trace_parts({"kernels": many})
    assert parts.counts == {"kernels": 100_000}
    size = sum(len(chunk) for chunk in encode_trace({"kernels": many}))
    assert size > 100_000 * 100


def test_cli_export_trace_writes_the_file(tmp_path: Path, tables) -> None:
    data = tmp_path / "data"
    run_id = RunStore(data).write("traced", tables)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["export-trace", run_id, "--data", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.output
    trace = json.loads(out.read_text())
    assert len(complete_events(trace)) == sum(frame.height for frame in tables.values())
    assert trace["otherData"]["run"] == run_id

    to_stdout = CliRunner().invoke(cli, ["export-trace", run_id, "--data", str(data), "--out", "-"])
    assert json.loads(to_stdout.stdout_bytes) == trace


def test_cli_export_trace_explains_what_is_wrong(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = CliRunner().invoke(cli, ["export-trace", "no-such-run", "--data", str(data)])
    assert result.exit_code == 1 and "no run named 'no-such-run'" in result.output
    memory_only = RunStore(data).write("mem", {"op_memory": schema.conform("op_memory", pl.DataFrame(
        {"op_index": [0], "buffer_type": ["DRAM"], "total": [10]}))})
    result = CliRunner().invoke(cli, ["export-trace", memory_only, "--data", str(data)])
    assert result.exit_code == 1 and "no kernels, copies, ranges or API calls" in result.output
