"""A kernel's FLOPs and bytes at one launch: its `Estimates`, evaluated at the launch's variable values.

An estimate is an int, or, for a kernel with a symbolic shape, a UOp expression (ADD / MUL trees
over `PARAM(ParamArg(name='n'))` in 0.14, `DEFINE_VAR(('n', 1, 10))` before, and CONSTs). tinygrad
evaluates it with `sym_infer(estimate, var_vals)`, which renders the expression to Python source
and `exec`s it. Here it is walked instead, with the integer semantics of tinygrad's `python_alu`
(`cdiv` truncates towards zero, `floordiv` floors, a division by zero gives 0), and bounded: at
most MAX_NODES nodes, and any value past MAX_MAGNITUDE (a product of damaged sizes, a shift by a
huge count) makes the estimate unknown rather than a number with millions of digits.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from dashboard.collectors.tinygrad.records import ConstFloat, is_record
from dashboard.collectors.tinygrad.values import Names, variable_name

MAX_NODES = 10_000
MAX_MAGNITUDE = 1 << 80  # far beyond any count of FLOPs or bytes; keeps every intermediate small
Number = int | float


def _cdiv(x: Number, y: Number) -> Number:
    return abs(x) // abs(y) * (1, -1)[x * y < 0] if y != 0 else 0


def _floordiv(x: Number, y: Number) -> Number:
    return x // y if y != 0 else 0


def _shift(op: Callable[[int, int], int]) -> Callable[[Number, Number], Number | None]:
    def shifted(x: Number, y: Number) -> Number | None:
        if type(x) is not int or type(y) is not int or not 0 <= y <= 64:
            return None
        return op(x, y)
    return shifted


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "ADD": operator.add, "SUB": operator.sub, "MUL": operator.mul, "MAX": max,
    "CDIV": _cdiv, "IDIV": _cdiv, "CMOD": lambda x, y: x - _cdiv(x, y) * y, "MOD": lambda x, y: x - _cdiv(x, y) * y,
    "FLOORDIV": _floordiv, "FLOORMOD": lambda x, y: x - _floordiv(x, y) * y,
    "CMPLT": operator.lt, "CMPNE": operator.ne, "CMPEQ": operator.eq,
    "SHL": _shift(operator.lshift), "SHR": _shift(operator.rshift),
    "AND": operator.and_, "OR": operator.or_, "XOR": operator.xor,
}


def _usable(value: Any) -> bool:
    if type(value) is bool:
        return True
    if type(value) is int:
        return -MAX_MAGNITUDE < value < MAX_MAGNITUDE
    return type(value) in (float, ConstFloat) and math.isfinite(value) and abs(value) < MAX_MAGNITUDE


def evaluate(estimate: Any, var_vals: Mapping[str, Any], names: Names) -> Number | None:
    """The estimate's value at `var_vals`, or None when it cannot be known (a variable without a value,
    an op this evaluator does not know, a damaged expression)."""
    if type(estimate) is int or type(estimate) is float:
        return estimate if _usable(estimate) else None
    if not is_record(estimate, "UOp"):
        return None
    done: dict[int, Any] = {}
    pending: list[tuple[Any, bool]] = [(estimate, False)]
    visited = 0
    while pending:
        node, expanded = pending.pop()
        key = id(node)
        if key in done:
            continue
        src = node.get("src") if is_record(node, "UOp") else None
        if type(src) is not tuple:
            return None
        if not expanded:
            visited += 1
            if visited > MAX_NODES:
                return None
            pending.append((node, True))
            if not _is_leaf(node, names):  # a Variable's sources (0.14: its shape's STACK) are no operands
                pending.extend((child, False) for child in src if id(child) not in done)
            continue
        operands = [] if _is_leaf(node, names) else [done.get(id(child)) for child in src]
        value = _node_value(node, operands, var_vals, names)
        if value is None or not _usable(value):
            return None
        done[key] = value
    return done[id(estimate)]


def _is_leaf(node: Any, names: Names) -> bool:
    return names.op(node.get("op")) == "CONST" or variable_name(node, names) is not None


def _node_value(node: Any, operands: list[Any], var_vals: Mapping[str, Any], names: Names) -> Any:
    op = names.op(node.get("op"))
    if op == "CONST":
        arg = node.get("arg")
        return arg if _usable(arg) else None
    if (variable := variable_name(node, names)) is not None:
        value = var_vals.get(variable)
        return value if type(value) is int else None
    if any(operand is None for operand in operands):
        return None
    if op in ("BIND", "CAST") and operands:  # a bound Variable is its value; a cast of an integer keeps it
        return operands[0] if op == "CAST" else operands[-1]
    if op == "NEG" and len(operands) == 1:
        return -operands[0]
    if op == "WHERE" and len(operands) == 3:
        return operands[1] if operands[0] else operands[2]
    if op == "MULACC" and len(operands) == 3:
        return operands[0] * operands[1] + operands[2]
    function = _BINARY.get(op or "")
    if function is None or len(operands) != 2:
        return None
    return function(operands[0], operands[1])
