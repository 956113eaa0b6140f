"""One byte budget for everything a worker keeps in memory between requests: tables read from runs and
the results views computed from them, least recently used evicted first, across runs.

Caches bounded by entry count (16 per function) let a worker grow with every run opened: one gunicorn
worker browsing runs of a 300 k-kernel trace went 107 -> 1,514 MB over nine runs and kept climbing. Here
every kept value is weighed (`estimated_bytes`: a polars frame's own estimate, numpy's `nbytes`, and a
bounded walk through containers, dataclasses, figures and components) and the process keeps at most
`limit` bytes of them. Two guards more:

- a function may still cap its own entries (`maxsize`), as before;
- after each new entry the process's resident memory is read (`/proc/self/statm`, microseconds): above
  the worker's memory budget, the cache is cut to half and freed memory is handed back to the system
  (`malloc_trim`), because what a page computed meanwhile, the allocators' free lists and fragmentation
  also count against the machine.

`configure(worker_mb, cache_mb)` sets the budgets (the app does, from settings.py); `stats()` is what
`/health?verbose` reports.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

MIB = 1024 * 1024
DEFAULT_CACHE_BYTES = 512 * MIB
_WALK_ITEMS = 20_000  # values visited per estimate; what is beyond is extrapolated from what was seen
_SAMPLED_SEQUENCE = 256  # a longer list or tuple is weighed from its first items


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4096


_PAGE = _page_size()


def resident_bytes() -> int | None:
    """This process's resident memory, or None where /proc is missing."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _trim() -> None:
    """Hand freed heap memory back to the system (glibc); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def estimated_bytes(value: Any) -> int:
    """About how many bytes `value` holds: exact for polars frames and numpy arrays, a bounded walk
    through everything else (shared parts counted once per value)."""
    seen: set[int] = set()
    budget = [_WALK_ITEMS]

    def weigh(item: Any, depth: int) -> int:
        if item is None or isinstance(item, bool | int | float):
            return 24
        key = id(item)
        if key in seen or budget[0] <= 0 or depth > 12:
            return 0
        seen.add(key)
        budget[0] -= 1
        if isinstance(item, str | bytes | bytearray):
            return sys.getsizeof(item)
        size_of = getattr(item, "estimated_size", None)  # polars DataFrame / Series
        if callable(size_of) and type(item).__module__.startswith("polars"):
            try:
                return int(size_of()) + 200
            except Exception:  # a frame that cannot say: weighed as empty
                return 200
        if type(item).__module__.startswith("polars"):  # a LazyFrame, an expression: a plan, not data
            return 1024
        nbytes = getattr(item, "nbytes", None)
        if isinstance(nbytes, int) and type(item).__module__.startswith("numpy"):
            return nbytes + 112
        if isinstance(item, dict):
            return sys.getsizeof(item) + sum(weigh(k, depth + 1) + weigh(v, depth + 1) for k, v in item.items())
        if isinstance(item, list | tuple | set | frozenset):
            items = list(item) if isinstance(item, set | frozenset) else item
            if len(items) > _SAMPLED_SEQUENCE:
                sample = items[:_SAMPLED_SEQUENCE]
                return sys.getsizeof(item) + sum(weigh(x, depth + 1) for x in sample) * len(items) // len(sample)
            return sys.getsizeof(item) + sum(weigh(x, depth + 1) for x in items)
        data, layout = getattr(item, "_data", None), getattr(item, "_layout", None)
        if data is not None and layout is not None and hasattr(item, "to_plotly_json"):  # a plotly figure
            return 1024 + weigh(data, depth + 1) + weigh(layout, depth + 1)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return sys.getsizeof(item) + sum(weigh(getattr(item, f.name, None), depth + 1)
                                             for f in dataclasses.fields(item))
        attributes = getattr(item, "__dict__", None)
        if isinstance(attributes, dict):
            return sys.getsizeof(item) + weigh(attributes, depth + 1)
        return sys.getsizeof(item)

    total = weigh(value, 0)
    if budget[0] <= 0:  # stopped early: what was seen stands for what was not, roughly
        total *= 2
    return total


@dataclasses.dataclass
class _Entry:
    value: Any
    size: int
    group: str


class ByteBudgetCache:
    """Values by key, at most `limit` bytes in all, least recently used evicted first; thread-safe."""

    def __init__(self, limit: int = DEFAULT_CACHE_BYTES, process_limit: int | None = None) -> None:
        self.limit = limit
        self.process_limit = process_limit
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._groups: dict[str, OrderedDict[Hashable, None]] = {}
        self._bytes = 0
        self._lock = threading.RLock()
        self.evictions = 0
        self.trims = 0

    # ---- reading ----------------------------------------------------------
    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return default
            self._entries.move_to_end(key)
            self._groups[entry.group].move_to_end(key)
            return entry.value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    # ---- writing ----------------------------------------------------------
    def put(self, key: Hashable, value: Any, group: str = "", group_limit: int | None = None,
            size: int | None = None) -> None:
        """Keep `value` (weighed unless `size` is given); evict what the budgets say."""
        weight = estimated_bytes(value) if size is None else size
        with self._lock:
            self._drop(key)
            if weight > self.limit:
                return  # bigger than the whole budget: not kept (the caller holds it while it needs it)
            self._entries[key] = _Entry(value, weight, group)
            self._groups.setdefault(group, OrderedDict())[key] = None
            self._bytes += weight
            members = self._groups[group]
            while group_limit is not None and len(members) > group_limit:
                self._drop(next(iter(members)))
                self.evictions += 1
            while self._bytes > self.limit and self._entries:
                self._drop(next(iter(self._entries)))
                self.evictions += 1
        self._guard_process()

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def discard_where(self, keep: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key `keep` refuses (a deleted run's)."""
        with self._lock:
            for key in [key for key in self._entries if not keep(key)]:
                self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._groups.clear()
            self._bytes = 0

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size
            members = self._groups.get(entry.group)
            if members is not None:
                members.pop(key, None)

    def _guard_process(self) -> None:
        """Above the process's budget, keep half of what is cached and give freed memory back."""
        if self.process_limit is None:
            return
        resident = resident_bytes()
        if resident is None or resident <= self.process_limit:
            return
        with self._lock:
            target = self._bytes // 2
            while self._bytes > target and self._entries:
                self._drop(next(iter(self._entries)))
                self.evictions += 1
        gc.collect()
        _trim()
        self.trims += 1

    # ---- reporting --------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._lock:
            groups: dict[str, int] = {}
            for entry in self._entries.values():
                groups[entry.group] = groups.get(entry.group, 0) + entry.size
            top = sorted(groups.items(), key=lambda item: item[1], reverse=True)[:10]
            resident = resident_bytes()
            return {
                "cache_mb": round(self._bytes / MIB, 1), "cache_limit_mb": round(self.limit / MIB, 1),
                "worker_limit_mb": round(self.process_limit / MIB, 1) if self.process_limit else None,
                "rss_mb": round(resident / MIB, 1) if resident is not None else None,
                "entries": len(self._entries), "evictions": self.evictions, "trims": self.trims,
                "largest_mb": {name or "-": round(size / MIB, 1) for name, size in top},
            }


CACHE = ByteBudgetCache()


def configure(cache_bytes: int, process_bytes: int | None) -> ByteBudgetCache:
    """Set the budgets of this process's cache (what is kept beyond them goes at once)."""
    CACHE.limit = max(0, cache_bytes)
    CACHE.process_limit = process_bytes
    with CACHE._lock:
        while CACHE._bytes > CACHE.limit and CACHE._entries:
            CACHE._drop(next(iter(CACHE._entries)))
    return CACHE
