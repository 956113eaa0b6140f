"""Demangle C++ kernel names (CUPTI reports them mangled: `_Z6vecAddPKfS0_Pfi`).

Uses the C++ runtime's own `__cxa_demangle` through ctypes, so there is no
extra dependency and the output matches `c++filt`. Names that are not mangled
(`ampere_sgemm_128x64_tn`) or that the runtime cannot demangle are kept as is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache

import polars as pl


@cache
def _cxa_demangle() -> Callable[[bytes], str | None] | None:
    candidates = [ctypes.util.find_library("stdc++"), "libstdc++.so.6", ctypes.util.find_library("c++")]
    runtime = None
    for candidate in candidates:
        if not candidate:
            continue
        try:
            runtime = ctypes.CDLL(candidate)
            break
        except OSError:
            continue
    libc_name = ctypes.util.find_library("c")
    if runtime is None or libc_name is None:
        return None
    try:
        demangle = runtime.__cxa_demangle
        free = ctypes.CDLL(libc_name).free
    except (AttributeError, OSError):
        return None
    demangle.restype = ctypes.c_void_p
    size_p, status_p = ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)
    demangle.argtypes = [ctypes.c_char_p, ctypes.c_char_p, size_p, status_p]
    free.argtypes = [ctypes.c_void_p]
    free.restype = None

    def run(mangled: bytes) -> str | None:
        status = ctypes.c_int(0)
        pointer = demangle(mangled, None, None, ctypes.byref(status))
        if status.value != 0 or not pointer:
            return None
        try:
            return ctypes.string_at(pointer).decode("utf-8", errors="replace")
        finally:
            free(pointer)

    return run


@cache
def demangle(name: str) -> str:
    """The readable form of a (possibly) mangled name; unmangled names pass through."""
    if not name or not name.startswith("_Z"):
        return name
    run = _cxa_demangle()
    if run is None:
        return name
    return run(name.encode("utf-8", errors="replace")) or name


def demangle_column(column: pl.Series) -> pl.Series:
    """Demangle a string column, doing the work once per distinct name."""
    distinct = column.drop_nulls().unique()
    mapping = {name: demangle(name) for name in distinct.to_list()}
    return column.replace_strict(mapping, default=column, return_dtype=pl.String)
