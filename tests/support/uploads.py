"""Uploading the way the Runs page does (assets/upload.js): a new upload, one PUT per file, then ingest."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote


def upload_with_client(client: Any, files: Mapping[str, bytes], name: str | None = None) -> tuple[int, dict]:
    """Through a Flask test client; (status, answer) of the first request that failed, else of the ingest."""
    opened = client.post("/uploads")
    if opened.status_code != 200:
        return opened.status_code, opened.get_json()
    upload = opened.get_json()["upload"]
    for file_name, data in files.items():
        sent = client.put(f"/uploads/{upload}/files?name={quote(file_name)}", data=data,
                          content_type="application/octet-stream")
        if sent.status_code != 200:
            return sent.status_code, sent.get_json()
    started = client.post(f"/uploads/{upload}/ingest", json={"name": name})
    return started.status_code, started.get_json()


def _http(base: str, method: str, path: str, body: bytes | Iterable[bytes] | None,
          headers: Mapping[str, str], timeout: float) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=body, method=method, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def upload_over_http(base: str, files: Mapping[str, bytes], name: str | None = None,
                     headers: Mapping[str, str] | None = None, timeout: float = 120) -> tuple[int, dict]:
    """The same against a running server."""
    headers = dict(headers or {})
    status, opened = _http(base, "POST", "/uploads", b"", headers, timeout)
    if status != 200:
        return status, opened
    for file_name, data in files.items():
        status, answer = _http(base, "PUT", f"/uploads/{opened['upload']}/files?name={quote(file_name)}", data,
                               {**headers, "Content-Type": "application/octet-stream"}, timeout)
        if status != 200:
            return status, answer
    return _http(base, "POST", f"/uploads/{opened['upload']}/ingest", json.dumps({"name": name}).encode(),
                 {**headers, "Content-Type": "application/json"}, timeout)
