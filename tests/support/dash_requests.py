"""The JSON bodies the browser POSTs to /_dash-update-component, for HTTP-level tests."""

from __future__ import annotations

import base64


def upload_payload(content: bytes, filename: str = "big.json", name: str | None = None) -> dict:
    """What dcc.Upload sends: the Runs page's start_ingest callback with the file base64-encoded."""
    encoded = "data:application/octet-stream;base64," + base64.b64encode(content).decode()
    return {
        "output": "..ingest-job.data...ingest-poll.disabled...ingest-message.children...ingest-progress.style..",
        "outputs": [{"id": "ingest-job", "property": "data"}, {"id": "ingest-poll", "property": "disabled"},
                    {"id": "ingest-message", "property": "children"}, {"id": "ingest-progress", "property": "style"}],
        "inputs": [{"id": "upload", "property": "contents", "value": [encoded]}],
        "state": [{"id": "upload", "property": "filename", "value": [filename]},
                  {"id": "run-name", "property": "value", "value": name}],
        "changedPropIds": ["upload.contents"],
    }
