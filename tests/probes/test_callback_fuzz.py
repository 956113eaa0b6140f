"""Probe 5 of issue 35: one error contract in the browser.

116 malformed callback bodies (e.g. `outputs: []` with a pattern-matching state) answered 500, and 2,646
showed Python exception text in the page banner. Every callback of the app, with the demo's runs, gets
its well-formed body and seeded mutations of it: the answer is 200/204 or a 400 naming what is wrong,
never a 500; a banner is one line with an error id, never an exception's name or a server path.
"""

from __future__ import annotations

import collections
import json
import logging
import re
from pathlib import Path

import pytest

from tests.support.callback_fuzz import fuzz_bodies
from tests.support.demo_copy import demo_copy

BANNER = re.compile(r"^[^\n]{1,320} \(error [0-9a-f]{8}; the details are in the server's log\)$")
PYTHON_WORDS = re.compile(r"\b\w*(Error|Exception|Traceback)\b|\bErrno\b|File \"")


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> dict:
    from dashboard.app import create_app
    from dashboard.settings import Settings

    # The demo's runs: a copy of the session's seeded demo (seeding finds runs there and does nothing).
    data = demo_copy(demo_template, tmp_path_factory.mktemp("fuzz") / "data")
    app = create_app(Settings(data_dir=data, seed_demo=True))
    client = app.server.test_client()
    client.get("/")
    return {"client": client, "data": data, "dependencies": client.get("/_dash-dependencies").get_json()}


def test_no_callback_body_is_a_500_and_no_banner_shows_internals(demo_app: dict, caplog) -> None:
    client, data = demo_app["client"], demo_app["data"]
    statuses: collections.Counter[int] = collections.Counter()
    failures, banners = [], []
    with caplog.at_level(logging.ERROR, logger="dashboard"):
        for output, what, body in fuzz_bodies(demo_app["dependencies"], seed=35, per_callback=10):
            response = client.post("/_dash-update-component", data=body, content_type="application/json")
            statuses[response.status_code] += 1
            if response.status_code not in (200, 204, 400):
                failures.append((response.status_code, output[:80], what, response.data[:120]))
                continue
            if response.status_code == 400:
                assert response.get_json()["error"].startswith("malformed callback request: ")
            if response.status_code == 200:
                banner = json.loads(response.data).get("sideUpdate", {}).get("error-banner")
                if banner:
                    banners.append((output[:80], what, banner.get("children")))
    assert statuses[200] > 100 and statuses[400] > 100, statuses  # both kinds were exercised
    assert not failures, f"{len(failures)} answers that were neither 200/204 nor 400: {failures[:5]}"
    for output, what, text in banners:
        assert isinstance(text, str) and BANNER.match(text), (output, what, text)
        assert not PYTHON_WORDS.search(text), (output, what, text)
        assert str(data) not in text and str(Path(data).resolve()) not in text, (output, what, text)
    # Each banner's id names the log entry holding the traceback (the details are there, not in the page).
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for _output, _what, text in banners[:20]:
        error_id = re.search(r"error ([0-9a-f]{8})", text).group(1)
        entry = logged[logged.index(f"[error {error_id}]"):][:4000]
        assert "Traceback" in entry, entry[:300]
