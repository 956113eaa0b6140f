"""The UOp table of a rewrites.pkl (`uop_fields`: trace number -> (op, dtype, src, arg, tag[, metadata])).

Every graph of every rewrite step is made of these rows: `src` holds trace numbers, so a graph is
rebuilt by following them from a step's sink. The table is read in one pass that keeps the raw
objects (`RawUOps`), because the op names need the release table, which is chosen from this very
table (`releases.Evidence`); `uops_frame` then writes it with names and argument text.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from dashboard.collectors.tinygrad.records import ConstFloat, EnumValue, Record
from dashboard.collectors.tinygrad.values import Names, dtype_text, render


@dataclass
class RawUOps:
    """The UOp table's columns as read, plus what was wrong with rows left out."""

    trace: list[int] = field(default_factory=list)
    op: list[int | None] = field(default_factory=list)  # the Ops value; None when the op is not an Ops member
    dtype: list[Any] = field(default_factory=list)
    src: list[tuple[int, ...]] = field(default_factory=list)
    arg: list[Any] = field(default_factory=list)
    tag: list[Any] = field(default_factory=list)
    metadata: list[Any] = field(default_factory=list)
    arguments: Counter[tuple[str, int]] = field(default_factory=Counter)  # evidence for the release
    dropped: int = 0
    # trace number -> row: None when the rows are numbered first, first + 1, ... (tinygrad's numbering: the
    # row is then the offset; a dict of a million entries costs ~100 MB).
    position: dict[int, int] | None = None

    def row_of(self, trace: int) -> int | None:
        if self.position is not None:
            return self.position.get(trace)
        row = trace - self.trace[0] if self.trace else -1
        return row if 0 <= row < len(self.trace) else None

    def fields_of(self, trace: int) -> tuple[int | None, tuple[int, ...], Any] | None:
        """(op value, sources, arg) of one UOp, None when the table has no such row."""
        row = self.row_of(trace)
        return None if row is None else (self.op[row], self.src[row], self.arg[row])


def _argument_kind(arg: Any) -> str | None:
    """The kind of argument that fixes its UOp's op (`releases.ARG_OPS`), None for the rest."""
    if isinstance(arg, Record):
        return arg.name if arg.name in ("KernelInfo", "ProgramInfo", "CallInfo", "BufferizeOpts") else None
    if type(arg) is ConstFloat:
        return "ConstFloat"
    if type(arg) is bytes:
        return "bytes"
    if type(arg) is tuple and arg:
        if isinstance(arg[-1], EnumValue) and arg[-1].family == "AxisType":
            return "axis"
        if isinstance(arg[0], EnumValue) and arg[0].family == "Ops":
            return "reduce"
    return None


def _sources_are_trace_numbers(sources: list[tuple[Any, ...]]) -> bool:
    """True when every source of every row is an int in int64's range, checked in bulk (per row costs 1 s a
    million rows; a well-formed file needs no more)."""
    flat = [item for value in sources for item in value]
    return not flat or (set(map(type, flat)) == {int} and min(flat) >= 0 and max(flat) < 2**63)


def _well_formed(trace: Any, fields: Any) -> bool:
    return type(trace) is int and 0 <= trace < 2**63 and type(fields) is tuple and len(fields) >= 5 \
        and type(fields[2]) is tuple


def read_uops(uop_fields: dict[Any, Any]) -> RawUOps:
    """Every well-formed row of `uop_fields`; a row that is not `(Ops, DType, (int, ...), arg, tag)` is
    counted in `dropped` (a damaged file), never guessed at.

    The dict is emptied as it is read: each row's tuple is freed once its parts are in the columns (a
    million rows are ~170 MB of tuples and dict entries a columnar copy would double)."""
    total = len(uop_fields)
    checked = _sources_are_trace_numbers([fields[2] for trace, fields in uop_fields.items()
                                          if _well_formed(trace, fields)])
    raw = RawUOps()
    arguments = raw.arguments
    while uop_fields:
        trace, fields = uop_fields.popitem()  # the last row first: the columns are reversed at the end
        if not _well_formed(trace, fields) or (not checked and not all(type(s) is int and 0 <= s < 2**63
                                                                       for s in fields[2])):
            continue
        op, dtype, src, arg, tag = fields[:5]
        value = op.value if isinstance(op, EnumValue) and op.family == "Ops" and type(op.value) is int \
            and 0 <= op.value < 2**31 else None
        raw.trace.append(trace)
        raw.op.append(value)
        raw.dtype.append(dtype)
        raw.src.append(src)
        raw.arg.append(arg)
        raw.tag.append(tag)
        raw.metadata.append(fields[5] if len(fields) > 5 else None)
        del fields
        if arg is not None and value is not None and (kind := _argument_kind(arg)) is not None:
            arguments[(kind, value)] += 1
    for column in (raw.trace, raw.op, raw.dtype, raw.src, raw.arg, raw.tag, raw.metadata):
        column.reverse()
    raw.dropped = total - len(raw.trace)
    trace = raw.trace
    if trace and not (trace[-1] - trace[0] == len(trace) - 1
                      and all(b - a == 1 for a, b in zip(trace, itertools.islice(trace, 1, None), strict=False))):
        raw.position = {trace: row for row, trace in enumerate(raw.trace)}
    return raw


def _texts(values: list[Any], render_one: Any) -> list[str | None]:
    """Each value as text, every distinct object rendered once (args and dtypes are shared by many UOps)."""
    cache: dict[int, str | None] = {}
    out: list[str | None] = []
    for value in values:
        kind = type(value)
        if value is None:
            out.append(None)
        elif kind is int or kind is bool or kind is float or kind is ConstFloat:
            out.append(repr(float(value)) if kind is ConstFloat else repr(value))
        else:
            key = id(value)
            if key not in cache:
                cache[key] = render_one(value)
            out.append(cache[key])
    return out


def _int_lists(values: list[tuple[int, ...]]) -> pl.Series:
    """A List(Int64) column from tuples of ints, built through Arrow offsets (polars' per-row conversion
    costs ~5 us a row, 0.7 s of a 140 k-UOp table) filled from numpy arrays, so no Python list of every
    source number (and no int object per offset) is made on the way."""
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(itertools.chain.from_iterable(values), dtype=np.int64, count=int(offsets[-1]))
    return pl.Series("src", pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)))


def op_name(column: str, names: Names) -> pl.Expr:
    """Ops values -> names through the release table; `Ops(n)` where the table has none."""
    table = names.tables.get("Ops", {})
    named = pl.col(column).replace_strict(list(table), list(table.values()), default=None, return_dtype=pl.String)
    return pl.when(named.is_null() & pl.col(column).is_not_null()).then(pl.format("Ops({})", pl.col(column))) \
        .otherwise(named)


def uops_frame(raw: RawUOps, names: Names, rank: int) -> pl.DataFrame:
    """The `rewrite_uops` table: one row per trace number. Consumes `raw`: each column's Python objects are
    dropped once the column is built, so a million UOps' texts and values are never all alive at once."""
    def arg_text(value: Any) -> str:
        # SOURCE code and other strings are kept whole; records and containers within the argument budget.
        # A BINARY's bytes as their size and a digest: two programs of one size are two UOps, which the
        # graph replay (analysis/uop_graph.py) must tell apart as tinygrad does.
        if type(value) is bytes:
            return f"<{len(value)} bytes {hashlib.blake2b(value, digest_size=8).hexdigest()}>"
        return render(value, names, budget=None if type(value) is str else 2_000)

    columns: dict[str, pl.Series] = {"trace": pl.Series("trace", raw.trace, dtype=pl.Int64),
                                     "op_value": pl.Series("op_value", raw.op, dtype=pl.Int64)}
    for name, values, render_one in (("dtype", raw.dtype, dtype_text), ("arg", raw.arg, arg_text),
                                     ("tag", raw.tag, lambda value: render(value, names, 200)),
                                     ("metadata", raw.metadata, lambda value: render(value, names, 400))):
        columns[name] = pl.Series(name, _texts(values, render_one), dtype=pl.String)
        values.clear()
    columns["src"] = _int_lists(raw.src)
    raw.src.clear()
    frame = pl.DataFrame(columns).select("trace", "op_value", "dtype", "arg", "src", "tag", "metadata")
    return frame.with_columns(pl.lit(rank, pl.Int32).alias("rank"), op_name("op_value", names).alias("op")).drop(
        "op_value")
