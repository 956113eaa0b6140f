"""FLOPs per layer and pass, sampled: torch's FlopCounterMode for the first steps, then reused.

Counting routes every aten op through a Python dispatch mode (tens of µs per op on a launch-bound
loop), so it runs for the first `steps` steps only (2 by default) and later (layer, pass, input
shapes) reuse the FLOPs measured for them; a combination never measured gets null, never 0.
"""

from __future__ import annotations

import threading
from typing import Any


class FlopSampler:
    """FlopCounterMode for the first `steps` steps, then each (layer, pass, input
    shapes) reuses the FLOPs measured for it; a combination never measured gets
    null. A step ends with each backward call (or each no-grad root forward).

    Counting routes every op through a Python dispatch mode (tens of us per op),
    so stopping after a few steps keeps the rest of the capture undisturbed.
    `steps=None` counts every step.
    """

    def __init__(self, steps: int | None = 2) -> None:
        self.steps = steps
        self.steps_seen = 0
        self.warnings: list[str] = []
        self._counter: Any = None
        self._thread: int | None = None
        self._cache: dict[tuple, float | None] = {}
        self._mode_stack: Any = None  # torch's dispatch-mode stack reader, imported once

    @property
    def counting(self) -> bool:
        return self._counter is not None

    def start(self) -> None:
        from torch.utils.flop_counter import FlopCounterMode

        try:
            from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        except ImportError:  # a torch without it: snapshots are taken without the check
            _get_current_dispatch_mode_stack = None
        self._mode_stack = _get_current_dispatch_mode_stack
        counter = FlopCounterMode(display=False)
        counter.__enter__()
        if getattr(counter, "mode", None) is None:  # an older torch: no mode to look for on the stack
            self._mode_stack = None
        self._counter, self._thread = counter, threading.get_ident()

    def snapshot(self) -> int | None:
        """The running total, when this thread's ops are being counted."""
        counter = self._counter
        if counter is None:
            return None
        if self._mode_stack is not None and counter.mode not in self._mode_stack():
            return None  # another thread, one the mode does not reach
        return counter.get_total_flops()

    def flops(self, start: int | None, key: tuple) -> float | None:
        """FLOPs since `start` (measured and remembered), else the remembered ones for `key`."""
        now = self.snapshot() if start is not None else None
        if now is None:
            return self._cache.get(key)
        value = float(now - start) if now > start else None  # no counted op: unknown, not 0
        self._cache[key] = value
        return value

    def step_done(self) -> None:
        self.steps_seen += 1

    def maybe_stop(self) -> None:
        """Leave the dispatch mode once enough steps were counted (only where it was entered, only if on top)."""
        if self._counter is None or self.steps is None or self.steps_seen < self.steps:
            return
        if threading.get_ident() != self._thread:
            return
        if self._mode_stack is None:
            return
        stack = self._mode_stack()
        if not stack or stack[-1] is not self._counter.mode:
            return  # another mode entered after ours: popping now would pop that one
        self.stop()

    def stop(self) -> None:
        counter, self._counter = self._counter, None
        if counter is None:
            return
        try:
            counter.__exit__(None, None, None)
        except Exception as exc:  # entered on another thread, or already gone
            self.warnings.append(f"FLOP counter did not close cleanly: {exc}")
