"""Text for the values a tinygrad pickle holds: enum names, dtypes, UOp arguments, ANSI-coloured names.

Everything here reads records (`records.py`), never tinygrad objects, and is bounded: a value
nested deeper than MAX_DEPTH or longer than its budget is cut with `…`, so a damaged or hostile
file cannot make one label cost more than its budget (the graphs' labels are made from these).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from dashboard.collectors.tinygrad.records import ConstFloat, EnumValue, Record, is_record

MAX_DEPTH = 12
ARG_BUDGET = 2_000  # characters of one argument's text; SOURCE code is kept whole (`render(..., budget=None)`)
_ANSI = re.compile(r"\x1b\[(?:K|[0-9;]*m)")
# A DType pickles its C name; tinygrad prints the `dtypes` attribute (INVERSE_DTYPES_DICT, unchanged 0.12-0.14).
_DTYPE_ATTRIBUTES = {"signed char": "char", "unsigned char": "uchar", "unsigned short": "ushort",
                     "unsigned int": "uint", "unsigned long": "ulong", "float8_e4m3": "fp8e4m3",
                     "float8_e5m2": "fp8e5m2", "float8_e4m3fnuz": "fp8e4m3fnuz", "float8_e5m2fnuz": "fp8e5m2fnuz",
                     "__bf16": "bfloat16"}


def ansistrip(text: str) -> str:
    """A name without its terminal colours (tinygrad colours kernel names by axis type)."""
    return _ANSI.sub("", text)


def name_text(name: Any) -> str | None:
    """The plain text of a str or TracingKey name (its display name), None for anything else."""
    if isinstance(name, str):
        return ansistrip(name)
    if is_record(name, "TracingKey") and isinstance(display := name.get("display_name"), str):
        return ansistrip(display)
    return None


class Names:
    """A release's enum tables: `Ops(33)` -> `ADD`; `Ops(33)` stays itself when no table fits the file."""

    def __init__(self, tables: dict[str, dict[int, str]] | None) -> None:
        self.tables = tables or {}

    def member(self, value: EnumValue) -> str:
        name = self.tables.get(value.family, {}).get(value.value) if type(value.value) is int else None
        return name if name is not None else f"{value.family}({value.value!r})"[:40]

    def op(self, value: Any) -> str | None:
        """The op name of a UOp's `op` field, None when it is not an Ops member at all."""
        return self.member(value) if isinstance(value, EnumValue) and value.family == "Ops" else None


def dtype_text(dtype: Any) -> str:
    """`dtypes.float`, `dtypes.float.vec(4)`, `dtypes.float.ptr(16)` (as tinygrad prints them)."""
    if not is_record(dtype):
        return "?" if dtype is not None else "None"
    name = dtype.get("name")
    text = f"dtypes.{_DTYPE_ATTRIBUTES.get(name, name) if isinstance(name, str) else '?'}"
    if dtype.name in ("PtrDType", "ImageDType"):
        base = dtype.get("base")
        text = dtype_text(base) if is_record(base) and base is not dtype else text
        size = dtype.get("size")
        text += f".ptr({size if type(size) is int and size != -1 else ''})"
    count = dtype.get("count")
    if type(count) is int and count > 1 and dtype.name == "DType":
        scalar = dtype.get("scalar")
        text = (dtype_text(scalar) if is_record(scalar) and scalar is not dtype else text) + f".vec({count})"
    return text


def itemsize(dtype: Any) -> int | None:
    """Bytes per element, `(bitsize + 7) // 8` as tinygrad computes it; None when the dtype is damaged."""
    bitsize = dtype.get("bitsize") if is_record(dtype) else None
    return (bitsize + 7) // 8 if type(bitsize) is int and 0 <= bitsize < 1 << 20 else None


def call_name(info: Any) -> str | None:
    """A CallInfo's name: the second argument in 0.14, the third in 0.13 (after its metadata tuple)."""
    if not is_record(info, "CallInfo"):
        return None
    for field in ("_arg1", "_arg2", "name"):
        if isinstance(value := info.get(field), str):
            return value
    return None


class _Budget:
    def __init__(self, chars: int | None) -> None:
        self.left = chars

    def take(self, text: str) -> str:
        if self.left is None:
            return text
        if len(text) > self.left:
            text = text[: max(self.left, 0)] + "…"
        self.left -= len(text)
        return text


def render(value: Any, names: Names, budget: int | None = ARG_BUDGET) -> str:
    """A UOp argument as text: plain values as Python writes them, records as `Name(field=value, ...)`."""
    if value is None or type(value) in (int, bool):
        return repr(value)
    if type(value) is str:
        return value if budget is None or len(value) <= budget else value[:budget] + "…"
    return _render(value, names, _Budget(budget), 0)


def _render(value: Any, names: Names, budget: _Budget, depth: int) -> str:
    if budget.left is not None and budget.left <= 0:
        return "…"
    if depth > MAX_DEPTH:
        return budget.take("…")
    if isinstance(value, ConstFloat | float):
        return budget.take(repr(float(value)))
    if value is None or isinstance(value, bool | int | Decimal):
        return budget.take(str(value) if isinstance(value, Decimal) else repr(value))
    if isinstance(value, str):
        return budget.take(repr(value) if depth else value)
    if isinstance(value, bytes | bytearray):
        return budget.take(f"<{len(value)} bytes>")
    if isinstance(value, EnumValue):
        return budget.take(f"{value.family}.{names.member(value)}")
    if isinstance(value, tuple | list):
        opening, closing = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        parts = []
        for item in value:
            parts.append(_render(item, names, budget, depth + 1))
            if budget.left is not None and budget.left <= 0:
                break
        tail = "," if isinstance(value, tuple) and len(value) == 1 else ""
        return opening + ", ".join(parts) + tail + closing
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            parts.append(f"{_render(key, names, budget, depth + 1)}: {_render(item, names, budget, depth + 1)}")
            if budget.left is not None and budget.left <= 0:
                break
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, Record):
        return _render_record(value, names, budget, depth)
    return budget.take(f"<{type(value).__name__}>")


def _render_record(record: Record, names: Names, budget: _Budget, depth: int) -> str:
    if record.name in ("DType", "PtrDType", "ImageDType"):
        return budget.take(dtype_text(record))
    if record.name == "InvalidType":
        return budget.take("Invalid")
    if record.name == "UOp":  # a symbolic size inside an argument (a Variable's expression)
        return budget.take(expression_text(record, names))
    parts = []
    for field, item in record.fields.items():
        if field == "tb":  # creation stacks belong to the context table, not to a label
            continue
        label = "" if field.startswith("_arg") else f"{field}="
        parts.append(label + _render(item, names, budget, depth + 1))
        if budget.left is not None and budget.left <= 0:
            break
    return f"{record.name}(" + ", ".join(parts) + ")"


# Infix operators of symbolic expressions (ADD/MUL trees over variables, as tinygrad renders them).
_INFIX = {"ADD": "+", "SUB": "-", "MUL": "*", "IDIV": "//", "CDIV": "//", "FLOORDIV": "//", "MOD": "%", "CMOD": "%",
          "FLOORMOD": "%", "CMPLT": "<", "CMPNE": "!=", "CMPEQ": "==", "SHL": "<<", "SHR": ">>", "AND": "&",
          "OR": "|", "XOR": "^"}
EXPRESSION_NODES = 400  # UOps one expression's text may visit; beyond, `…`


def variable_name(uop: Record, names: Names) -> str | None:
    """The name of a Variable: PARAM(ParamArg(name=...)) in 0.14, DEFINE_VAR((name, min, max)) before."""
    op, arg = names.op(uop.get("op")), uop.get("arg")
    if op == "PARAM" and is_record(arg) and isinstance(name := arg.get("name"), str):
        return name
    if op == "DEFINE_VAR" and isinstance(arg, tuple) and arg and isinstance(arg[0], str):
        return arg[0]
    return None


def expression_text(uop: Record, names: Names) -> str:
    """A symbolic UOp as an expression: `((n*16)+4)`; other UOps as `OP(...)`; cut at EXPRESSION_NODES."""
    visited = [0]
    return _expression(uop, names, visited, 0)


def _expression(uop: Any, names: Names, visited: list[int], depth: int) -> str:
    visited[0] += 1
    if visited[0] > EXPRESSION_NODES or depth > 4 * MAX_DEPTH:
        return "…"
    if not is_record(uop, "UOp"):
        return render(uop, names, 80)
    op = names.op(uop.get("op")) or "?"
    src = uop.get("src") if isinstance(uop.get("src"), tuple) else ()
    if op == "CONST":
        return render(uop.get("arg"), names, 80)
    if (variable := variable_name(uop, names)) is not None:
        return variable
    if op in ("BIND", "CAST") and src:
        return _expression(src[0], names, visited, depth + 1)
    parts = [_expression(child, names, visited, depth + 1) for child in src[:8]]
    if op in _INFIX and len(parts) == 2:
        return f"({parts[0]}{_INFIX[op]}{parts[1]})"
    if op == "NEG" and len(parts) == 1:
        return f"-{parts[0]}"
    if op == "MAX" and len(parts) == 2:
        return f"max({parts[0]}, {parts[1]})"
    if op == "WHERE" and len(parts) == 3:
        return f"({parts[1]} if {parts[0]} else {parts[2]})"
    return f"{op}({', '.join(parts)}{', …' if len(src) > 8 else ''})"
