"""Overhead of live capture on a small training loop, as % of the uncaptured step time.

    python benchmarks/capture_overhead.py [--steps 50] [--repeats 3]

Times the same loop (a small MLP-transformer-ish stack, forward + backward +
AdamW) without capture, then under CaptureSession with growing feature sets:
kernels only, + layers, + FLOPs, + Python stacks. Each variant's time is the
median over repeats, wall clock with torch.cuda.synchronize() around the
loop (never inside it). Needs an NVIDIA GPU, CUDA torch and cupti-python;
without them it says what is missing and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def _missing() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    from dashboard.capture.cupti_backend import probe

    reason = probe()
    return f"CUPTI unavailable: {reason}" if reason else None


def _workload(width: int, depth: int) -> Callable[[int], None]:
    import torch

    nn = torch.nn
    layers: list[Any] = []
    for _ in range(depth):
        layers += [nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)]
    model = nn.Sequential(*layers, nn.Linear(width, 10)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = torch.randn(256, width, device="cuda")

    def run(steps: int) -> None:
        for _ in range(steps):
            loss = model(batch).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return run


def _timed(run: Callable[[int], None], steps: int, session_factory: Callable[[], Any] | None) -> float:
    import torch

    torch.cuda.synchronize()
    started = time.perf_counter()
    if session_factory is None:
        run(steps)
        torch.cuda.synchronize()
    else:
        with session_factory():
            run(steps)
            torch.cuda.synchronize()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=6)
    args = parser.parse_args(argv)

    missing = _missing()
    if missing:
        print(f"capture_overhead: needs an NVIDIA GPU with CUDA torch and cupti-python ({missing}); nothing measured")
        return 0

    from dashboard.capture.session import CaptureSession

    run = _workload(args.width, args.depth)
    run(5)  # warm-up: cuBLAS handles, allocator, lazy init

    variants: list[tuple[str, Callable[[], Any] | None]] = [
        ("no capture", None),
        ("kernels + copies + API", lambda: CaptureSession("bench", layers=False)),
        ("+ layers", lambda: CaptureSession("bench", layers=True, flops=False)),
        ("+ layers + FLOPs", lambda: CaptureSession("bench", layers=True, flops=True)),
        ("+ layers + FLOPs + stacks", lambda: CaptureSession("bench", layers=True, flops=True, stacks=True)),
    ]
    results: dict[str, float] = {}
    for name, factory in variants:
        times = [_timed(run, args.steps, factory) for _ in range(args.repeats)]
        results[name] = statistics.median(times)

    baseline = results["no capture"]
    print(f"{args.steps} steps, width {args.width}, depth {args.depth}, median of {args.repeats}")
    print(f"{'variant':<28} {'ms/step':>9} {'overhead':>9}")
    for name, seconds in results.items():
        per_step = seconds / args.steps * 1e3
        overhead = (seconds / baseline - 1.0) * 100.0
        print(f"{name:<28} {per_step:>9.2f} {overhead:>8.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
