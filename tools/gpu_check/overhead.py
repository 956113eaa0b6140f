"""What each capture feature costs, measured as a user would pay it: the same training step timed in
short blocks, without capture and under a `CaptureSession` with one feature set each, interleaved.

    times = interleaved(trainer.step, step_range, rounds=8, block_steps=5)

Variants (`VARIANTS`, CaptureSession settings): `kernels` (CUPTI only: kernels, copies, memsets,
runtime calls), `layers` (+ module hooks in their default form: forward ranges per module, backward
per model call), `layers_full` (+ a backward range per module call), `flops` (layers + FLOPs: FLOPs
need the layer ranges, so their own cost is flops - layers), `stacks` (CUPTI + Python stacks) and
`defaults` (what `python -m dashboard.capture` enables with no option).

Each round runs every variant once, in an order rotated by the round, so a drift of clocks or
neighbours over the run spreads over all of them instead of passing for one feature's cost; many short
blocks, because on the H200 host of the first runs one configuration's 20-step blocks differed by up
to 50 % from one another. A block's first `warm_steps` (the FLOP counter's sampled steps, 2 by default)
are timed apart (`first_s`) from its steady steps (`steps_s`, and `cpu_s`: their process CPU time).
Sessions write no run (no data folder): what is measured is the recording, not the parquet after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from dashboard.capture.command import command_defaults
from dashboard.capture.session import CaptureSession

NO_CAPTURE = "none"
VARIANTS: dict[str, dict[str, Any]] = {
    "kernels": {"layers": False, "flops": False, "stacks": False},
    "layers": {"layers": "forward", "flops": False, "stacks": False},
    "layers_full": {"layers": "full", "flops": False, "stacks": False},
    "flops": {"layers": "forward", "flops": True, "stacks": False},
    "stacks": {"layers": False, "flops": False, "stacks": True},
    "defaults": command_defaults(),
}
StepRange = Callable[[int], AbstractContextManager[Any]]


def _block(step: Callable[[], Any], step_range: StepRange, warm_steps: int,
           steps: int) -> tuple[list[float], list[float], list[float]]:
    """(first steps' wall times, steady steps' wall times, steady steps' process CPU times), seconds."""
    times, cpu = [], []
    for index in range(warm_steps + steps):
        started, started_cpu = time.perf_counter(), time.process_time()
        with step_range(index):
            step()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return times[:warm_steps], times[warm_steps:], cpu[warm_steps:]


def interleaved(
    step: Callable[[], Any],
    step_range: StepRange,
    rounds: int = 16,
    block_steps: int = 4,
    warm_steps: int = 2,
    backend_factory: Callable[[], Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per variant (and `none`): `steps_s` (steady steps' wall time, seconds), `cpu_s` (their process CPU
    time: every thread, so autograd's and CUPTI's too), `first_s` (each block's first steps), `warnings`.
    `backend_factory`: a capture backend per session (default: CUPTI)."""
    names = [NO_CAPTURE, *VARIANTS]
    results: dict[str, dict[str, Any]] = {name: {"steps_s": [], "cpu_s": [], "first_s": [], "warnings": []}
                                          for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            result = results[name]
            if name == NO_CAPTURE:
                first, steady, cpu = _block(step, step_range, warm_steps, block_steps)
            else:
                backend = backend_factory() if backend_factory is not None else None
                session = CaptureSession(f"overhead-{name}", backend=backend, **VARIANTS[name])
                session.start()
                try:
                    first, steady, cpu = _block(step, step_range, warm_steps, block_steps)
                finally:
                    session.stop()
                result["warnings"].extend(w for w in session.warnings if w not in result["warnings"])
            result["first_s"].extend(first)
            result["steps_s"].extend(steady)
            result["cpu_s"].extend(cpu)
    return results
