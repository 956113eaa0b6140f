"""The column types the canonical tables use, by short name."""

from __future__ import annotations

import polars as pl

STR = pl.String
I32 = pl.Int32
I64 = pl.Int64
F64 = pl.Float64
