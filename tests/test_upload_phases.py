"""An upload's job reports the phases `dashboard ingest` prints, in the same order (issue 19)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.gen_kineto_trace import write_trace
from dashboard.ingest.jobs import IngestJobs
from dashboard.ingest.progress import PhaseLog, phase_names, phases_text
from dashboard.store import RunStore

REPO = Path(__file__).resolve().parents[1]
_LINE = re.compile(r"^ingest: (?:\s*\d+\.\d%\s)?(.*)$")


def cli_phases(trace: Path, data: Path) -> list[str]:
    """The phase names the CLI prints on stderr (every one, from the start), consecutive repeats once."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "DASHBOARD_PROGRESS_QUIET_S": "0"}
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(trace), "--data", str(data)],
                          capture_output=True, text=True, env=env, timeout=300, check=True)
    names: list[str] = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match and (not names or names[-1] != match.group(1).strip()):
            names.append(match.group(1).strip())
    return names


def test_an_upload_job_lists_the_phases_the_cli_prints(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.pt.trace.json", 3000)
    printed = cli_phases(trace, tmp_path / "cli-data")
    # The run's tables written, the analyses every worker would otherwise repeat are kept (ingest.analyses).
    assert printed[0] == "detecting formats" and printed[-3:] == [
        "writing run", "analysing GPU time (idle gaps and their causes)", "laying out the timeline"]
    assert any(name.startswith("kineto: decoding trace.pt.trace.json") for name in printed)

    jobs = IngestJobs(RunStore(tmp_path / "web-data"))
    upload = jobs.new_upload_folder()
    shutil.copy(trace, upload / trace.name)
    job_id = jobs.run_sync(upload)
    status = jobs.status(job_id)
    assert status["state"] == "done", status
    assert phase_names(status) == printed  # kept from the child's status into the finished job's
    assert all(phase["seconds"] >= 0 for phase in status["phases"])


def test_a_phase_log_keeps_every_new_message_once_with_its_duration() -> None:
    log = PhaseLog()
    assert log.note("detecting formats") and not log.note("detecting formats")
    assert log.note("kineto: decoding a.json") and log.note("writing run")
    listed = log.as_list()
    assert [phase["name"] for phase in listed] == ["detecting formats", "kineto: decoding a.json", "writing run"]
    assert all(phase["seconds"] >= 0 for phase in listed)


def test_the_phases_line_of_the_home_page_shows_the_latest_last() -> None:
    assert phases_text({"state": "running"}) is None
    line = phases_text({"phases": [{"name": "detecting formats", "seconds": 0.21},
                                   {"name": "writing run", "seconds": 1.04}]})
    assert line == "Phases (wall seconds each): detecting formats 0.2 s · writing run 1.0 s"
    many = phases_text({"phases": [{"name": f"nsys: reading r{i}.sqlite", "seconds": 1} for i in range(15)]})
    assert many is not None and "(3 earlier)" in many
    assert "r14.sqlite" in many and "r2.sqlite" not in many
