"""A page table's CSV: plain UTF-8 without a byte-order mark, raw numbers, the grid's headers (with units)."""

from __future__ import annotations

import io

import polars as pl

from dashboard.exports.tables import grid_csv
from dashboard.layouts.grid_csv import csv_columns_of
from dashboard.views.kernel_table import csv_columns

COLUMNS = [{"field": "label", "headerName": "Kernel"}, {"field": "count", "headerName": "launches"},
           {"field": "total", "headerName": "total time (ms)"}, {"field": "channels", "headerName": "channels"},
           {"headerName": "launch", "children": [{"field": "grid", "headerName": "grid"}]},
           {"field": "group", "headerName": "full name"}]
ROWS = [{"label": "gemm", "count": 1605, "total": 1234.5678, "channels": [0, 3], "grid": "128×4×1",
         "group": "void ns::gemm<float, 128>(float const*, float*)"},
        {"label": "add", "count": 2, "total": -0.25, "channels": [], "grid": None, "group": "add_kernel"}]


def test_raw_numbers_under_the_grids_headers_without_a_byte_order_mark() -> None:
    flat = [column for column in COLUMNS if "children" not in column]
    keys = [*csv_columns(flat)[:3], "grid", "group"]  # the kernel tables' columns: all but the chart label
    data = grid_csv(ROWS, csv_columns_of(COLUMNS, keys))
    assert not data.startswith(b"\xef\xbb\xbf")
    text = data.decode("utf-8")
    assert text.splitlines()[0] == "launches,total time (ms),channels,grid,full name"  # no chart label
    assert "1,605" not in text and "−" not in text and "–" not in text
    table = pl.read_csv(io.BytesIO(data))
    assert table.get_column("launches").to_list() == [1605, 2]
    assert table.get_column("total time (ms)").to_list() == [1234.5678, -0.25]
    assert table.get_column("channels").to_list() == ["0;3", None]
    assert table.get_column("full name").to_list()[0] == "void ns::gemm<float, 128>(float const*, float*)"


def test_every_column_when_the_grid_names_none() -> None:
    fields = [field for field, _header in csv_columns_of(COLUMNS, None)]
    assert fields == ["label", "count", "total", "channels", "grid", "group"]
