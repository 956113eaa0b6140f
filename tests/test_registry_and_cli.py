"""Format detection and the CLI's promises: one clear line per bad input, ids on stdout."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dashboard.cli.main import cli
from dashboard.collectors import IngestError, detect
from dashboard.store import RunStore
from tests.support.csv_collector import write_kernel_csv


def bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, a phrase its error message must contain)."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.log.gz"
    words = " ".join(f"word{(i * 7919) % 10007}" for i in range(200_000)).encode()
    compressed = gzip.compress(words)
    truncated.write_bytes(compressed[: len(compressed) // 2])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 64)
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello, this is a shopping list\n")
    folder = tmp_path / "nothing_here"
    folder.mkdir()
    (folder / "readme.md").write_text("# nothing to see\n")
    return {
        "empty file": (empty, "empty"),
        "truncated gzip": (truncated, "truncated gzip"),
        "binary garbage": (garbage, "binary data"),
        "unknown format": (unknown, "unknown format"),
        "unrecognisable folder": (folder, "nothing recognisable"),
        "missing path": (tmp_path / "does-not-exist.json", "no such file"),
    }


@pytest.mark.parametrize("case", ["empty file", "truncated gzip", "binary garbage", "unknown format",
                                  "unrecognisable folder", "missing path"])
def test_detect_names_the_file_and_the_problem(tmp_path: Path, case: str) -> None:
    path, phrase = bad_inputs(tmp_path)[case]
    with pytest.raises(IngestError) as raised:
        detect([path])
    assert raised.value.path == str(path)
    assert phrase in raised.value.problem


@pytest.mark.parametrize("case", ["empty file", "truncated gzip", "binary garbage", "unknown format",
                                  "unrecognisable folder", "missing path"])
def test_cli_ingest_bad_input_exits_nonzero_with_one_line(tmp_path: Path, case: str) -> None:
    path, phrase = bad_inputs(tmp_path)[case]
    data = tmp_path / "data"
    result = CliRunner().invoke(cli, ["ingest", str(path), "--data", str(data)])
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and phrase in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert RunStore(data).list_runs() == []


def test_cli_debug_shows_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "nope.json"), "--debug", "--data", str(tmp_path)])
    assert result.exit_code != 0
    assert "Traceback" in result.stderr


def test_gzip_is_transparent_and_content_not_name_decides(tmp_path: Path, csv_collector) -> None:
    plain = write_kernel_csv(tmp_path / "k.csv")
    disguised = tmp_path / "kernels.weird-extension"
    disguised.write_bytes(gzip.compress(plain.read_bytes()))
    detection = detect([disguised])
    assert detection.groups == {"kernel_csv": [disguised]}


def test_folder_keeps_unrecognised_files_as_sources(tmp_path: Path, csv_collector) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    write_kernel_csv(folder / "a.csv")
    (folder / "notes.txt").write_text("not a trace")
    detection = detect([folder])
    assert detection.groups == {"kernel_csv": [folder / "a.csv"]}
    assert detection.ignored == [folder / "notes.txt"]


def test_cli_ingest_prints_run_id_and_runs_lists_it(tmp_path: Path, csv_collector) -> None:
    data = tmp_path / "data"
    source = write_kernel_csv(tmp_path / "k.csv")
    result = CliRunner().invoke(cli, ["ingest", str(source), "--data", str(data), "--name", "first"])
    assert result.exit_code == 0, result.stderr
    run_id = result.stdout.strip()
    assert run_id.startswith("first-") and "\n" not in run_id
    assert result.stderr == ""  # quick work: no progress noise
    listed = CliRunner().invoke(cli, ["runs", "--data", str(data)])
    assert listed.exit_code == 0 and run_id in listed.stdout


def test_data_folder_comes_from_the_environment(tmp_path: Path, csv_collector) -> None:
    data = tmp_path / "from-env"
    source = write_kernel_csv(tmp_path / "k.csv")
    result = CliRunner().invoke(cli, ["ingest", str(source)], env={"DASHBOARD_DATA": str(data)})
    assert result.exit_code == 0, result.stderr
    assert RunStore(data).exists(result.stdout.strip())


def test_help_documents_every_flag() -> None:
    result = subprocess.run([sys.executable, "-m", "dashboard.app", "--help"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0
    for flag in ("--data", "--host", "--port", "--debug", "DASHBOARD_DATA", "DASHBOARD_HOST", "DASHBOARD_PORT",
                 "ingest", "runs"):
        assert flag in result.stdout
    ingest_help = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", "--help"],
                                 capture_output=True, text=True, timeout=60)
    assert "--name" in ingest_help.stdout and "--data" in ingest_help.stdout


def test_progress_goes_to_stderr_on_long_work(capsys: pytest.CaptureFixture[str]) -> None:
    from dashboard.ingest.progress import StderrProgress

    progress = StderrProgress("ingest")
    progress.started -= 5  # as if five seconds had passed
    progress(0.5, "parsing events")
    assert "ingest:  50.0% parsing events" in capsys.readouterr().err
