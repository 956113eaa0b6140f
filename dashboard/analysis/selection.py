"""How selections are named in URLs, shared by every page.

Kernel names contain commas, angle brackets and spaces, so a URL carries a
short stable key per kernel name instead (`sel=3fa2c1d0.9b1e44aa`). A time
window is `window=<start_ns>-<end_ns>` on the run's clock.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal

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


def parse_keys(value: str | None) -> list[str]:
    if not value:
        return []
    return [key for key in value.split(SEPARATOR) if len(key) == 8 and all(c in "0123456789abcdef" for c in key)]


def format_window(start_ns: int, end_ns: int) -> str:
    return f"{int(start_ns)}-{int(end_ns)}"


def parse_window(value: str | None) -> tuple[int, int] | None:
    """(start_ns, end_ns) from `window=a-b`; None when absent or malformed."""
    if not value:
        return None
    start, _, end = value.partition("-")
    try:
        window = int(start), int(end)
    except ValueError:
        return None
    return window if window[0] < window[1] else None


_RANGE_KEY = re.compile(r"^xaxis\d*\.range(\[([01])\])?$")


def x_range_from_relayout(relayout: Mapping[str, Any] | None) -> tuple[float, float] | Literal["all"] | None:
    """The x extent a plotly relayout event asks for, sorted; "all" for a reset (autorange); None if unrelated.

    plotly reports a zoom either as `xaxis.range: [a, b]` or as `xaxis.range[0]` / `xaxis.range[1]`.
    """
    if not relayout:
        return None
    if any(key.startswith("xaxis") and key.endswith(".autorange") and value for key, value in relayout.items()):
        return "all"
    low = high = None
    for key, value in relayout.items():
        match = _RANGE_KEY.match(key)
        if not match:
            continue
        if match.group(2) is None and isinstance(value, list | tuple) and len(value) == 2:
            low, high = value
        elif match.group(2) == "0":
            low = value
        elif match.group(2) == "1":
            high = value
    if low is None or high is None:
        return None
    try:
        start, end = sorted((float(low), float(high)))
    except (TypeError, ValueError):
        return None
    return start, end
