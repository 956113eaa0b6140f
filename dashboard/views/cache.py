"""The one cache convention: view results are cached per (Run object, hashable state part).

A `Run` is reopened as a new object when its run.json changes, so keying on the
object drops stale results by itself; states are frozen dataclasses (or parts of
them: a rank, a window), so they key too. A function may instead take an object
built once per Run by another cached function (a run's prepared memory data):
it lives and dies with that Run the same way. Pages and analysis hold no caches
of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def per_run(maxsize: int = 16) -> Callable[[F], F]:
    """Cache a function whose first argument is a Run (or an object cached per Run) and whose others are
    hashable state parts."""
    def decorate(function: F) -> F:
        return lru_cache(maxsize=maxsize)(function)  # type: ignore[return-value]
    return decorate

