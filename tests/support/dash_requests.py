"""The JSON bodies the browser POSTs to /_dash-update-component, and the layout GET /_dash-layout
answers, for HTTP-level tests."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

HOST = "http://localhost"  # the address a test client's Referer names pages under


def dash_layout(client: Any, referrer: str | None = None) -> dict[str, Any]:
    """The layout tree the app sends for a page (the browser's address goes in the Referer header)."""
    headers = {"Referer": referrer} if referrer else {}
    response = client.get("/_dash-layout", headers=headers)
    assert response.status_code == 200
    return json.loads(response.get_data(as_text=True))


def components(tree: Any) -> Iterator[dict[str, Any]]:
    """Every component (`type` and `props`) of a layout tree, depth first."""
    if isinstance(tree, dict):
        if "type" in tree and "props" in tree:
            yield tree
            yield from components(tree["props"])
        else:
            for value in tree.values():
                yield from components(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from components(item)


def by_id(tree: Any, component_id: Any) -> dict[str, Any]:
    """The first component of a layout tree with this id."""
    return next(c for c in components(tree) if c["props"].get("id") == component_id)


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


def _parse_id(text: str) -> str | dict:
    return json.loads(text) if text.startswith("{") else text


def _is_all(component: str | dict) -> bool:
    parsed = _parse_id(component) if isinstance(component, str) else component
    return isinstance(parsed, dict) and ["ALL"] in parsed.values()


def callback_payload(dependencies: list[dict], output: str, values: dict[str, Any], changed: list[str]) -> dict:
    """The body for the callback whose outputs start with `output` ("id.prop"), as the renderer sends it.

    `values` gives inputs and states by "id.prop" (others are sent as null); `changed` lists the
    "id.prop" of every input the renderer reports as changed in this one call. Pattern-matching
    ALL dependencies match no component.
    """
    callback = next(dep for dep in dependencies if dep["output"].startswith(f"..{output}."))
    outputs: list[Any] = []
    for part in callback["output"].strip(".").split("..."):
        component, prop = part.rsplit(".", 1)
        parsed = _parse_id(component)
        # A pattern-matching ALL output is sent as the list of components it matches: none here.
        outputs.append([] if _is_all(parsed) else {"id": parsed, "property": prop})

    def key(item: dict) -> str:
        component = item["id"]
        if isinstance(component, dict):
            component = json.dumps(component, sort_keys=True, separators=(",", ":"))
        return f"{component}.{item['property']}"

    def listed(items: list[dict]) -> list[Any]:
        # The renderer sends a pattern-matching id as the object it is, not as its JSON text.
        return [[] if _is_all(item["id"]) else {"id": _parse_id(item["id"]) if isinstance(item["id"], str)
                                                 else item["id"], "property": item["property"],
                                                 "value": values.get(key(item))} for item in items]

    return {"output": callback["output"], "outputs": outputs, "inputs": listed(callback["inputs"]),
            "state": listed(callback["state"]), "changedPropIds": changed}
