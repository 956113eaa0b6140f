"""tritonparse records -> the compiler tables (`ir_steps`, `ir_kernels`, `ir_text`) and `ir_launches`, `ir_autotune`.

A `compilation` record is one compile, as a Triton cache folder is: each stage
file of `payload.file_content` becomes an `ir_steps` row of kind "file" in
pipeline order (the same rows `triton_ir.folders` makes of a cache folder, so
/compiler and compare read them alike), the metadata its `ir_kernels` row, and
the kernel's Python source (`payload.python_source`) an `ir_text` body of format
"python" padded so that its line numbers are the file's. A `launch` names its
compile by `compilation_metadata.hash`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dashboard.collectors.triton_ir.bodies import DIALECTS, TextStore, python_file_of
from dashboard.collectors.triton_ir.folders import _FORMAT, BINARY_STAGES, STAGE_ORDER, stage_of
from dashboard.collectors.tritonparse.records import Autotune, AutotuneAnalysis, Compilation, Launch

MAX_PYTHON_START_LINE = 1_000_000  # padding beyond this is a damaged field, not a source file


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def target_of(metadata: dict[str, Any]) -> str | None:
    target = metadata.get("target")
    if isinstance(target, dict) and isinstance(target.get("backend"), str) and target.get("arch") is not None:
        return f"{target['backend']}:{target['arch']}"
    return None


def compile_rows(record: Compilation, compile_index: int, texts: TextStore, source: str,
                 line: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(ir_steps rows, ir_kernels row) of one compilation record."""
    payload = record.payload
    metadata = payload.metadata if isinstance(payload.metadata, dict) else {}
    staged: list[tuple[int, str, str]] = []
    for name, body in (payload.file_content or {}).items():
        if not isinstance(name, str) or not isinstance(body, str) or name.endswith(".json"):
            continue
        stage = stage_of(Path(name), body[:4096].encode("utf-8", "replace"))
        if stage is None or stage in BINARY_STAGES or stage not in _FORMAT:
            continue
        staged.append((STAGE_ORDER.index(stage), stage, body))
    staged.sort(key=lambda item: item[0])
    kernel = _text(metadata.get("name"))
    target = target_of(metadata)
    attrs: dict[str, int] = {}
    python_file = None
    rows: list[dict[str, Any]] = []
    for step, (_, stage, body) in enumerate(staged):
        data = body.encode("utf-8", "replace")
        fmt = _FORMAT[stage]
        facts = texts.add(data, {"llir": "llvm"}.get(fmt, fmt), fmt)
        python_file = python_file or (python_file_of(data) if fmt == "mlir" else None)
        kernel = kernel or facts.kernel
        target = target or facts.target
        for key, value in facts.attrs.items():
            attrs.setdefault(key, value)
        row: dict[str, Any] = {
            "compile": compile_index, "stage": stage, "step": step, "pass_name": None, "pass_arg": None,
            "anchor": "module", "symbol": None, "kind": "file", "changed": True, "source": source,
            "source_line": line, "text_id": facts.text_id, "lines": facts.lines, "ops": facts.ops,
            **{f"ops_{d}": facts.dialect_ops.get(d, 0) for d in DIALECTS},
            "ops_other": facts.dialect_ops.get("other", 0),
        }
        rows.append(row)
    for row in rows:
        row["kernel"], row["target"] = kernel, target
    python = payload.python_source
    python_text_id = None
    if python is not None and isinstance(python.code, str):
        python_file = _text(python.file_path) or python_file
        start = _int(python.start_line)
        if start is None or not 1 <= start <= MAX_PYTHON_START_LINE:
            start = 1
        padded = "\n" * (start - 1) + python.code
        python_text_id = texts.add(padded.encode("utf-8", "replace"), "python", "python").text_id
    kernel_row = {
        "compile": compile_index, "kernel": kernel, "target": target,
        "num_warps": _int(metadata.get("num_warps")) or attrs.get("num_warps"),
        "num_ctas": _int(metadata.get("num_ctas")) or attrs.get("num_ctas"),
        "num_stages": _int(metadata.get("num_stages")),
        "shared": _int(metadata.get("shared")) if _int(metadata.get("shared")) is not None else attrs.get("shared"),
        "tmem_size": _int(metadata.get("tmem_size")),
        "triton_version": _text(metadata.get("triton_version")), "hash": _text(metadata.get("hash")),
        "source": source, "source_line": line, "steps": len(rows), "python_file": python_file,
        "python_text_id": python_text_id,
    }
    return rows, kernel_row


def _arg_text(name: str, info: Any) -> str:
    if not isinstance(info, dict):
        return f"{name}: ?"
    kind = info.get("type")
    if kind == "tensor":
        dtype = str(info.get("dtype", "?")).removeprefix("torch.")
        shape = info.get("shape")
        dims = "x".join(str(d) for d in shape) if isinstance(shape, list) else "?"
        return f"{name}: {dtype}[{dims}] {info.get('device', '')}".rstrip()
    if "value" in info:
        return f"{name}: {kind} = {info['value']}"
    return f"{name}: {kind}"


def args_text(extracted: Any) -> str | None:
    """`x_ptr: float32[4096] cpu, n: int = 4096` from tritonparse's `extracted_args`."""
    if not isinstance(extracted, dict):
        return None
    return ", ".join(_arg_text(str(name), info) for name, info in extracted.items() if not str(name).startswith("_"))


def launch_row(record: Launch, index: int, compiles: dict[str, int], source: str, line: int) -> dict[str, Any]:
    meta = record.compilation_metadata
    digest = _text(meta.hash) if meta is not None else None
    grid = record.grid if isinstance(record.grid, list) else []
    # Triton pads a grid of fewer dimensions with 1s.
    dims = [_int(value) for value in grid[:3]] + ([1] if grid else [None]) * (3 - len(grid[:3]))
    return {
        "launch": index, "compile": compiles.get(digest) if digest else None,
        "kernel": _text(record.name) or (_text(meta.name) if meta is not None else None), "hash": digest,
        "grid_x": dims[0], "grid_y": dims[1], "grid_z": dims[2], "stream": _int(record.stream),
        "args": args_text(record.extracted_args), "benchmark": False, "source": source, "source_line": line,
    }


def _timing(values: Any) -> float | None:
    first = values[0] if isinstance(values, list) and values else values
    if isinstance(first, int | float) and not isinstance(first, bool) and math.isfinite(first):
        return float(first)
    return None


def autotune_rows(record: Autotune | AutotuneAnalysis, session: int, source: str,
                  line: int) -> list[dict[str, Any]]:
    """One row per benchmarked config (the winner alone when the verdict came from the cache)."""
    if isinstance(record, AutotuneAnalysis):
        result = record.autotune_result
        if result is None:
            return _session_rows(record, session, source, line)
        kernel, key = _text(record.name), _text(record.session_id)
        best, timings, duration, cache_hit = (result.best_config, result.configs_timings, result.benchmark_duration,
                                              result.cache_hit)
    else:
        kernel, key = _text(record.kernel_name), _text(record.autotune_key)
        best, timings, duration, cache_hit = record.best_config, record.configs_timings, record.duration, \
            record.cache_hit
    best_text = best if isinstance(best, str) else (json.dumps(best) if best is not None else None)
    configs = timings if isinstance(timings, dict) else {}
    if best_text is not None and best_text not in configs:
        configs = {**configs, best_text: None}
    duration_s = float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) \
        and math.isfinite(duration) else None
    return [{"session": session, "kernel": kernel, "key": key, "config": str(config), "timing_ms": _timing(values),
             "best": str(config) == best_text, "cache_hit": cache_hit if isinstance(cache_hit, bool) else None,
             "duration_s": duration_s, "source": source, "source_line": line} for config, values in configs.items()]


def _session_rows(record: AutotuneAnalysis, session: int, source: str, line: int) -> list[dict[str, Any]]:
    """A session tritonparse's parser found without the autotuner's own verdict (Triton before the autotune
    listener): its compiles are the configs, the winner the compile its winning launches ran."""
    analysis = record.compilation_analysis if isinstance(record.compilation_analysis, dict) else {}
    configs = analysis.get("configs") if isinstance(analysis.get("configs"), list) else []
    winner = _text(record.winner_compilation_hash)
    rows = []
    for config in configs:
        if not isinstance(config, dict):
            continue
        params = config.get("compilation_config_params")
        digest = _text(config.get("compilation_hash"))
        text = ", ".join(f"{k}: {v}" for k, v in params.items()) if isinstance(params, dict) else "?"
        rows.append({"session": session, "kernel": _text(record.name), "key": _text(record.session_id),
                     "config": f"{text} (compile {digest[:8] if digest else '?'})", "timing_ms": None,
                     "best": digest is not None and digest == winner,
                     "cache_hit": record.cache_usage if isinstance(record.cache_usage, bool) else None,
                     "duration_s": None, "source": source, "source_line": line})
    return rows


def benchmark_launches(record: AutotuneAnalysis) -> set[int]:
    """The occurrence ids of a session's benchmark launches (the autotuner timing each config)."""
    ids = record.launch_occurrence_ids if isinstance(record.launch_occurrence_ids, dict) else {}
    found = ids.get("benchmark")
    return {i for i in found if _int(i) is not None} if isinstance(found, list) else set()
