"""/compiler's launches and autotuning section (tritonparse traces), from `views.compiler_launches`."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
import polars as pl
from dash import html

from dashboard.store import Run
from dashboard.views.compiler_launches import MAX_ROWS, launches


def _table(frame: pl.DataFrame, columns: dict[str, str], marked: str | None = None) -> Any:
    rows = [html.Tr([html.Td("" if row[c] is None else (f"{row[c]:,}" if isinstance(row[c], int) and not
                                                        isinstance(row[c], bool) else str(row[c])))
                     for c in columns], className="table-success" if marked and row[marked] else None)
            for row in frame.head(MAX_ROWS).iter_rows(named=True)]
    more = [html.Tr(html.Td(f"… and {frame.height - MAX_ROWS:,} more", colSpan=len(columns)))] \
        if frame.height > MAX_ROWS else []
    return dbc.Table([html.Thead(html.Tr([html.Th(label) for label in columns.values()])), html.Tbody(rows + more)],
                     size="sm", className="small mb-2")


def launches_section(run: Run, compile_index: int | None) -> list[Any]:
    """The section's children: nothing for a run without tritonparse launches or autotuning."""
    found = launches(run, compile_index)
    if found is None:
        return []
    parts: list[Any] = [html.H6("Launches (tritonparse trace)", className="mt-3")]
    if found.shapes.height:
        timing = f" ({found.compile_benchmark:,} of them the autotuner's timing runs)" if found.compile_benchmark \
            else ""
        parts += [html.Small(f"This compile ran {found.compile_launches:,} times{timing}; by grid and arguments:",
                             className="text-muted d-block"),
                  _table(found.shapes, {"grid": "grid (x, y, z)", "args": "arguments", "launches": "launches",
                                        "benchmark": "of which autotuning", "first_line": "first launch (trace line)"})]
    else:
        parts.append(html.Small("This compile has no launch in the trace.", className="text-muted d-block mb-2"))
    parts += [html.Small("Launches per kernel in the run:", className="text-muted d-block"),
              _table(found.per_kernel, {"kernel": "kernel", "compiles": "compiles", "launches": "launches"})]
    if found.orphans:
        parts.append(html.Small(f"{found.orphans:,} launches ran compiles that are not in the traces (compiled "
                                "before tracing started).", className="text-muted d-block mb-2"))
    if found.autotune.height:
        parts += [html.H6("Autotuning", className="mt-2"),
                  html.Small("Configs the autotuner benchmarked for this kernel; the chosen one is highlighted.",
                             className="text-muted d-block"),
                  _table(found.autotune.with_columns(pl.when(pl.col("best")).then(pl.lit("chosen")).otherwise(
                      pl.lit("")).alias("verdict")),
                      {"key": "key", "config": "config", "timing_ms": "time (ms)", "verdict": "verdict"}, "best")]
    return parts
