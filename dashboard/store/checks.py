"""A run checked as it is opened: `run.json` against its schema, every parquet file's footer.

A run is written whole or not at all, but a disk can still lose its end (a truncated parquet file) or
someone can edit `run.json` by hand. Checked when the run is opened (once per process and `run.json`
change), a damaged run is marked with one line saying what is wrong, shown as such on the Runs page,
answered with that line by its pages and downloads, and left out of comparisons, history and findings:
never a "ComputeError: parquet: File out of specification" in a page, never a 500.

The footer check reads 8 bytes at each end of each file (the `PAR1` magic and the footer's length):
microseconds per file, enough to catch a file cut short, which is what a full disk or a lost copy does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PARQUET_MAGIC = b"PAR1"
# Field -> (what it must be, required?)
_RUN_JSON_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "name": ((str,), True),
    "created": ((str,), True),
    "sources": ((list,), True),
    "evidence": ((list,), True),
    "row_counts": ((dict,), True),
    "parse_seconds": ((int, float), False),
    "schema_version": ((int,), True),
    "size_bytes": ((int,), False),
    "collectors": ((list,), False),
    "warnings": ((list,), False),
    "metadata": ((dict,), False),
}


def read_run_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the run.json object, None) or (None, what is wrong with it, in words)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, "run.json is not UTF-8 text"
    except OSError as exc:
        return None, f"run.json cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        data = json.loads(text)
    except ValueError:
        return None, "run.json is not valid JSON (cut short or edited)"
    if not isinstance(data, dict):
        return None, "run.json does not hold an object"
    return data, run_json_problem(data)


def run_json_problem(data: dict[str, Any]) -> str | None:
    for key, (kinds, required) in _RUN_JSON_FIELDS.items():
        if key not in data:
            if required:
                return f"run.json has no '{key}'"
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"run.json's '{key}' is not a {' or '.join(kind.__name__ for kind in kinds)}"
    counts = data["row_counts"]
    if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for k, v in counts.items()):
        return "run.json's 'row_counts' is not a table name -> row count map"
    if not all(isinstance(item, str) for item in data["sources"] + data["evidence"]):
        return "run.json's 'sources' or 'evidence' holds something that is not a name"
    return None


def parquet_problem(path: Path) -> str | None:
    """Why a parquet file is damaged (missing, cut short, not parquet), or None."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 12:
                return f"{path.name} is cut short ({size} bytes)"
            head = handle.read(4)
            handle.seek(size - 8)
            tail = handle.read(8)
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror or type(exc).__name__})"
    if head != PARQUET_MAGIC:
        return f"{path.name} is not a parquet file"
    if tail[4:] != PARQUET_MAGIC:
        return f"{path.name} is cut short (its footer is missing)"
    footer = int.from_bytes(tail[:4], "little")
    if footer <= 0 or footer > size - 12:
        return f"{path.name} has a damaged footer"
    return None


def tables_problem(run_path: Path, row_counts: dict[str, int], summaries: list[str],
                   partition_glob: str, summary_prefix: str) -> str | None:
    """The first damaged table file of a run (single file or a cluster ingest's partitions), or None."""
    for table, rows in sorted(row_counts.items()):
        if rows <= 0:
            continue
        single = run_path / f"{table}.parquet"
        if not single.exists() and (run_path / table).is_dir():
            parts = sorted((run_path / table).glob(partition_glob))
            if not parts:
                return f"{table}/ holds no parquet part"
            for part in parts:
                problem = parquet_problem(part)
                if problem:
                    return f"{table}/{part.parent.name}/{problem}"
            continue
        problem = parquet_problem(single)
        if problem:
            return problem
    for name in summaries:
        path = run_path / f"{summary_prefix}{name}.parquet"
        if path.exists():
            problem = parquet_problem(path)
            if problem:
                return problem
    return None
