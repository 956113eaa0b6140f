"""The one cache convention: view results are cached per (Run object, hashable state part), in the
process's byte-budgeted cache (`store.memory`), beside the run tables they were computed from.

A `Run` is reopened as a new object when its run.json changes, so keying on the
object drops stale results by itself; states are frozen dataclasses (or parts of
them: a rank, a window), so they key too. A function may instead take an object
built once per Run by another cached function (a run's prepared memory data):
it lives and dies with that Run the same way. Pages and analysis hold no caches
of their own.

Every result is weighed when kept; the least recently used results and tables, of any run and any
view, go first when the worker's budget is reached (a result bigger than the whole budget is computed
and returned, not kept). `maxsize` still caps how many results one function keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from dashboard.store.memory import CACHE

F = TypeVar("F", bound=Callable[..., Any])
_MISSING = object()


def per_run(maxsize: int = 16) -> Callable[[F], F]:
    """Cache a function whose first argument is a Run (or an object cached per Run) and whose others are
    hashable state parts."""
    def decorate(function: F) -> F:
        group = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (group, args, tuple(sorted(kwargs.items())))
            found = CACHE.get(key, _MISSING)
            if found is not _MISSING:
                return found
            value = function(*args, **kwargs)
            CACHE.put(key, value, group=group, group_limit=maxsize)
            return value

        def cache_clear() -> None:
            CACHE.discard_where(lambda key: not (isinstance(key, tuple) and key and key[0] == group))

        cached.cache_clear = cache_clear  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]
    return decorate
