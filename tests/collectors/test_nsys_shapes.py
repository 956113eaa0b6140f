"""Input shapes of NVTX ranges written by PyTorch's emit_nvtx(record_shapes=True), in a generated export."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from dashboard import schema
from dashboard.collectors.base import no_progress
from dashboard.collectors.inputs import CUT_MARK, MAX_INPUT_CHARS, nvtx_input_shapes
from dashboard.collectors.nsys import collector as nsys
from dashboard.demo.nsys_export import ExportOptions, write_export

# As torch/csrc/profiler/util.cpp's getNvtxStr writes them.
LINEAR = "aten::linear, seq = 4, op_id = 17, sizes = [[8, 64], [64, 64], [64]], input_op_ids = [(16,0), (3,0)]"
CAT = "aten::cat, seq = 5, sizes = [[2, 3], [2, 3], []]"
HUGE = "aten::_foreach_add_, op_id = 30, sizes = [" + ", ".join(["[1024, 1024]"] * 1_000) + "]"


def test_emit_nvtx_sizes_become_input_shapes_and_other_ranges_stay_null(tmp_path: Path) -> None:
    path = tmp_path / "emit_nvtx.sqlite"
    write_export(path, ExportOptions(steps=1, layers=2))
    with sqlite3.connect(path) as conn:
        for old, new in (("layer0", LINEAR), ("layer1", CAT), ("optimizer", HUGE)):
            conn.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (new, old))
    result = nsys.COLLECTOR.collect([path], no_progress)
    ranges = schema.conform("ranges", result.tables["ranges"])
    shapes = dict(ranges.select("name", "input_shapes").iter_rows())
    assert shapes[LINEAR] == "[8, 64], [64, 64], [64]"
    assert shapes[CAT] == "[2, 3], [2, 3], []"
    assert shapes[HUGE] == ", ".join(["[1024, 1024]"] * 1_000)[:MAX_INPUT_CHARS - 1] + CUT_MARK
    assert shapes["forward"] is None and shapes["layer0 backward"] is None
    assert ranges.get_column("input_dtypes").null_count() == ranges.height  # emit_nvtx records no dtypes
    full = len(", ".join(["[1024, 1024]"] * 1_000))
    assert (f"{path}: 1 NVTX ranges' `sizes = [...]` longer than {MAX_INPUT_CHARS:,} characters as text, cut "
            f"there and ended with {CUT_MARK} (the longest: {full:,} characters)") in result.warnings


def test_range_texts_without_sizes_cost_one_scan() -> None:
    names = pl.Series(["step 0", "forward", "aten::mm, seq = 2"])
    shapes, cut, longest = nvtx_input_shapes(names)
    assert shapes.dtype == pl.Categorical and shapes.null_count() == 3 and (cut, longest) == (0, 0)
    shapes, _, _ = nvtx_input_shapes(pl.Series(["aten::ones, op_id = 2, sizes = []", "x, sizes = [[1]] tail"]))
    assert shapes.to_list() == ["", None]  # no inputs; a text that does not end as emit_nvtx's does
