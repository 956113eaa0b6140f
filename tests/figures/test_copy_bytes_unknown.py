"""Copies without a byte count (AMD traces: bytes null or 0) read "bytes unknown", not 0 B/s (issue 15 item 4)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis.timeline import prepare_timeline, timeline_view
from dashboard.analysis.timeline_series import copy_series
from dashboard.figures.timeline import timeline_figure
from dashboard.figures.timeline_marks import COPY_COLOURS, copy_colour


def test_copy_series_marks_where_copies_without_bytes_ran() -> None:
    copies = pl.DataFrame({"kind": ["HtoD", "HtoD", "DtoH"], "start_ns": [0, 120, 0], "end_ns": [100, 170, 50],
                           "bytes": [1000, None, 0]})
    series = copy_series(copies, np.array([0, 100, 200]))
    htod = series.filter(pl.col("series") == "memcpy HtoD")
    assert htod.get_column("bandwidth").to_list() == pytest.approx([1e10, 0.0])  # only the known bytes
    assert htod.get_column("unknown_ns").to_list() == [0.0, 50.0]  # the null-byte copy ran 50 ns in bucket 2
    assert htod.get_column("unknown_copies").to_list() == [1, 1]
    dtoh = series.filter(pl.col("series") == "memcpy DtoH")
    assert dtoh.get_column("unknown_ns").to_list() == [50.0, 0.0]
    assert dtoh.get_column("in_flight").to_list() == [0.0, 0.0]


def _amd_like_run() -> dict[str, pl.DataFrame]:
    kernels = schema.conform("kernels", pl.DataFrame({
        "rank": [0, 0], "device": [0, 0], "stream": [1, 1], "name": ["k<float>", "k<float>"],
        "start_ns": [0, 5_000], "end_ns": [1_000, 6_000]}))
    memcpy = schema.conform("memcpy", pl.DataFrame({
        "rank": [0, 0, 0], "device": [0, 0, 0], "stream": [2, 2, 2], "kind": ["HtoD", "HtoD", "DtoH"],
        "bytes": [None, 0, 4096], "start_ns": [100, 2_000, 3_000], "end_ns": [900, 2_500, 3_400]}))
    return {"kernels": kernels, "memcpy": memcpy, "ranges": schema.empty("ranges"), "stack": schema.empty("stack")}


def test_timeline_says_bytes_unknown_instead_of_a_flat_zero() -> None:
    figure = timeline_figure(timeline_view(prepare_timeline(**_amd_like_run())), "t")
    bandwidth = {t.name: t for t in figure.data if t.type == "scatter" and t.yaxis == "y2"}
    # HtoD has no byte count at all: no bandwidth line, a dotted "bytes unknown" mark in the legend.
    assert "memcpy HtoD" not in bandwidth
    unknown = bandwidth["memcpy HtoD: bytes unknown"]
    assert unknown.showlegend and unknown.line.dash == "dot"
    assert np.nanmax(np.asarray(unknown.y, dtype=float)) == 0.0  # along the floor, only where such copies ran
    assert np.isnan(np.asarray(unknown.y, dtype=float)).any()
    assert "memcpy DtoH" in bandwidth and "memcpy DtoH: bytes unknown" not in bandwidth
    notes = [a.text for a in figure.layout.annotations if a.name == "bytes-unknown"]
    assert notes == ["bytes unknown (no byte count in the trace, e.g. AMD): memcpy HtoD (2) copies · dotted, "
                     "not 0 B/s"]


def test_copy_kinds_have_distinct_colours() -> None:
    kinds = [*COPY_COLOURS, "memcpy Unknown1", "memcpy Device->Host"]
    colours = [copy_colour(kind) for kind in kinds]
    assert len(set(colours[:len(COPY_COLOURS)])) == len(COPY_COLOURS)
    assert all(colour not in COPY_COLOURS.values() for colour in colours[len(COPY_COLOURS):])
