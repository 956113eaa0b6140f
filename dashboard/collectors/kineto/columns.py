"""Pull decoded Kineto events apart column by column (`RawColumns`); `frames` builds one frame per kind.

Events are grouped by (category, ph) in a dict, then values are pulled out
column by column with one list comprehension per attribute over the group's
small structs and handed to polars in one call per column. Times stay in µs
here; the conversion to ns happens once per file in `tables`.

Values that do not fit the expected type are coerced column by column:
numbers given as strings (`"ts": "1682725898082228"`) become numbers and are
counted, values that are not numbers at all become null (the event is then
dropped and counted by the caller), string process / thread ids
(`"stream 7"`, `"25738"`) keep their digits.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import polars as pl

from dashboard.collectors.kineto.flops import FLOP_OP_NAMES

# Category names, modern and legacy (2021), mapped to the modern name.
CATEGORY_ALIASES: dict[str, str] = {
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "Runtime": "cuda_runtime",
    "Driver": "cuda_driver",
    "Operator": "cpu_op",
}
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
API_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
FLOW_CATEGORIES = frozenset({"ac2g", "fwdbwd", "async", "async_cpu_to_gpu"})
# Instants and metadata carry no interval; the profiler span is not a range.
IGNORED_CATEGORIES = frozenset({"cpu_instant_event", "Trace"})
# `[memory]` instants: `cpu_instant_event` today, no `cat` at all in 2021 traces.
MEMORY_CATEGORIES = frozenset({"cpu_instant_event", None})
MEMORY_PHASES = frozenset({"i", "I"})
MEMORY_NAME = "[memory]"
MEMORY_CATEGORY = "[memory]"  # the census key memory instants are counted under
CONV_NAMES = frozenset(name for name in FLOP_OP_NAMES if "conv" in name)

_DIGITS = r"(\d+)"
# Joins the raw JSON values of a group into one buffer: never inside a JSON value (a raw control character is
# invalid in its strings and is not whitespace outside them).
_SEPARATOR = "\x00"
NOT_UTF8_ARGS = ("`Input Dims` / `Input type` / `Concrete Inputs` values with bytes that are not UTF-8 text, "
                 "replaced by U+FFFD")


# One list comprehension per attribute (a literal name): about twice as fast as
# map(attrgetter(...)), and this is the only per-event Python in the parser.
# `args` and `grid` / `block` lists are taken once per group and shared by
# their fields (see `RawColumns.values`), which halves the cost of args fields.
_EVENT_GETTERS: dict[str, Callable[[Sequence[Any]], list[Any]]] = {
    "cat": lambda events: [e.cat for e in events],
    "ph": lambda events: [e.ph for e in events],
    "name": lambda events: [e.name for e in events],
    "pid": lambda events: [e.pid for e in events],
    "tid": lambda events: [e.tid for e in events],
    "ts": lambda events: [e.ts for e in events],
    "dur": lambda events: [e.dur for e in events],
    "id": lambda events: [e.id for e in events],
    "args": lambda events: [e.args for e in events],
}
_ARG_GETTERS: dict[str, Callable[[Sequence[Any]], list[Any]]] = {
    "external_id": lambda args: [a.external_id for a in args],
    "external_id_legacy": lambda args: [a.external_id_legacy for a in args],
    "correlation": lambda args: [a.correlation for a in args],
    "bytes": lambda args: [a.bytes for a in args],
    "grid": lambda args: [a.grid for a in args],
    "block": lambda args: [a.block for a in args],
    "registers": lambda args: [a.registers for a in args],
    "shared_memory": lambda args: [a.shared_memory for a in args],
    "sequence": lambda args: [a.sequence for a in args],
    "fwd_thread": lambda args: [a.fwd_thread for a in args],
    "python_id": lambda args: [a.python_id for a in args],
    "module_hierarchy": lambda args: [a.module_hierarchy for a in args],
    "flops": lambda args: [a.flops for a in args],
    "device_type": lambda args: [a.device_type for a in args],
    "device_id": lambda args: [a.device_id for a in args],
    "addr": lambda args: [a.addr for a in args],
    "mem_bytes": lambda args: [a.mem_bytes for a in args],
    "total_allocated": lambda args: [a.total_allocated for a in args],
    "total_reserved": lambda args: [a.total_reserved for a in args],
    "input_dims": lambda args: [a.input_dims for a in args],
    "input_types": lambda args: [a.input_types for a in args],
}
_DIM3_GETTERS: dict[str, Callable[[Sequence[Any]], list[Any]]] = {
    "x": lambda dims: [d.x for d in dims],
    "y": lambda dims: [d.y for d in dims],
    "z": lambda dims: [d.z for d in dims],
}
_GETTERS_BY_DEPTH = (_EVENT_GETTERS, _ARG_GETTERS, _DIM3_GETTERS)


def _scalar_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _axis(value: Any, axis: int) -> Any:
    if isinstance(value, list | tuple) and len(value) > axis:
        return value[axis] if isinstance(value[axis], int) and not isinstance(value[axis], bool) else None
    return None


class RawColumns:
    """Column access over one group of decoded events."""

    def __init__(self, events: tuple[Any, ...] | list[Any], lenient: bool, problems: Counter[str]) -> None:
        self.events = events
        self.lenient = lenient
        self.problems = problems
        self._lists: dict[str, list[Any]] = {}

    def __len__(self) -> int:
        return len(self.events)

    def values(self, field: str) -> list[Any]:
        """A dotted field (`args.grid.x`) of every event; parent lists are taken once and kept."""
        found = self._lists.get(field)
        if found is None:
            parent, _, attribute = field.rpartition(".")
            items = self.values(parent) if parent else self.events
            found = _GETTERS_BY_DEPTH[field.count(".")][attribute](items)
            self._lists[field] = found
        return found

    def integer(self, field: str) -> pl.Series:
        return self._number(field, pl.Int64)

    def real(self, field: str) -> pl.Series:
        return self._number(field, pl.Float64)

    def text(self, field: str) -> pl.Series:
        name = field.rsplit(".", 1)[-1]
        values = self.values(field)
        try:
            return pl.Series(name, values, dtype=pl.String)
        except TypeError:
            return pl.Series(name, [_scalar_text(v) for v in values], dtype=pl.String)

    def _number(self, field: str, dtype: pl.DataType) -> pl.Series:
        name = field.rsplit(".", 1)[-1]
        values = self.values(field)
        try:
            return pl.Series(name, values, dtype=dtype)
        except (TypeError, OverflowError):
            pass  # strings, lists or huge ints among the values: coerce one by one
        strings = sum(isinstance(v, str) for v in values)
        if strings:
            self.problems[f"`{name}` values given as strings (converted to numbers)"] += strings
        texts = pl.Series(name, [_scalar_text(v) for v in values], dtype=pl.String)
        number = texts.cast(pl.Float64, strict=False)
        if dtype == pl.Float64:
            return number
        # "12.0" must still become 12 where an integer is expected.
        integer = number.round(0).cast(dtype, strict=False)
        too_large = int((number.is_not_null() & integer.is_null()).sum())
        if too_large:
            self.problems[f"`{name}` values too large for a 64-bit integer (left empty)"] += too_large
        return integer

    def ids(self, field: str) -> tuple[pl.Series, pl.Series]:
        """(key, number) for a pid / tid: ints stay ints, strings keep their digits.

        The key is what events are grouped by: the number when there is one,
        else a negative hash of the string (pid "Spans", tid "PyTorch Profiler").
        """
        values = self.values(field)
        try:
            series = pl.Series(field, values, dtype=pl.Int64)
            return series, series
        except (TypeError, OverflowError):
            pass
        texts = pl.Series(field, [_scalar_text(v) for v in values], dtype=pl.String)
        digits = texts.str.extract(_DIGITS, 1)
        number = digits.cast(pl.Int64, strict=False)
        too_large = int((digits.is_not_null() & number.is_null()).sum())
        if too_large:
            self.problems[f"`{field}` values too large for an id (kept without a number)"] += too_large
        fallback = -(texts.hash() // 4).cast(pl.Int64) - 1
        return number.fill_null(fallback).alias(field), number

    def triple(self, field: str, prefix: str) -> list[pl.Series]:
        """`grid` / `block` [x, y, z] as three Int32 columns."""
        if self.lenient:
            values = self.values(field)
            columns = [[_axis(v, axis) for v in values] for axis in range(3)]
        else:
            columns = [self.values(f"{field}.{letter}") for letter in "xyz"]
        return [
            pl.Series(f"{prefix}_{letter}", column, dtype=pl.Int64, strict=False).cast(pl.Int32, strict=False)
            for letter, column in zip("xyz", columns, strict=True)
        ]

    def json_texts(self, field: str) -> pl.Series:
        """A `msgspec.Raw` argument of every event as its JSON text (null where absent), as a categorical.

        One join of the raw spans and one split in polars (~40 ns an event) instead of a bytes object per
        event (~200 ns); categorical because shapes repeat step after step: 4 bytes a row through the
        sorts and gathers of the ranges, where text would cost ~30 (`shapes` makes the stored text).
        """
        name = field.rsplit(".", 1)[-1]
        raws = self.values(field)
        buffer = _SEPARATOR.encode().join(raws)
        if len(buffer) < len(raws):  # separators only: no event has it (no `record_shapes`, not an op)
            return pl.Series(name, [None], dtype=pl.Categorical).new_from_index(0, len(raws))
        try:
            texts = pl.Series(name, [buffer.decode()], dtype=pl.String).str.split(_SEPARATOR).explode()
        except UnicodeDecodeError:
            texts = None
        if texts is None or texts.len() != len(raws):  # (a separator inside a value: impossible in valid JSON)
            texts = pl.Series(name, self._utf8(raws), dtype=pl.String)
        value = pl.col(name)
        return texts.to_frame(name).select(pl.when(value != "").then(value).cast(pl.Categorical)).to_series()

    def _utf8(self, raws: Sequence[Any]) -> list[str]:
        """Raw spans as text, bytes that are not UTF-8 replaced by U+FFFD and counted: msgspec does not check
        a raw span, and raising from here would leave the decoded events pointing into the buffer."""
        texts = []
        for raw in raws:
            data = bytes(raw)
            try:
                texts.append(data.decode())
            except UnicodeDecodeError:
                texts.append(data.decode(errors="replace"))
                self.problems[NOT_UTF8_ARGS] += 1
        return texts

    def raw_text(self, field: str, rows: pl.Series) -> pl.Series:
        """A `msgspec.Raw` argument as JSON text, only at the given row positions."""
        empty = pl.Series(field, [None], dtype=pl.String).new_from_index(0, len(self.events))
        if rows.len() == 0:
            return empty
        positions = rows.to_list()
        picked = itemgetter(*positions)(self.events) if len(positions) > 1 else (self.events[positions[0]],)
        texts = pl.Series(field, self._utf8(list(map(attrgetter(f"args.{field}"), picked))), dtype=pl.String)
        return empty.scatter(rows, texts.replace("", None))


def group_events(events: list[Any], lenient: bool) -> list[tuple[str | None, str | None, Sequence[Any]]]:
    """Split a chunk into (category, ph, events) groups, categories normalised."""
    if not events:
        return []
    if not lenient:
        # Typed events have str-or-None `cat` and `ph`. Grouping by category alone in a
        # dict is 3x faster than by (cat, ph) pairs (no tuple per event), and nearly
        # every category has a single `ph`, which a C-level count confirms.
        by_category: defaultdict[str | None, list[Any]] = defaultdict(list)
        for event in events:
            by_category[event.cat].append(event)
        groups: list[tuple[str | None, str | None, Sequence[Any]]] = []
        for category, group in by_category.items():
            name = CATEGORY_ALIASES.get(category, category) if category else category
            phases = [e.ph for e in group]
            if phases.count(phases[0]) == len(phases):
                groups.append((name, phases[0], group))
                continue
            by_phase: defaultdict[str | None, list[Any]] = defaultdict(list)
            for phase, event in zip(phases, group, strict=True):
                by_phase[phase].append(event)
            groups.extend((name, phase, found) for phase, found in by_phase.items())
        return groups
    columns = RawColumns(events, lenient, Counter())
    keys = pl.DataFrame([columns.text("cat"), columns.text("ph")]).with_row_index("i")
    groups = keys.group_by("cat", "ph", maintain_order=True).agg("i")
    out = []
    for category, ph, rows in groups.iter_rows():
        picked = itemgetter(*rows)(events) if len(rows) > 1 else (events[rows[0]],)
        out.append((CATEGORY_ALIASES.get(category, category), ph, picked))
    return out
