"""What each live-capture feature adds to a training step, as % of the step without capture.

    python benchmarks/capture_overhead.py                 # the device check's GPT on the GPU, real CUPTI
    python benchmarks/capture_overhead.py --cpu           # the same on CPU (size tiny), simulated CUPTI
    python benchmarks/capture_overhead.py --rounds 16 --steps-per-block 4 --size small

The loop is tools/gpu_check/model.py's (a GPT in bf16: forward, loss, backward, AdamW, each step
synchronised), the measurement tools/gpu_check/overhead.py's: blocks of steps without capture and under
a CaptureSession per feature set (CUPTI only, + layers in their default form, + layers full, + FLOPs,
Python stacks, the capture command's defaults), interleaved round by round, so drift is shared. Printed
per set: median step time, and the overhead by median wall time (the device check's verdict), by 10th
percentile and by process CPU time. On CPU the capture's Python cost is what shows (the simulated CUPTI
costs little); a launch-bound GPU loop shows the same Python cost plus CUPTI's own. Without a GPU, CUDA
torch or cupti-python the GPU mode says what is missing and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _missing_gpu() -> str | None:
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    from dashboard.capture.cupti_backend import probe

    reason = probe()
    return f"CUPTI unavailable: {reason}" if reason else None


def _low(values: list[float]) -> float:
    return sorted(values)[len(values) // 10]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="CPU and the simulated CUPTI (no GPU needed)")
    parser.add_argument("--size", choices=("tiny", "small"), help="model size (default: small on GPU, tiny on CPU)")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--steps-per-block", type=int, default=4)
    args = parser.parse_args(argv)

    try:
        import torch  # noqa: F401  (the loop needs it)
    except ImportError:
        print("capture_overhead: needs torch; nothing measured")
        return 0
    if not args.cpu and (missing := _missing_gpu()):
        print(f"capture_overhead: the GPU mode needs an NVIDIA GPU, CUDA torch and cupti-python ({missing}); "
              "nothing measured (--cpu measures the capture's Python cost on this CPU)")
        return 0

    from dashboard import mark
    from dashboard.capture.cupti_fake import FakeCuptiBackend
    from tools.gpu_check.model import SIZES, Trainer
    from tools.gpu_check.overhead import NO_CAPTURE, VARIANTS, interleaved

    device = "cpu" if args.cpu else "cuda"
    size = args.size or ("tiny" if args.cpu else "small")
    trainer = Trainer(SIZES[size], device)
    for _ in range(5):
        trainer.step()
    started = time.perf_counter()
    results = interleaved(trainer.step, lambda step: mark(f"ProfilerStep#{step}", category="profiler_step"),
                          rounds=args.rounds, block_steps=args.steps_per_block,
                          backend_factory=FakeCuptiBackend if args.cpu else None)
    took = time.perf_counter() - started

    base = results[NO_CAPTURE]
    base_wall, base_low = statistics.median(base["steps_s"]), _low(base["steps_s"])
    base_cpu = statistics.median(base["cpu_s"])
    print(f"{device}, size {size}: {args.rounds} rounds x {args.steps_per_block} timed steps a block, {took:.0f} s")
    print(f"{'feature set':<12} {'ms/step':>9} {'median':>8} {'p10':>8} {'CPU':>8}  settings")
    for name, result in results.items():
        wall, low = statistics.median(result["steps_s"]), _low(result["steps_s"])
        cpu = statistics.median(result["cpu_s"])
        settings = VARIANTS.get(name, "no capture")
        print(f"{name:<12} {wall * 1e3:>9.2f} {wall / base_wall - 1:>+8.1%} {low / base_low - 1:>+8.1%} "
              f"{cpu / base_cpu - 1:>+8.1%}  {settings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
