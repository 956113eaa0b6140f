"""/compare's CUDA allocator memory section: per device, peak allocated and reserved of A and B, B − A."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from dashboard.analysis.compare import Side
from dashboard.analysis.finding import view_href
from dashboard.analysis.units import format_bytes
from dashboard.layouts.page import chart, small_table
from dashboard.store import Run
from dashboard.views.compare_sections import cuda_memory_figure, cuda_peaks

DEFINITION = ("Peak allocated: the highest bytes in live tensors; culprit: the op (snapshots: the Python frame) "
              "whose live allocations hold the most bytes at that peak. Peak reserved: the highest bytes the "
              "caching allocator held in segments. B − A in bytes and in % of A.")


def _delta(delta: int | None, change: float | None) -> str:
    if delta is None:
        return "–"
    text = ("+" if delta >= 0 else "−") + format_bytes(abs(delta))
    return text + (f" ({change:+.1%})" if change is not None else "")


def _culprit(row: dict[str, Any], suffix: str, run_id: str, rank: int) -> Any:
    """The side's culprit, linked to /memory at its peak (the live allocations there)."""
    if row[f"peak_allocated_{suffix}"] is None:
        return "–"
    text = (f"{row[f'culprit_{suffix}']} ({format_bytes(row[f'culprit_bytes_{suffix}'])})"
            if row[f"culprit_{suffix}"] else "at the peak")
    href = view_href("/memory", run_id, rank=rank, device=row[f"device_{suffix}"],
                     at=str(row[f"peak_time_ns_{suffix}"]))
    return dcc.Link(text, href=href, className=f"compare-cuda-culprit-{suffix}")


def cuda_memory_section(run_a: Run, run_b: Run, a: Side, b: Side) -> html.Div:
    deltas, rank_a, rank_b = cuda_peaks(run_a, run_b, a.rank, b.rank)
    rows = [[row["device"], format_bytes(row["peak_allocated_a"]), format_bytes(row["peak_allocated_b"]),
             _delta(row["allocated_delta"], row["allocated_change"]), format_bytes(row["peak_reserved_a"]),
             format_bytes(row["peak_reserved_b"]), _delta(row["reserved_delta"], row["reserved_change"]),
             _culprit(row, "a", run_a.id, rank_a), _culprit(row, "b", run_b.id, rank_b)]
            for row in deltas.to_dicts()]
    header = ["device", "peak allocated A", "B", "B − A", "peak reserved A", "B", "B − A", "culprit A (its bytes)",
              "culprit B (its bytes)"]
    table = small_table(header, rows, "compare-cuda-memory-peaks")
    return html.Div([
        html.H5("Device memory (allocator events)", className="mb-2"),
        html.Div(f"Rank {rank_a} of A against rank {rank_b} of B; devices matched "
                 + ("by index (no device name in common: one GPU per rank)." if any(
                     "↔" in device for device in deltas.get_column("device").to_list()) else "by name."),
                 className="small mb-1"),
        html.Div(DEFINITION, className="small text-muted mb-2"),
        chart("compare-cuda-memory", cuda_memory_figure(run_a, run_b, a, b), "compare-cuda-memory"),
        table,
    ], id="compare-cuda-memory-section", className="chart-card")
