"""The optimizer pass, live: global `Optimizer.step` hooks that record a range per step call.

Each `optimizer.step()` becomes a range named as torch's profiler names it
(`Optimizer.step#SGD.step`), category "marker", pass "optimizer"
(`ranges` gives `Optimizer.…` ranges that pass), so the kernels it
launches are attributed to the optimizer pass by CUPTI as module kernels are
to their layer. torch has no global `zero_grad` hook: its memsets stay
outside the pass unless the program marks them (`dashboard.mark`).
"""

from __future__ import annotations

import threading
from typing import Any

from dashboard.capture.ranges import RangeRecorder


class OptimizerHooks:
    """torch.optim's global step pre / post hooks feeding a RangeRecorder."""

    def __init__(self, ranges: RangeRecorder) -> None:
        self.ranges = ranges
        self._handles: list[Any] = []
        self._local = threading.local()  # per thread: ids of the step ranges open (steps may nest)

    def install(self) -> None:
        from torch.optim import optimizer

        self._handles = [optimizer.register_optimizer_step_pre_hook(self._pre),
                         optimizer.register_optimizer_step_post_hook(self._post)]

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _open(self) -> list[int]:
        if not hasattr(self._local, "open"):
            self._local.open = []
        return self._local.open

    def _pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        kind = type(optimizer).__name__
        self._open().append(self.ranges.open(f"Optimizer.step#{kind}.step", "marker"))

    def _post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._open():
            self.ranges.close(self._open().pop())
