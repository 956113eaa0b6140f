"""A canonical table as CSV, streamed in slices so a million-row table never sits in memory twice.

Pure: a polars frame in, CSV bytes out. List columns (op_meta shapes, planner
channel lists) have no CSV form, so their items are joined with ';'.
"""

from __future__ import annotations

from collections.abc import Iterator

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
