"""`dashboard ingest` sets polars' allocator by input size (one arena; freed pages purged as the ingest
allocates for small inputs, by the background thread after 0.2 s for big ones); serving keeps the default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from dashboard.cli.main import INGEST_VALUE_OPTIONS, cli
from dashboard.ingest.allocator import (
    ALLOCATOR_ENV,
    LARGE_INPUT,
    LARGE_INPUT_BYTES,
    SMALL_INPUT,
    ingest_inputs,
    input_bytes,
)

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import os, sys
sys.argv = ["dashboard", *sys.argv[1:]]
import dashboard.app
print(os.environ.get({env!r}, "unset"))
"""


def _setting(*argv: str, env: dict[str, str] | None = None) -> str:
    environment = {key: value for key, value in os.environ.items() if key != ALLOCATOR_ENV}
    environment.update(env or {}, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", PROBE.format(env=ALLOCATOR_ENV), *argv], capture_output=True,
                          text=True, env=environment, timeout=120, check=True)
    return done.stdout.strip()


def test_ingest_sets_the_allocator_before_polars_loads_and_serving_does_not() -> None:
    # polars writes its own defaults first and appends what it finds (jemalloc: the last setting wins).
    assert _setting("ingest", "trace.json").endswith(SMALL_INPUT)
    assert _setting("--data", "d", "ingest", "trace.json").endswith(SMALL_INPUT)
    assert SMALL_INPUT not in _setting("--port", "8050")
    users = _setting("ingest", "x", env={ALLOCATOR_ENV: "dirty_decay_ms:700"})
    assert users.endswith("dirty_decay_ms:700") and SMALL_INPUT not in users  # the user's setting is kept


def test_big_inputs_leave_purging_to_the_background_thread(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # sparse: the size without the disk space
        handle.truncate(LARGE_INPUT_BYTES)
    small = tmp_path / "ranks"
    small.mkdir()
    (small / "rank-0.json").write_bytes(b"{}" * 100)
    assert input_bytes(ingest_inputs([str(big), "--data", "nowhere"])) == LARGE_INPUT_BYTES
    assert input_bytes([str(small)]) == 200
    assert SMALL_INPUT not in _setting("ingest", str(big))
    assert _setting("ingest", str(big)).endswith(LARGE_INPUT)
    assert _setting("ingest", str(small)).endswith(SMALL_INPUT)


def test_the_data_folder_and_option_values_are_not_inputs(tmp_path: Path) -> None:
    # A data folder of earlier runs (each with its source copy) once made every ingest look big.
    data = tmp_path / "data"
    (data / "runs" / "old").mkdir(parents=True)
    with open(data / "runs" / "old" / "trace.json", "wb") as handle:
        handle.truncate(LARGE_INPUT_BYTES)
    trace = tmp_path / "trace.json"
    trace.write_bytes(b"{}" * 50)
    name = tmp_path / "named"  # a --name that happens to be a file's name
    with open(name, "wb") as handle:  # sparse: the size without the disk space
        handle.truncate(LARGE_INPUT_BYTES)
    assert input_bytes(ingest_inputs([str(trace), "--data", str(data), "--name", str(name)],
                                     INGEST_VALUE_OPTIONS)) == 100
    assert input_bytes(ingest_inputs([f"--data={data}", str(trace)], INGEST_VALUE_OPTIONS)) == 100
    assert input_bytes(ingest_inputs(["--debug", str(trace)], INGEST_VALUE_OPTIONS)) == 100  # a flag takes no value
    assert input_bytes(ingest_inputs(["--", str(trace)], INGEST_VALUE_OPTIONS)) == 100
    assert _setting("ingest", str(trace), "--data", str(data)).endswith(SMALL_INPUT)
    assert _setting("ingest", "--data", str(data), str(trace)).endswith(SMALL_INPUT)


def test_the_value_options_are_the_ingest_commands() -> None:
    ingest = cli.commands["ingest"]
    taking_values = {name for param in ingest.params if isinstance(param, click.Option) and not param.is_flag
                     for name in param.opts}
    assert taking_values == set(INGEST_VALUE_OPTIONS)


def test_a_kineto_ingest_loads_neither_pyarrow_nor_the_sqlite_driver(tmp_path: Path) -> None:
    from benchmarks.gen_kineto_trace import write_trace

    trace = write_trace(tmp_path / "trace.json", 300)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "dashboard.app", "ingest", str(trace),
                           "--data", str(tmp_path / "data")], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "dashboard.collectors.kineto.decode" in imported
    assert not {"pyarrow", "adbc_driver_manager", "adbc_driver_sqlite"} & imported


def test_an_upload_child_gets_the_setting_the_command_line_would_choose(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.ingest.budget import _child_env

    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # sparse: the size without the disk space
        handle.truncate(LARGE_INPUT_BYTES)
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    monkeypatch.delenv(ALLOCATOR_ENV, raising=False)
    assert _child_env([big])[ALLOCATOR_ENV] == LARGE_INPUT
    assert _child_env([small])[ALLOCATOR_ENV] == SMALL_INPUT
    monkeypatch.setenv(ALLOCATOR_ENV, "dirty_decay_ms:700")  # the command line's own (or the user's) is kept
    assert _child_env([big])[ALLOCATOR_ENV] == "dirty_decay_ms:700"
