"""The aligned memory chart stays small for long runs: each line is thinned, its peak kept."""

from __future__ import annotations

import polars as pl

from dashboard.analysis.compare_memory import align_ops, aligned_curves, first_divergence, op_sequence, peak_comparison
from dashboard.analysis.units import bytes_unit_for
from dashboard.figures.compare_memory import MAX_POINTS, compare_memory_figure
from tests.analysis.test_compare_sections import op_memory


def test_long_runs_are_thinned_and_keep_their_peaks() -> None:
    ops = [("Op", (i * 37) % 1000) for i in range(4 * MAX_POINTS)]
    ops[5000] = ("Op", 999_999)
    a, b = op_memory(ops), op_memory(ops[: 3 * MAX_POINTS])
    curves = aligned_curves(a, b, align_ops(op_sequence(a), op_sequence(b)))
    figure = compare_memory_figure(curves, peak_comparison(a, b), first_divergence(curves), "a", "b")
    lines = [trace for trace in figure.data if trace.mode == "lines"]
    assert lines and all(len(trace.x) <= MAX_POINTS + 2 for trace in lines)
    dram = [trace for trace in lines if trace.yaxis in (None, "y")]
    divisor, _unit = bytes_unit_for(999_999)
    assert all(max(trace.y) == 999_999 / divisor for trace in dram)  # the peak survives the thinning
    assert pl.Series(dram[0].x).is_sorted()
