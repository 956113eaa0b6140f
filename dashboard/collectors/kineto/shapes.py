"""Input shapes and dtypes of ranges, as the `ranges` table stores them.

`record_shapes=True` gives every op `Input Dims` (a list with one entry per input: a tensor's sizes, a
list of sizes for a tensor list, `[]` for a scalar or a non-tensor argument) and `Input type` (a
dtype name per input, `Scalar`, `TensorList`, or "" for an argument without one). They are stored as
text, the list's items without its outer brackets, as the profiler prints them:

    Input Dims  [[64, 3, 224, 224], [64], []]      ->  input_shapes  `[64, 3, 224, 224], [64], []`
    Input Dims  [[[4, 3], [4, 3]], []]             ->  input_shapes  `[[4, 3], [4, 3]], []`
    Input type  ["float", "c10::Half", "Scalar", ""]  ->  input_dtypes  `float, c10::Half, Scalar, ""`

A dtype name is written bare unless it is empty or holds a comma, a quote or a backslash (then JSON-quoted),
so the items split back at ", ". An op without inputs stores "" and one without the argument null.
Text rather than a List column: a tensor list nests one level deeper than a tensor, which no single
List type holds; categorical text because a shape list repeats step after step (a few thousand distinct
over millions of ops): 4 bytes a row in memory, stored once in the parquet file's dictionary.

Work is per distinct value (a training trace has a few thousand over millions of ops): values in the
form the profiler writes are rewritten by polars expressions, any other (other whitespace, escapes,
floats) is parsed and printed again in Python. Values longer than MAX_INPUT_CHARS characters are cut
there (`collectors.inputs`, the rule of every source) and counted in a warning; a value that is not a
list is left empty and counted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import polars as pl

from dashboard.collectors.inputs import CUT_MARK, MAX_INPUT_CHARS, cut

# The profiler's own form: JSON with ", " between items. Anything else takes the Python path.
_PROFILER_DIMS = r"^\[[\[\]0-9, -]*\]$"
_PROFILER_TYPES = r'^\[("[^"\\\x00-\x1f]*"(, "[^"\\\x00-\x1f]*")*)?\]$'
_QUOTED_PLAIN_TYPE = r'"([^",\\]+)"'
_NOT_PLAIN = ('"', ",", "\\")  # a dtype name holding one of these is written JSON-quoted
_ABSENT = ("", "null")
# (frame column holding the raw JSON, stored column, what the warnings call it)
COLUMNS = (("input_dims", "input_shapes", "`Input Dims`"), ("input_types", "input_dtypes", "`Input type`"))


@dataclass
class InputTexts:
    """The stored columns, one row per range, and what was cut or refused."""

    columns: list[pl.Series]
    warnings: list[str] = field(default_factory=list)


def _item_text(value: object, dtypes: bool) -> str:
    if dtypes and isinstance(value, str) and value and not any(char in value for char in _NOT_PLAIN):
        return value
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


def list_text(raw: str, dtypes: bool) -> str | None:
    """The stored text of one raw JSON value, any form (the path for values not as the profiler writes them);
    None when it is not a list."""
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    return ", ".join(_item_text(item, dtypes) for item in value)


def _profiler_form(values: pl.Series, dtypes: bool) -> pl.Series:
    """Stored texts of values in the profiler's own form, by polars expressions."""
    inner = pl.col("raw").str.slice(1, pl.col("raw").str.len_chars() - 2)
    if dtypes:
        text = inner.str.replace_all(_QUOTED_PLAIN_TYPE, "$1")
    else:  # only digits, signs, brackets, commas and spaces: the spaces can be laid out again
        text = inner.str.replace_all(" ", "", literal=True).str.replace_all(",", ", ", literal=True)
    return values.to_frame("raw").select(text).to_series()


def _distinct_texts(raw: pl.Series, dtypes: bool) -> pl.DataFrame:
    """raw (as in `raw`), text (cut), length (before the cut), bad (not a list): one row per distinct value."""
    distinct = raw.unique().drop_nulls()
    strings = distinct.cast(pl.String)
    quick = strings.str.contains(_PROFILER_TYPES if dtypes else _PROFILER_DIMS)
    texts = _profiler_form(strings, dtypes)
    if not quick.all():
        slow = quick.not_().arg_true()
        slow_texts = [list_text(value, dtypes) for value in strings.gather(slow).to_list()]
        texts = texts.scatter(slow, pl.Series(slow_texts, dtype=pl.String))
    absent = strings.is_in(list(_ABSENT))
    return pl.DataFrame({"raw": distinct, "text": texts}).with_columns(
        pl.when(~absent).then(pl.col("text")).alias("text"),
        pl.col("text").str.len_chars().alias("length"),
        (pl.col("text").is_null() & ~absent).alias("bad"),
    ).with_columns(cut(pl.col("text")).alias("text"))


def _warnings(frame: pl.DataFrame, raw: str, lookup: pl.DataFrame, what: str, stored: str,
              paths: Sequence[Path]) -> list[str]:
    """One line per file and problem: the values cut (how many, the longest and its op) and those refused."""
    flagged = lookup.filter(pl.col("bad") | (pl.col("length") > MAX_INPUT_CHARS))
    if flagged.height == 0:
        return []
    rows = (
        frame.select("file", "name", raw)
        .join(flagged, left_on=raw, right_on="raw", how="inner")
        .sort("length", descending=True, nulls_last=True)
    )
    lines = []
    for (file,), group in rows.group_by("file", maintain_order=True):
        path = paths[file] if file is not None and 0 <= file < len(paths) else "(trace)"
        cut = group.filter(~pl.col("bad"))
        if cut.height:
            longest, name = cut.row(0)[cut.columns.index("length")], cut.get_column("name")[0]
            lines.append(f"{path}: {cut.height:,} ranges' {what} longer than {MAX_INPUT_CHARS:,} characters as "
                         f"text, cut there and ended with {CUT_MARK} (the longest: {longest:,} characters, "
                         f"on {name})")
        bad = group.filter(pl.col("bad")).height
        if bad:
            lines.append(f"{path}: {bad:,} ranges whose {what} is not a list; their {stored} are left empty")
    return lines


def input_texts(frame: pl.DataFrame, paths: Sequence[Path]) -> InputTexts:
    """`input_shapes` and `input_dtypes` of every range from the raw JSON columns `input_dims` and
    `input_types` (categorical or text); `file` (an index into `paths`) and `name` name the ranges in warnings."""
    result = InputTexts(columns=[])
    for raw, stored, what in COLUMNS:
        if raw not in frame.columns:
            result.columns.append(pl.Series(stored, [None], dtype=pl.Categorical).new_from_index(0, frame.height))
            continue
        column = frame.get_column(raw)
        lookup = _distinct_texts(column, dtypes=stored == "input_dtypes")
        # Categorical out (the stored type): the per-row texts are never built as strings.
        texts = column.replace_strict(lookup.get_column("raw"), lookup.get_column("text").cast(pl.Categorical),
                                      default=None, return_dtype=pl.Categorical)
        result.columns.append(texts.alias(stored))
        result.warnings += _warnings(frame, raw, lookup, what, stored, paths)
    return result
