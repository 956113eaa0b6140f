"""Pause Python's cyclic garbage collector around short bursts of allocation.

Decoding a trace chunk or building a figure allocates many short-lived
containers; a collection triggered in the middle scans them (and, in a
server, every long-lived object of the app) for no gain, which shows up as
latency spikes. Garbage made while paused is collected afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
