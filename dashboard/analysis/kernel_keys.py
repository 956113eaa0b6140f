"""Kernel keys: the short stable name of a kernel that selections and links carry.

Kernel names contain commas, angle brackets and spaces, so a URL carries a
short stable key per kernel name instead (`sel=3fa2c1d0.9b1e44aa`); findings
build their links with `format_keys`, pages read them with `views.params.keys`.
"""

from __future__ import annotations

import hashlib

import polars as pl

SEPARATOR = "."


def kernel_key(name: str) -> str:
    """An 8-hex-digit key for a kernel name, the same in every process."""
    return hashlib.blake2b(name.encode("utf-8"), digest_size=4).hexdigest()


def with_kernel_keys(frame: pl.DataFrame, column: str = "name", key_column: str = "key") -> pl.DataFrame:
    """Add `key_column` = kernel_key(column), hashing each distinct name once."""
    names = frame.get_column(column).unique().drop_nulls().to_list()
    keys = pl.DataFrame({column: names, key_column: [kernel_key(n) for n in names]},
                        schema={column: pl.String, key_column: pl.String})
    return frame.join(keys, on=column, how="left")


def format_keys(keys: list[str]) -> str:
    return SEPARATOR.join(keys)
