"""One process of the device check: build the loop (model.py), warm it up, then time steps in one mode.

    python tools/gpu_check/workload.py --mode plain --out plain.json [--session-data DIR]
    python -m dashboard.capture --data DIR -- tools/gpu_check/workload.py --mode capture --out capture.json
    python tools/gpu_check/workload.py --mode kineto --out kineto.json --trace T.pt.trace.json.gz \
        [--snapshot S.pickle]

Each mode runs in its own process because CUPTI has one owner per process: our capture and torch.profiler
(Kineto) cannot both record one process.

* plain: timed steps without any profiler, then the same number under a `CaptureSession` (CUPTI only: no
  layer hooks, no stacks) started in this process, then plain steps again. The session's steps sit between
  two plain blocks, so a drift of the GPU's clocks over the run does not pass for capture overhead.
* capture: the timed steps inside `python -m dashboard.capture`, as a user runs it (layers, FLOPs and
  stacks on by default).
* overhead: what each capture feature costs (overhead.py): blocks of steps without capture and under a
  CaptureSession per feature set (CUPTI only, + layers, + FLOPs, Python stacks, the command's defaults),
  interleaved over --rounds rounds.
* kineto: the timed steps under `torch.profiler.profile(profile_memory=True)`, with the allocator's history
  recorded from the start (`torch.cuda.memory._record_memory_history`) and dumped at the end.

Every timed step is a `ProfilerStep#N` range (N from 0): `dashboard.mark` in our modes, `record_function`
under Kineto, named as `torch.profiler`'s own `prof.step()` names them. The times (seconds per step, the
step's synchronize included) and the facts the comparison needs go to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch

from dashboard import mark
from tools.gpu_check.model import SIZES, Trainer, device_facts

StepRange = Callable[[int], AbstractContextManager[Any]]
# Allocator history kept for the snapshot: enough for the whole process with the "small" loop (~4,500
# actions a step: alloc, free_requested, free_completed) with room to spare, bounded so the pickle stays
# a few MB.
SNAPSHOT_MAX_ENTRIES = 400_000


def _our_step(step: int) -> AbstractContextManager[Any]:
    return mark(f"ProfilerStep#{step}", category="profiler_step")


def _kineto_step(step: int) -> AbstractContextManager[Any]:
    return torch.profiler.record_function(f"ProfilerStep#{step}")


def timed_steps(trainer: Trainer, steps: int, step_range: StepRange) -> list[float]:
    """Seconds per step, each step inside its ProfilerStep#N range."""
    times = []
    for step in range(steps):
        started = time.perf_counter()
        with step_range(step):
            trainer.step()
        times.append(time.perf_counter() - started)
    return times


def warm_up(trainer: Trainer, steps: int) -> None:
    # cuBLAS handles, autotuned algorithms, the optimizer's state and the allocator's segments all come
    # into being here, so the timed steps launch the same kernels every time.
    for _ in range(steps):
        trainer.step()


def run_plain(trainer: Trainer, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"plain_s": timed_steps(trainer, args.steps, _our_step)}
    if args.session_data:
        result.update(_session_block(trainer, args))
    result["plain_s"] += timed_steps(trainer, args.steps, _our_step)
    return result


def _session_block(trainer: Trainer, args: argparse.Namespace) -> dict[str, Any]:
    """The timed steps under a CaptureSession (the session API as a user calls it)."""
    from dashboard.capture.session import CaptureError, CaptureSession, CaptureUnavailable

    session = CaptureSession("gpu-check-session", data_dir=args.session_data, layers=False, stacks=False)
    try:
        session.start()
    except (CaptureUnavailable, CaptureError) as exc:
        return {"session_error": str(exc)}
    try:
        times = timed_steps(trainer, args.steps, _our_step)
    finally:
        session.stop()
    return {"session_s": times, "session_run": session.run_id, "session_warnings": session.warnings}


def run_capture(trainer: Trainer, args: argparse.Namespace) -> dict[str, Any]:
    from dashboard.capture.session import active_session

    session = active_session()
    return {"captured": session is not None, "steps_s": timed_steps(trainer, args.steps, _our_step)}


def run_overhead(trainer: Trainer, args: argparse.Namespace) -> dict[str, Any]:
    from tools.gpu_check.overhead import VARIANTS, interleaved

    backend_factory = None
    if not trainer.cuda:  # a CPU run of the check (its tests): the simulated CUPTI
        from dashboard.capture.cupti_fake import FakeCuptiBackend

        backend_factory = FakeCuptiBackend
    features = interleaved(trainer.step, _our_step, rounds=args.rounds, block_steps=args.steps_per_block,
                           backend_factory=backend_factory)
    return {"features": features, "settings": {name: {k: v for k, v in settings.items()}
                                               for name, settings in VARIANTS.items()},
            "rounds": args.rounds, "block_steps": args.steps_per_block}


def run_kineto(trainer: Trainer, args: argparse.Namespace) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if trainer.cuda else [])
    memory: dict[str, Any] = {}
    if trainer.cuda:
        trainer.synchronize()
        stats = torch.cuda.memory_stats()
        memory["max_allocated_before"] = torch.cuda.max_memory_allocated()
        memory["requested_peak_before"] = stats.get("requested_bytes.all.peak")
        # From here the allocator's peak is the profiled window's: comparable with the trace's.
        torch.cuda.reset_peak_memory_stats()
    with profile(activities=activities, profile_memory=True) as prof:
        times = timed_steps(trainer, args.steps, _kineto_step)
    if trainer.cuda:
        memory["max_allocated_window"] = torch.cuda.max_memory_allocated()
        memory["requested_peak_window"] = torch.cuda.memory_stats().get("requested_bytes.all.peak")
    started = time.perf_counter()
    prof.export_chrome_trace(str(args.trace))  # a .gz name is written gzipped
    result: dict[str, Any] = {"steps_s": times, "memory": memory, "trace": str(args.trace),
                              "export_s": time.perf_counter() - started}
    if args.snapshot and trainer.cuda:
        torch.cuda.memory._dump_snapshot(str(args.snapshot))
        torch.cuda.memory._record_memory_history(enabled=None)
        result["snapshot"] = str(args.snapshot)
    elif args.snapshot:
        result["snapshot_error"] = "no CUDA device: the allocator snapshot needs one"
    return result


def record_memory_history() -> None:
    """Record the allocator's history from before the model exists, so the snapshot holds every action."""
    # Python frames only: C++ stacks make the dump symbolize every frame, which takes minutes.
    torch.cuda.memory._record_memory_history(max_entries=SNAPSHOT_MAX_ENTRIES, stacks="python")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("plain", "capture", "overhead", "kineto"), required=True)
    parser.add_argument("--out", type=Path, required=True, help="JSON with step times and facts")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--steps", type=int, default=20, help="timed steps (per block)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--session-data", type=Path, help="plain mode: also time steps under a CaptureSession")
    parser.add_argument("--rounds", type=int, default=16, help="overhead mode: rounds of one block per variant")
    parser.add_argument("--steps-per-block", type=int, default=4, help="overhead mode: timed steps per block")
    parser.add_argument("--trace", type=Path, help="kineto mode: the Chrome trace to write")
    parser.add_argument("--snapshot", type=Path, help="kineto mode: the allocator snapshot to write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.mode == "kineto" and args.trace is None:
        raise SystemExit("workload: --mode kineto needs --trace")
    cuda = args.device.startswith("cuda")
    if args.mode == "kineto" and cuda and args.snapshot is not None:
        record_memory_history()
    started = time.perf_counter()
    trainer = Trainer(SIZES[args.size], args.device)
    warm_up(trainer, args.warmup)
    setup_s = time.perf_counter() - started
    run = {"plain": run_plain, "capture": run_capture, "overhead": run_overhead, "kineto": run_kineto}[args.mode]
    result = run(trainer, args)
    result.update(mode=args.mode, size=args.size, steps=args.steps, warmup=args.warmup, setup_s=setup_s,
                  facts=device_facts(args.device), pid=os.getpid())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial")
    partial.write_text(json.dumps(result, indent=1), encoding="utf-8")
    partial.replace(args.out)


if __name__ == "__main__":
    main()
