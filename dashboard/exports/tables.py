"""Tables as CSV: a canonical table streamed in slices (a million-row table never sits in memory twice), and
a page's table (`grid_csv`) as the page shows it, with raw numbers.

Pure: a polars frame (or a grid's rows) in, CSV bytes out; plain UTF-8, no byte-order mark. List columns
(op_meta shapes, planner channel lists) have no CSV form, so their items are joined with ';'.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import polars as pl

LIST_SEPARATOR = ";"
CHUNK_ROWS = 100_000


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every list column turned into 'a;b;c' text (an empty list becomes '')
    and every binary column (ir_text's compressed bodies) into base64 text."""
    lists = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.List)]
    binary = [name for name, dtype in frame.schema.items() if dtype == pl.Binary]
    if not lists and not binary:
        return frame
    return frame.with_columns(
        *(pl.col(name).cast(pl.List(pl.String)).list.join(LIST_SEPARATOR) for name in lists),
        *(pl.col(name).bin.encode("base64") for name in binary),
    )


def encode_csv(frame: pl.DataFrame, chunk_rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The table as CSV with one header line, in chunks."""
    ready = csv_ready(frame)
    if ready.height == 0:
        yield ready.write_csv().encode("utf-8")
        return
    for offset in range(0, ready.height, chunk_rows):
        text = ready.slice(offset, chunk_rows).write_csv(include_header=offset == 0)
        yield text.encode("utf-8")


def _cell(value: object) -> object:
    """A grid cell as CSV wants it: raw numbers as they are, lists joined with ';', nothing for a missing value."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return LIST_SEPARATOR.join("" if item is None else str(item) for item in value)
    if isinstance(value, dict):
        return ""
    return value


def grid_csv(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> bytes:
    """A table as the page shows it, as CSV: plain UTF-8 (no byte-order mark), one header line of the grid's
    headers (they carry the units: "total time (ms)"), then the raw values of `columns` ((field, header)
    pairs) in `rows`: numbers without thousands separators or unit suffixes, so a spreadsheet reads them
    as numbers."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([header for _field, header in columns])
    for row in rows:
        writer.writerow([_cell(row.get(field)) for field, _header in columns])
    return out.getvalue().encode("utf-8")
