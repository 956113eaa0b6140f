"""Human units that scale themselves: ns..s, B..GB, FLOP/s..TFLOP/s."""

from __future__ import annotations

import math

_TIME = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
_BYTES = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"), (1, "B"))
_RATE = ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1.0, "FLOP/s"))


def _scaled(value: float | None, steps: tuple[tuple[float, str], ...], digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    magnitude = abs(value)
    for factor, unit in steps:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {unit}"
    factor, unit = steps[-1]
    return f"{value / factor:.{digits}g} {unit}"


def format_ns(value: float | None, digits: int = 3) -> str:
    """Format a duration in nanoseconds, e.g. 1_500_000 -> '1.5 ms'."""
    return _scaled(value, _TIME, digits)


def format_bytes(value: float | None, digits: int = 3) -> str:
    """Format a size in bytes with binary prefixes, e.g. 1536 -> '1.5 KiB'."""
    return _scaled(value, _BYTES, digits)


def format_flops_rate(value: float | None, digits: int = 3) -> str:
    """Format a rate in FLOP/s, e.g. 2.5e12 -> '2.5 TFLOP/s'."""
    return _scaled(value, _RATE, digits)


def time_unit_for(max_ns: float) -> tuple[float, str]:
    """(divisor, unit) so that values up to `max_ns` read legibly on an axis."""
    for factor, unit in _TIME:
        if abs(max_ns) >= factor:
            return factor, unit
    return 1.0, "ns"


def bytes_unit_for(max_bytes: float) -> tuple[float, str]:
    """(divisor, unit) so that sizes up to `max_bytes` read legibly on an axis."""
    for factor, unit in _BYTES:
        if abs(max_bytes) >= factor:
            return float(factor), unit
    return 1.0, "B"


def window_span_text(start_ns: int, end_ns: int, origin_ns: int) -> str:
    """`2,065.160–2,069.160 ms`: since `origin_ns`, in the window's unit, to ~4 digits of its width."""
    divisor, unit = time_unit_for(end_ns - start_ns)
    width = (end_ns - start_ns) / divisor
    decimals = max(0, 3 - math.floor(math.log10(width))) if width > 0 else 0
    return f"{(start_ns - origin_ns) / divisor:,.{decimals}f}–{(end_ns - origin_ns) / divisor:,.{decimals}f} {unit}"
