"""The shared- and tensor-memory plan of a TTGIR module after allocation.

`AllocateSharedMemory` gives every buffer (`ttg.local_alloc`, scratch of
`ttg.convert_layout`, reductions...) an `allocation.offset` in bytes, with
`allocation.size` where the buffer's size is not its type's; the module gets
`ttg.shared = <bytes>`. `TritonTensorMemoryAllocation` gives `ttng.tmem_alloc`
a `tensor_memory_col_offset` (columns of 32-bit cells) and the module
`ttg.tensor_memory_size = <columns>`. A buffer's size here: `allocation.size`
when printed, else its memdesc shape x element size (SMEM bytes), or for
TMEM its last dimension in 32-bit columns x the leading (buffer-count) dims.
"""

from __future__ import annotations

import math
import re

import polars as pl

PLAN_SCHEMA = {"ir_line": pl.Int64, "memory": pl.String, "op": pl.String, "value": pl.String,
               "offset": pl.Int64, "size": pl.Int64, "shape": pl.String}

_OFFSET = re.compile(r"allocation\.offset = (\d+)")
_SIZE = re.compile(r"allocation\.size = (\d+)")
_TMEM_COL = re.compile(r"tensor_memory_col_offset = (\d+)")
_OP = re.compile(r"^\s*(?:(%[\w#]+)(?::\d+)? = )?\"?([a-z_]+\.[\w.]+)")
_MEMDESC = re.compile(r"!ttg\.memdesc<([0-9x]+)x([a-z]+)(\d+)")
_MODULE_INT = {"shared": re.compile(r"ttg\.shared = (\d+)"),
               "tmem": re.compile(r"ttg\.tensor_memory_size = (\d+)")}


def _memdesc(line: str) -> tuple[list[int], int] | None:
    """(shape, element bits) of the last memdesc type on the line (the result's)."""
    found = _MEMDESC.findall(line)
    if not found:
        return None
    dims, _, bits = found[-1]
    return [int(d) for d in dims.split("x") if d], int(bits)


def memory_plan(text: str) -> pl.DataFrame:
    """One row per allocated buffer: IR line, SMEM/TMEM, op, SSA value, offset and size."""
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if "allocation.offset" not in line and "tensor_memory_col_offset" not in line:
            continue
        op_match = _OP.match(line)
        op = op_match.group(2) if op_match else "?"
        value = op_match.group(1) if op_match and op_match.group(1) else ""
        described = _memdesc(line)
        shape = "x".join(map(str, described[0])) if described else ""
        offset = _OFFSET.search(line)
        if offset:
            size = _SIZE.search(line)
            nbytes = int(size.group(1)) if size else (
                math.prod(described[0]) * described[1] // 8 if described else None)
            rows.append((number, "SMEM", op, value, int(offset.group(1)), nbytes, shape))
        column = _TMEM_COL.search(line)
        if column:
            columns = None
            if described:
                dims, bits = described
                columns = max(1, dims[-1] * bits // 32) * (math.prod(dims[:-2]) if len(dims) > 2 else 1)
            rows.append((number, "TMEM", op, value, int(column.group(1)), columns, shape))
    return pl.DataFrame(rows, schema=PLAN_SCHEMA, orient="row")


def module_totals(text: str) -> dict[str, int | None]:
    """`ttg.shared` bytes and `ttg.tensor_memory_size` columns of the module."""
    head = text[: text.find("\n", text.find("module attributes")) + 1] if "module attributes" in text else ""
    return {name: int(m.group(1)) if (m := rx.search(head)) else None for name, rx in _MODULE_INT.items()}
