"""rewrites.pkl (`RewriteTrace(keys, rewrites, uop_fields)`) -> the rewrite tables and each kernel's program.

- `keys[i]` is context i (VIZ's left-hand list): a TracingKey whose `ret` is a renderer for a
  kernel's codegen (its `keys` = (function name, AST, program key)), None for a schedule, a JIT
  capture, an HCQ compile; `rewrites[i]` its steps, each a TrackedGraphRewrite (the graph_rewrite
  call's location, its input sink as a trace number, the matches as (before, after, pattern
  location, seconds), name, nesting depth, how it walked); `uop_fields` the UOp table (`uop_table`).
- A kernel's program is its `View Program` step's PROGRAM UOp (0.13+): ProgramInfo (name, global
  and local size), SINK (KernelInfo: applied opts, Estimates of FLOPs and bytes), LINEAR (the
  linearized uops), SOURCE (the rendered code), BINARY (the compiled object). 0.12 pickles a
  ProgramSpec as the context's `ret` instead, without estimates (it derives them in code).

Tables: `rewrite_contexts` (one row per context, its program's columns filled for kernels),
`rewrite_steps` (one per step), `rewrite_matches` (one per match), `rewrite_uops` (the UOp table).
`ref_map` is serve's: every str / bytes key of every context -> its index, a later context winning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import IngestError
from dashboard.collectors.tinygrad.enums import RELEASES
from dashboard.collectors.tinygrad.records import Record, is_record
from dashboard.collectors.tinygrad.releases import Evidence, choose_release
from dashboard.collectors.tinygrad.uop_table import RawUOps, read_uops, uops_frame
from dashboard.collectors.tinygrad.values import Names, ansistrip, expression_text, render


@dataclass
class Program:
    """What the profile needs of one kernel's program: its name and its estimates."""

    context: int
    kernel: str | None
    estimates: Any  # an Estimates record, None when the program has none (0.12, a damaged file)
    global_size: Any
    local_size: Any


@dataclass
class Rewrites:
    tables: dict[str, pl.DataFrame]
    names: Names
    release: str | None
    programs: dict[int, Program] = field(default_factory=dict)  # context -> its program
    ref_map: dict[str | bytes, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _int(value: Any) -> int | None:
    return value if type(value) is int and -(2**63) <= value < 2**63 else None


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def _loc(value: Any) -> tuple[str | None, int | None]:
    """A `(file, line)` location; either part None when damaged."""
    if type(value) is tuple and len(value) >= 2:
        return _str(value[0]), _int(value[1])
    return None, None


def _seconds(value: Any) -> float | None:
    if type(value) in (int, float) and -1e300 < value < 1e300:  # a number a float holds (not NaN)
        return float(value)
    return None


def _traceback_text(tb: Any) -> str | None:
    """A context's creation stack, innermost first, one `file:line function` line per frame."""
    if type(tb) is not tuple:
        return None
    lines = [f"{frame[0]}:{frame[1]} {frame[2]}" for frame in tb[:64]
             if type(frame) is tuple and len(frame) >= 3 and type(frame[0]) is str]
    return "\n".join(lines) or None


def _steps_of(context: int, steps: Any, rank: int, rows: dict[str, list[Any]], matches: list[tuple[Any, ...]],
              damaged: list[int]) -> tuple[list[int], int, int]:
    """Append one context's steps and matches; returns (View Program sinks, steps kept, matches kept)."""
    programs: list[int] = []
    total = kept_steps = 0
    for step_index, step in enumerate(steps if type(steps) is list else []):
        if not is_record(step, "TrackedGraphRewrite") or type(step.get("matches")) is not list:
            damaged[0] += 1
            continue
        file, line = _loc(step.get("loc"))
        name = _str(step.get("name"))
        kept = 0
        for match_index, match in enumerate(step.get("matches")):
            if type(match) is not tuple or len(match) < 4 or _int(match[0]) is None or _int(match[1]) is None:
                damaged[0] += 1
                continue
            matches.append((rank, context, step_index, match_index, match[0], match[1], *_loc(match[2]),
                            _seconds(match[3])))
            kept += 1
        total += kept
        sink = _int(step.get("sink"))
        if name == "View Program" and sink is not None:
            programs.append(sink)
        for column, value in zip(("rank", "context", "step", "name", "depth", "matches", "file", "line", "sink",
                                  "bottom_up", "walk", "enter_calls"),
                                 (rank, context, step_index, name, _int(step.get("depth")), kept, file, line, sink,
                                  step.get("bottom_up") is True, step.get("walk") is True,
                                  step.get("enter_calls") is True), strict=True):
            rows[column].append(value)
        kept_steps += 1
    return programs, kept_steps, total


_STEP_COLUMNS = ("rank", "context", "step", "name", "depth", "matches", "file", "line", "sink", "bottom_up", "walk",
                 "enter_calls")
_MATCH_SCHEMA = {"rank": pl.Int32, "context": pl.Int64, "step": pl.Int32, "match": pl.Int64, "before": pl.Int64,
                 "after": pl.Int64, "file": pl.String, "line": pl.Int64, "seconds": pl.Float64}


def read_rewrites(trace: Record, path: Path, rank: int) -> Rewrites:
    keys, rewrites, uop_fields = trace.get("keys"), trace.get("rewrites"), trace.get("uop_fields")
    if type(keys) is not list or type(rewrites) is not list or type(uop_fields) is not dict:
        raise IngestError(path, "not a complete RewriteTrace: its keys, rewrites or UOp table is missing or damaged")
    warnings: list[str] = []
    raw = read_uops(uop_fields)
    steps: dict[str, list[Any]] = {column: [] for column in _STEP_COLUMNS}
    matches: list[tuple[Any, ...]] = []  # one tuple per match, in _MATCH_SCHEMA order
    damaged = [0]
    view_programs: dict[int, int] = {}  # context -> its (last) View Program sink
    counts: list[tuple[int, int]] = []  # (steps, matches) per context
    for index in range(len(keys)):
        programs, kept, total = _steps_of(index, rewrites[index] if index < len(rewrites) else [], rank, steps, matches,
                                    damaged)
        counts.append((kept, total))
        if programs:
            view_programs[index] = programs[-1]
    if len(rewrites) != len(keys):
        warnings.append(f"{path}: {len(keys):,} contexts but {len(rewrites):,} step lists; steps beyond the "
                        "contexts were left out")
    if raw.dropped or damaged[0]:
        warnings.append(f"{path}: {raw.dropped + damaged[0]:,} damaged UOps, steps or matches were left out")
    choice = choose_release(_evidence(keys, rewrites, view_programs, raw))
    if choice.warning:
        warnings.append(f"{path}: {choice.warning}")
    names = Names(RELEASES[choice.release] if choice.release else None)
    result = Rewrites({}, names, choice.release, warnings=warnings)
    contexts = _contexts(keys, view_programs, counts, raw, names, rank, result)
    result.tables = {
        "rewrite_contexts": contexts,
        "rewrite_steps": _with_context_names(pl.DataFrame(steps, schema_overrides={"name": pl.String}), contexts),
        "rewrite_matches": pl.DataFrame(matches, schema=_MATCH_SCHEMA, orient="row"),
        "rewrite_uops": uops_frame(raw, names, rank),
    }
    return result


def _evidence(keys: list[Any], rewrites: list[Any], view_programs: dict[int, int], raw: RawUOps) -> Evidence:
    """The structural facts the release is chosen by (`releases`)."""
    programs = []
    for sink in view_programs.values():
        fields = raw.fields_of(sink)
        if fields is not None and fields[0] is not None:
            sources = tuple(raw.op[row] if (row := raw.row_of(s)) is not None else None for s in fields[1])
            programs.append((fields[0], tuple(-1 if value is None else value for value in sources)))
    first_step = next((step for steps in rewrites if type(steps) is list for step in steps
                       if is_record(step, "TrackedGraphRewrite")), None)
    return Evidence(programs=programs, arguments=raw.arguments,
                    has_walk=first_step is not None and "walk" in first_step.fields,
                    has_program_spec=any(is_record(key, "TracingKey") and is_record(key.get("ret"), "ProgramSpec")
                                         for key in keys))


def _with_context_names(steps: pl.DataFrame, contexts: pl.DataFrame) -> pl.DataFrame:
    named = contexts.select("context", pl.col("name").alias("context_name"), "kernel")
    return steps.join(named, on="context", how="left") if steps.height else steps


def _child(raw: RawUOps, sources: tuple[int, ...], op: str, names: Names) -> tuple[Any, tuple[int, ...]] | None:
    """(arg, sources) of the first source UOp with op `op`."""
    for trace in sources:
        fields = raw.fields_of(trace)
        if fields and fields[0] is not None and names.tables.get("Ops", {}).get(fields[0]) == op:
            return fields[2], fields[1]
    return None


def _program_columns(key: Record, sink: int | None, raw: RawUOps, names: Names) -> dict[str, Any]:
    """The program of one kernel context: from its View Program PROGRAM (0.13+) or its ProgramSpec (0.12)."""
    spec = key.get("ret")
    columns: dict[str, Any] = {}
    if is_record(spec, "ProgramSpec"):
        uops = spec.get("uops")
        return _typed({"global_size": spec.get("global_size"), "local_size": spec.get("local_size"),
                       "source": spec.get("src"), "binary": spec.get("lib"),
                       "uop_count": len(uops) if type(uops) is list else None})
    fields = raw.fields_of(sink) if sink is not None else None
    if fields is None or names.tables.get("Ops", {}).get(fields[0] or -1) != "PROGRAM":
        return columns
    info, sources = fields[2], fields[1]
    columns["program_trace"] = sink
    if is_record(info, "ProgramInfo"):
        columns["global_size"], columns["local_size"] = info.get("global_size"), info.get("local_size")
    if (found := _child(raw, sources, "SINK", names)) and is_record(found[0], "KernelInfo"):
        columns["estimates"] = found[0].get("estimates")
        columns["applied_opts"] = found[0].get("applied_opts")
    if found := _child(raw, sources, "LINEAR", names):
        columns["uop_count"] = len(found[1])
    if found := _child(raw, sources, "SOURCE", names):
        columns["source"] = found[0]
    if found := _child(raw, sources, "BINARY", names):
        columns["binary"] = found[0]
    return _typed(columns)


def _typed(columns: dict[str, Any]) -> dict[str, Any]:
    """Program columns with the types their table has: a damaged file's value of another type is left out."""
    kinds = {"source": str, "binary": bytes, "uop_count": int, "program_trace": int}
    return {name: value for name, value in columns.items() if name not in kinds or type(value) is kinds[name]}


def _estimate(estimates: Any, field_name: str, names: Names) -> tuple[int | None, str | None]:
    value = estimates.get(field_name) if is_record(estimates, "Estimates") else None
    if type(value) is int:
        return (value if 0 <= value < 2**63 else None), None
    return None, (expression_text(value, names) if is_record(value, "UOp") else None)


def _contexts(keys: list[Any], view_programs: dict[int, int], counts: list[tuple[int, int]],
              raw: RawUOps, names: Names, rank: int, result: Rewrites) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for index, key in enumerate(keys):
        if not is_record(key, "TracingKey"):
            key = Record()  # a damaged context keeps its place (the steps refer to it by index)
        display = _str(key.get("display_name"))
        inner = key.get("keys") if type(key.get("keys")) is tuple else ()
        renderer = key.get("ret") if is_record(key.get("ret")) else None
        codegen = renderer is not None and (renderer.name.endswith("Renderer") or renderer.name == "ProgramSpec")
        kernel = inner[0] if codegen and inner and type(inner[0]) is str else None
        target = renderer.get("target") if renderer is not None else None
        for item in inner:
            if type(item) in (str, bytes):
                result.ref_map[item] = index
        row: dict[str, Any] = {
            "rank": rank, "context": index, "name": ansistrip(display) if display is not None else None,
            "display": display, "codegen": codegen, "kernel": kernel,
            "steps": counts[index][0], "matches": counts[index][1],
            "renderer": renderer.name if renderer is not None else None,
            "device": _str(target.get("device") if is_record(target) else renderer.get("device") if renderer else None),
            "arch": _str(target.get("arch")) if is_record(target) else None,
            "program_key": next((item.hex() for item in inner if type(item) is bytes), None),
            "tb": _traceback_text(key.get("tb")),
        }
        if codegen:
            program = _program_columns(key, view_programs.get(index), raw, names)
            estimates = program.pop("estimates", None)
            estimates = estimates if is_record(estimates, "Estimates") else None  # damaged: no estimates
            result.programs[index] = Program(index, kernel, estimates, program.get("global_size"),
                                             program.get("local_size"))
            for field_name in ("ops", "lds", "mem"):
                row[field_name], row[f"{field_name}_expr"] = _estimate(estimates, field_name, names)
            for size in ("global_size", "local_size"):
                row[size] = render(program.pop(size), names, 200) if size in program else None
            opts = program.pop("applied_opts", None)
            row["applied_opts"] = render(opts, names, 2_000) if opts else None
            row.update(program)
        rows.append(row)
    return pl.DataFrame(rows, schema_overrides=_CONTEXT_TYPES, infer_schema_length=None)


_CONTEXT_TYPES: dict[str, pl.DataType] = {
    "name": pl.String, "display": pl.String, "kernel": pl.String, "renderer": pl.String, "device": pl.String,
    "arch": pl.String, "program_key": pl.String, "tb": pl.String, "ops": pl.Int64, "lds": pl.Int64,
    "mem": pl.Int64, "ops_expr": pl.String, "lds_expr": pl.String, "mem_expr": pl.String,
    "global_size": pl.String, "local_size": pl.String, "applied_opts": pl.String, "source": pl.String,
    "binary": pl.Binary, "uop_count": pl.Int64, "program_trace": pl.Int64,
}
