"""/timeline's details pane as data: the selected event in full, in words and numbers with units.

What Perfetto's and Nsight's selection panes show: the event's key facts
(launch configuration for a kernel, bytes and bandwidth for a copy, the class
of an API call), every column stored for it, the CUDA call that launched it,
the op chain around that call with input shapes and dtypes where the source
kept them, the Python stack, what an op launched with its GPU time, and
links to the pages that say more (/kernels, /layers, /compiler).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import polars as pl

from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.timeline_details import EventDetails, EventRef, event_details
from dashboard.analysis.timeline_lanes import display_name
from dashboard.analysis.units import format_bytes, format_flops_rate, format_ns
from dashboard.collectors.inputs import CUT_MARK
from dashboard.figures.timeline_marks import KIND_CODES, REF_COLUMNS
from dashboard.store import Run
from dashboard.views import timeline as view

KIND_WORDS = {"kernel": "GPU kernel", "memcpy": "copy", "range": "CPU range", "step": "profiler step",
              "api": "CUDA API call"}
CLASS_WORDS = {"compute": "compute", "communication": "communication (collective)", "memory": "memory",
               "sync": "synchronising: the CPU waits for the GPU", "launch": "kernel launch",
               "other": "other"}
MAX_LAUNCHED_ROWS = 12
EMPTY_DTYPE = '""'  # an input the profiler gave no type (None, an optional argument)
MAX_INPUTS_SHOWN = 400  # characters of an op's inputs in the chain (an optimizer's foreach op lists every parameter)
NOT_RECORDED = ("input shapes and dtypes: not recorded in this run (a PyTorch profiler trace has them when "
                "recorded with record_shapes=True)")
NOT_STORED = ("input shapes and dtypes: not stored by the version that ingested this run; ingest its trace "
              "again to see them")
KIND_OF_CODE = {code: kind for kind, code in KIND_CODES.items() if kind != "pass"}
Row = tuple[str, str]


@dataclass(frozen=True)
class Pane:
    """The details pane of one event."""

    ref: str
    kind: str  # KIND_WORDS
    title: str  # the display name
    name: str  # the full name
    facts: list[Row]
    record: list[Row]  # every stored column, raw
    launch: list[Row] = field(default_factory=list)
    chain: list[Row] = field(default_factory=list)  # (op, category · inputs: dtype[shape], ...), outermost first
    chain_note: str = ""  # what the chain lacks (input shapes the run did not record)
    stack: list[str] = field(default_factory=list)
    launched: list[tuple[str, str, str]] = field(default_factory=list)  # name, launches, GPU time
    launched_note: str = ""
    links: list[Row] = field(default_factory=list)  # label, href


def _dims(record: dict[str, Any], prefix: str) -> str | None:
    values = [record.get(f"{prefix}_{axis}") for axis in "xyz"]
    if all(v is None for v in values):
        return None
    return "(" + ", ".join("?" if v is None else str(v) for v in values) + ")"


def _since(ns: int | None, origin_ns: int) -> str:
    return "–" if ns is None else f"{format_ns(ns - origin_ns, 6)} after the run start"


def _facts(details: EventDetails, klass: str | None, origin_ns: int) -> list[Row]:
    record, kind = details.record, details.ref.kind
    start, end = record.get("start_ns", details.ref.start_ns), record.get("end_ns")
    duration = None if end is None else end - start
    rows: list[Row] = [("start", _since(start, origin_ns)), ("duration", format_ns(duration))]
    if klass:
        rows.append(("class", CLASS_WORDS.get(klass, klass)))
    if kind == "kernel":
        rows += [("grid", _dims(record, "grid") or "–"), ("block", _dims(record, "block") or "–"),
                 ("registers per thread", str(record.get("registers", "–"))),
                 ("shared memory (static + dynamic)", format_bytes(record.get("shared_memory")))]
    if kind == "memcpy":
        bytes_ = record.get("bytes")
        rate = bytes_ / duration * 1e9 if bytes_ and duration else None
        rows += [("kind", f"{record.get('kind') or '?'} ({record.get('src_kind') or '?'} → "
                          f"{record.get('dst_kind') or '?'})"),
                 ("bytes", "unknown" if not bytes_ else f"{format_bytes(bytes_)} ({bytes_:,} B)"),
                 ("bandwidth", "–" if rate is None else f"{format_bytes(rate)}/s")]
    flops = record.get("flops")
    if flops is not None and duration:
        rows += [("FLOPs", f"{flops:.4g}"), ("achieved", format_flops_rate(flops / duration * 1e9))]
    for column, label in (("stream", "stream"), ("device", "device"), ("thread", "thread"), ("rank", "rank"),
                          ("correlation", "correlation id"), ("category", "category"), ("depth", "depth"),
                          ("op", "launching op"), ("layer", "layer"), ("pass", "pass"), ("step", "step")):
        if record.get(column) is not None:
            rows.append((label, str(record[column])))
    return rows


def input_items(text: str) -> list[str]:
    """The items of a stored input list (`[4, 3], [[2], [2]], []` or `float, "a, b", Scalar`): split at the
    ", " outside brackets and quotes."""
    items, depth, quoted, escaped, start = [], 0, False, False, 0
    for index, char in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0 and text.startswith(", ", index):
            items.append(text[start:index])
            start = index + 2
    items.append(text[start:])
    return items


def _input(shape: str, dtype: str) -> str:
    kind = "" if dtype == EMPTY_DTYPE else dtype
    if shape == "[]":  # a scalar, a non-tensor argument (or a 0-d tensor)
        return kind or "–"
    return f"{kind}{shape}"


def inputs_text(shapes: str | None, dtypes: str | None) -> str | None:
    """An op's inputs in words: `float[64, 3, 224, 224], float[64], Scalar` (a dtype beside each shape, as
    `record_shapes` pairs them; a `[]` shape, a scalar or a non-tensor argument, shows its type alone);
    the two lists apart when they do not pair up; None when neither was recorded."""
    if shapes is None and dtypes is None:
        return None
    if not shapes and not dtypes:
        return "no inputs"
    if shapes and dtypes and not shapes.endswith(CUT_MARK) and not dtypes.endswith(CUT_MARK):
        dims, types = input_items(shapes), input_items(dtypes)
        if len(dims) == len(types):
            return ", ".join(_input(dim, kind) for dim, kind in zip(dims, types, strict=True))
    return " · ".join(f"{label} {text}" for label, text in (("shapes", shapes), ("dtypes", dtypes)) if text is not None)


def _shown(text: str) -> str:
    if len(text) <= MAX_INPUTS_SHOWN:
        return text
    return f"{text[:MAX_INPUTS_SHOWN]}… ({len(text):,} characters in all)"


def _chain(chain: list[dict[str, Any]]) -> list[Row]:
    """(op name, what it is: category, its inputs' dtypes and shapes where the source recorded them)."""
    rows = []
    for op in chain:
        parts = [str(op.get("category") or "range")]
        inputs = inputs_text(op.get("input_shapes"), op.get("input_dtypes"))
        if inputs is not None:
            parts.append(f"inputs {_shown(inputs)}")
        rows.append((str(op.get("name") or "(unnamed)"), " · ".join(parts)))
    return rows


def _links(run: Run, details: EventDetails, state: view.State) -> list[Row]:
    record, links = details.record, []
    rank = {"rank": str(details.ref.rank)} if state.rank_shown is not None else {}
    if details.ref.kind == "kernel":
        query = urlencode({"run": run.id, **rank, "sel": kernel_key(details.name)})
        links.append(("this kernel on /kernels", f"/kernels?{query}"))
    layer = record.get("layer")
    if layer:
        pass_ = record.get("pass")
        extra = {"pass": pass_} if pass_ in ("forward", "backward") else {}
        query = urlencode({"run": run.id, **rank, "layer": layer, **extra})
        links.append((f"layer {layer} on /layers", f"/layers?{query}"))
    if details.ref.kind == "kernel" and run.has("ir_kernels"):
        compiles = run.frame("ir_kernels").filter(
            pl.col("kernel").is_in([details.name, display_name(details.name)])).get_column("compile")
        if compiles.len():
            query = urlencode({"run": run.id, "compile": str(compiles[0])})
            links.append(("its IR on /compiler", f"/compiler?{query}"))
    return links


def _record(record: dict[str, Any]) -> list[Row]:
    return [(column, "null" if value is None else str(value)) for column, value in record.items()]


def details_pane(run: Run, state: view.State) -> Pane | None:
    """The pane of the state's selected event; None without one (or when the run lacks it)."""
    ref = state.event
    if ref is None:
        return None
    data = view.timeline_data(run, state.rank_shown)
    details = event_details(data, ref)
    if details is None:
        return None
    code = int(data.events.get_column("code")[details.row])
    klass = data.names.get_column("klass")[code]
    kind = ref.kind
    title = display_name(details.name, "kernel" if kind == "kernel" else "range")
    recorded = any(op.get("input_shapes") is not None or op.get("input_dtypes") is not None
                   for op in details.op_chain)
    stored = any("input_shapes" in op for op in details.op_chain)  # runs ingested before they were kept lack both
    note = "" if recorded or not details.op_chain else NOT_RECORDED if stored else NOT_STORED
    pane = Pane(ref=ref.text(), kind=KIND_WORDS[kind], title=title,
                name=details.name, facts=_facts(details, klass, data.start_ns), record=_record(details.record),
                chain=_chain(details.op_chain), chain_note=note, stack=details.stack,
                links=_links(run, details, state))
    extra: dict[str, Any] = {}
    if details.launch:
        launch = details.launch
        extra["launch"] = [("call", str(launch.get("name"))), ("thread", str(launch.get("thread"))),
                           ("start", _since(launch.get("start_ns"), data.start_ns)),
                           ("duration", format_ns((launch.get("end_ns") or 0) - (launch.get("start_ns") or 0))),
                           ("launch → start", format_ns(details.record.get("start_ns", ref.start_ns)
                                                        - (launch.get("start_ns") or 0)) if kind != "api" else "–")]
    launched = details.launched
    if launched.height:
        total = int(launched.get_column("total_ns").sum())
        count = int(launched.get_column("launches").sum())
        extra["launched"] = [(display_name(name, kind_), f"{launches:,}", format_ns(total_ns))
                             for name, kind_, launches, total_ns in launched.head(MAX_LAUNCHED_ROWS).iter_rows()]
        more = launched.height - MAX_LAUNCHED_ROWS
        extra["launched_note"] = (f"launched {count:,} kernels and copies, {format_ns(total)} of GPU time"
                                  + (f" ({more} more names not listed)" if more > 0 else ""))
    return Pane(**{**pane.__dict__, **extra})


def clicked_event(point: dict[str, Any] | None, origin_ns: int) -> EventRef | None:
    """The event a clicked bar names (its customdata's first columns, figures.timeline_marks.REF_COLUMNS:
    kind code, rank, track, sub, start after the run start); None for a pass band or anything else."""
    values = (point or {}).get("customdata")
    if not isinstance(values, list) or len(values) < len(REF_COLUMNS):
        return None
    try:
        kind_code, rank, track, sub, offset = (round(float(value)) for value in values[:len(REF_COLUMNS)])
    except (TypeError, ValueError):
        return None
    kind = KIND_OF_CODE.get(kind_code)
    if kind is None or rank < 0:
        return None
    return EventRef(kind, rank, track, sub, origin_ns + offset)
