"""Failed uploads are listed on the runs page and can be retried or deleted there (Dash callbacks over HTTP).

Also the upload housekeeping around them: an upload that arrived damaged
leaves no folder, empty upload folders are removed, nothing else is.
"""

from __future__ import annotations

import io
import json
import os
import socket
import time
import uuid
from pathlib import Path

import pytest

from dashboard.app import create_app
from dashboard.ingest.jobs import IngestJobs
from dashboard.layouts.server_state import current_jobs
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.support.dash_requests import callback_payload
from tests.support.uploads import upload_with_client
from tests.test_jobs import _dead_pid

DOT_SOURCE = b'digraph planner {\n  a [label="load"];\n  b [label="mma"];\n  a -> b [label="smem"];\n}\n'


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory):
    # One app per module: Dash registers the pages' callbacks with the first app built in a process.
    root = tmp_path_factory.mktemp("failed-uploads")
    app = create_app(Settings(data_dir=root / "data", seed_demo=False))
    client = app.server.test_client()
    client.get("/")  # Dash finishes its setup on the first request
    dependencies = client.get("/_dash-dependencies").get_json()

    def call(output: str, values: dict, changed: list[str]) -> dict:
        response = client.post("/_dash-update-component", json=callback_payload(dependencies, output, values, changed))
        assert response.status_code == 200, response.data[:500]
        return response.get_json()["response"]

    return {"client": client, "call": call, "jobs": current_jobs(), "data": root / "data"}


def failed_by_a_restart(jobs: IngestJobs, name: str) -> str:
    """A job whose server process died mid-ingest: its (good) upload is kept as failed."""
    upload = jobs.new_upload_folder()
    (upload / "planner.dot").write_bytes(DOT_SOURCE)
    job_id = uuid.uuid4().hex
    jobs.jobs_dir.mkdir(parents=True, exist_ok=True)
    (jobs.jobs_dir / f"{job_id}.json").write_text(json.dumps(
        {"state": "running", "fraction": 0.1, "message": "decoding", "files": ["planner.dot"], "name": name,
         "upload": str(upload), "pid": _dead_pid(), "host": socket.gethostname()}))
    assert jobs.status(job_id)["state"] == "error"
    return job_id


def failed_on_bad_input(jobs: IngestJobs) -> str:
    upload = jobs.new_upload_folder()
    (upload / "bad.json").write_text("not json at all")
    job_id = jobs.run_sync(upload)
    assert jobs.status(job_id)["state"] == "error"
    return job_id


def wait_for(jobs: IngestJobs, job_id: str) -> dict:
    deadline = time.monotonic() + 60
    while (status := jobs.status(job_id))["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    return status


def test_the_runs_page_lists_failed_uploads_with_their_error(page) -> None:
    jobs = page["jobs"]
    restarted, bad = failed_by_a_restart(jobs, "planner-again"), failed_on_bad_input(jobs)
    router = {"_pages_location.pathname": "/", "_pages_location.search": ""}
    layout = json.dumps(page["call"]("_pages_content.children", router, ["_pages_location.pathname"]))
    assert "failed-uploads" in layout and restarted in layout and bad in layout
    assert "bad.json" in layout and "stopped before it finished" in layout
    # The list refreshes when an ingest ends.
    options = page["call"]("failed-upload-choice.options", {"ingest-poll.disabled": True},
                           ["ingest-poll.disabled"])["failed-upload-choice"]["options"]
    assert {option["value"] for option in options} >= {bad, restarted}


def test_retry_ingests_the_kept_files_again(page) -> None:
    jobs, data = page["jobs"], page["data"]
    job_id = failed_by_a_restart(jobs, "planner-again")
    answer = page["call"]("failed-upload-message.children",
                          {"retry-upload.n_clicks": 1, "failed-upload-choice.value": job_id},
                          ["retry-upload.n_clicks"])
    new_job = answer["ingest-job"]["data"]
    assert answer["ingest-poll"]["disabled"] is False  # the upload card shows the progress
    assert not (data / "uploads" / "failed" / job_id).exists()  # taken: a second click cannot start it twice
    status = wait_for(jobs, new_job)
    assert status["state"] == "done", status
    assert status["run_id"].startswith("planner-again-")  # the name given at upload is kept
    assert RunStore(data).open(status["run_id"]).info.row_counts
    again = page["call"]("failed-upload-message.children",
                         {"retry-upload.n_clicks": 2, "failed-upload-choice.value": job_id}, ["retry-upload.n_clicks"])
    assert "gone" in again["failed-upload-message"]["children"]


def test_delete_removes_the_kept_files_after_a_confirmation(page) -> None:
    jobs, data = page["jobs"], page["data"]
    job_id = failed_on_bad_input(jobs)
    kept = data / "uploads" / "failed" / job_id / "bad.json"
    asked = page["call"]("confirm-delete-upload.displayed",
                         {"delete-upload.n_clicks": 1, "failed-upload-choice.value": job_id,
                          "failed-upload-choice.options": [{"label": "bad.json: …", "value": job_id}]},
                         ["delete-upload.n_clicks"])
    assert asked["confirm-delete-upload"]["displayed"] is True and kept.exists()  # nothing removed yet
    done = page["call"]("delete-upload-message.children",
                        {"confirm-delete-upload.submit_n_clicks": 1, "failed-upload-choice.value": job_id},
                        ["confirm-delete-upload.submit_n_clicks"])
    assert done["delete-upload-message"]["children"] == "Deleted."
    assert not kept.parent.exists()
    assert job_id not in {item["job_id"] for item in jobs.failed_uploads()}
    assert job_id not in json.dumps(done["failed-upload-choice"]["options"])


def test_a_damaged_upload_leaves_no_folder(page) -> None:
    uploads = page["data"] / "uploads"
    before = set(uploads.iterdir()) if uploads.exists() else set()
    client = page["client"]
    upload = client.post("/uploads").get_json()["upload"]
    # The body ends before its declared length: the client went away mid-file.
    cut = client.put(f"/uploads/{upload}/files?name=broken.json", input_stream=io.BytesIO(b"{" * 100),
                     environ_overrides={"CONTENT_LENGTH": "1000"}, content_type="application/octet-stream")
    assert cut.status_code == 400 and "cut off" in cut.get_json()["error"], cut.get_json()
    assert (set(uploads.iterdir()) if uploads.exists() else set()) == before
    assert client.post(f"/uploads/{upload}/ingest", json={}).status_code == 404  # nothing left to ingest


def test_empty_upload_folders_are_removed_and_nothing_else(tmp_path: Path) -> None:
    jobs = IngestJobs(RunStore(tmp_path / "data"))
    old = time.time() - 3600
    empty, fresh, filled = jobs.new_upload_folder(), jobs.new_upload_folder(), jobs.new_upload_folder()
    (filled / "trace.json").write_text("{}")
    failed_empty = jobs.uploads_dir / "failed" / ("ab" * 16)
    failed_empty.mkdir(parents=True)
    for folder in (empty, filled, failed_empty):
        os.utime(folder, (old, old))
    assert jobs.remove_empty_upload_folders() == 2
    assert not empty.exists() and not failed_empty.exists()
    assert fresh.is_dir()  # may be one another worker is about to fill
    assert (filled / "trace.json").read_text() == "{}"
    # Every ingest start tidies up.
    os.utime(fresh, (old, old))
    upload = jobs.new_upload_folder()
    (upload / "planner.dot").write_bytes(DOT_SOURCE)
    status = wait_for(jobs, jobs.start(upload))
    assert status["state"] == "done", status
    assert not fresh.exists()


def test_an_upload_is_bytes_in_a_new_regular_file_never_a_link_or_a_path(page) -> None:
    # The browser sends a name and bytes: the server writes a fresh file under its own folder, so an
    # upload can carry neither a symbolic link nor a path outside it, whatever the name says.
    status, answer = upload_with_client(page["client"], {"../../etc/passwd": b"\x00 not a trace"})
    assert status == 200, answer
    job_id = answer["job"]
    status = wait_for(page["jobs"], job_id)
    assert status["state"] == "error" and status["files"] == ["passwd"]
    kept = Path(status["kept_at"]) / "passwd"
    assert kept.parent.parent == page["data"] / "uploads" / "failed"
    assert kept.is_file() and not kept.is_symlink() and kept.read_bytes() == b"\x00 not a trace"
