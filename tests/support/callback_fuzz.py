"""Malformed and hostile bodies for every callback of the app, built from its own `_dash-dependencies`.

Each callback gets its well-formed body (inputs and states valued as the renderer would send them,
nulls) and mutations of it: outputs emptied or misshapen, a pattern-matching dependency given a plain
value, values of every wrong type, huge and path-like strings, missing keys, odd changed ids. The
generator is seeded, so a failure names a body that can be sent again.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

from tests.support.dash_requests import callback_payload

HOSTILE_VALUES: list[Any] = [
    None, 0, -1, 2**63, 1e308, float("nan"), True, "", "x" * 300, "../../../etc/passwd", "/etc/passwd",
    "**/*", "[a-z", "(?P<", "%00", "\x00", "<script>alert(1)</script>", [], [None], [1, "a", None], {},
    {"a": [1, {"b": None}]}, {"id": "x", "property": "y"}, "9" * 40, "-0", "NaN", "run=../x",
]


def _ids(dependency: dict) -> list[str]:
    keys = []
    for item in dependency["inputs"] + dependency["state"]:
        component = item["id"]
        keys.append(f"{component}.{item['property']}")
    return keys


def well_formed(dependencies: list[dict], dependency: dict) -> dict:
    output = dependency["output"].strip(".").split("...")[0]
    changed = [f"{dependency['inputs'][0]['id']}.{dependency['inputs'][0]['property']}"] if dependency["inputs"] else []
    if dependency["output"].startswith(".."):
        return callback_payload(dependencies, output, {}, changed)
    component, prop = output.rsplit(".", 1)
    return {
        "output": dependency["output"], "outputs": {"id": _parse(component), "property": prop},
        "inputs": [{"id": _parse(i["id"]), "property": i["property"], "value": None} for i in dependency["inputs"]],
        "state": [{"id": _parse(s["id"]), "property": s["property"], "value": None} for s in dependency["state"]],
        "changedPropIds": changed}


def _parse(component: str) -> Any:
    return json.loads(component) if component.startswith("{") else component


def mutations(body: dict, rng: random.Random, count: int) -> Iterator[tuple[str, dict]]:
    """(what was changed, the body) pairs."""
    yield "as sent", copy.deepcopy(body)
    yield "outputs []", {**copy.deepcopy(body), "outputs": []}
    yield "outputs missing", {k: v for k, v in copy.deepcopy(body).items() if k != "outputs"}
    yield "inputs missing", {k: v for k, v in copy.deepcopy(body).items() if k != "inputs"}
    yield "state []", {**copy.deepcopy(body), "state": []}
    yield "inputs []", {**copy.deepcopy(body), "inputs": []}
    yield "extra key", {**copy.deepcopy(body), "unexpected": {"a": 1}}
    yield "changed unknown", {**copy.deepcopy(body), "changedPropIds": ["nope.value", "x"]}
    for index in range(count):
        mutated = copy.deepcopy(body)
        slots = [(key, i) for key in ("inputs", "state") for i, _ in enumerate(mutated.get(key) or [])]
        if not slots:
            break
        key, i = rng.choice(slots)
        value = rng.choice(HOSTILE_VALUES)
        item = mutated[key][i]
        if isinstance(item, list):  # a pattern-matching dependency: its matched components
            mutated[key][i] = ([{"id": {"type": "x", "index": 0}, "property": "value", "value": value}]
                               if rng.random() < .5 else {"id": "plain", "property": "value", "value": value})
            what = f"{key}[{i}] (pattern) -> {value!r:.40}"
        else:
            item["value"] = value
            what = f"{key}[{i}] {item['id']}.{item['property']} = {value!r:.40}"
        if rng.random() < 0.3:
            mutated["changedPropIds"] = [f"{item['id']}.{item['property']}" if isinstance(item, dict) else "x"]
        yield what, mutated
        del index


def fuzz_bodies(dependencies: list[dict], seed: int = 35, per_callback: int = 12) -> Iterator[tuple[str, str, bytes]]:
    """(callback output, what was changed, JSON body) for every server-side callback."""
    rng = random.Random(seed)
    for dependency in dependencies:
        if dependency.get("clientside_function") is not None:
            continue
        try:
            body = well_formed(dependencies, dependency)
        except (StopIteration, KeyError, IndexError, ValueError):
            continue
        for what, mutated in mutations(body, rng, per_callback):
            yield dependency["output"], what, json.dumps(mutated, allow_nan=True).encode()
