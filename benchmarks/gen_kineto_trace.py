"""Write a large, realistic-looking PyTorch-profiler (Kineto) trace for benchmarks.

One "launch unit" is one `cpu_op`, the `cudaLaunchKernel` it makes and the
kernel that runs on the GPU, so `--kernels N` gives about N kernels, N CPU ops
and N runtime calls (plus a few memcpys and one `ProfilerStep#k` per 2,000
units). Forward units run on the main thread, backward units on the autograd
thread with `Sequence number` / `Fwd thread id`, as a real trace has them.
About 870 bytes per unit: 1 M kernels is a ~0.9 GB JSON file.

Formatting is done with string templates in batches so that writing a 1 M
kernel file takes seconds, not minutes.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

MAIN_TID = 4037
AUTOGRAD_TID = 23695
PID = 4037
UNITS_PER_STEP = 2000

_FORWARD_OPS = (
    ("aten::addmm", "[[1024], [512, 1024], [1024, 4096]]", "ampere_sgemm_128x64_tn"),
    ("aten::mm", "[[512, 4096], [4096, 1024]]", "ampere_sgemm_64x64_nn"),
    ("aten::add", "[[512, 1024], [512, 1024], []]",
     "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
    ("aten::relu", "[[512, 4096]]",
     "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar"
     "(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}"
     "::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"),
    ("aten::bmm", "[[16, 128, 64], [16, 64, 128]]", "ampere_sgemm_32x128_nn"),
)
_BACKWARD_OPS = (
    ("AddmmBackward0", "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x2x1"),
    ("aten::mm", "ampere_sgemm_128x64_nt"),
    ("ReluBackward0", "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl"),
)


def _input_types(dims: str) -> str:
    """`Input type` for `Input Dims` as `record_shapes=True` writes it: a dtype per tensor, "Scalar" for a scalar."""
    count = dims.count("], [") + 1
    return "[" + ", ".join('"Scalar"' if i == count - 1 and dims.endswith("[]]") else '"float"'
                           for i in range(count)) + "]"


def _unit_events(unit: int, ts: int, rng: random.Random, correlation: int, forward: bool,
                 record_types: bool = False) -> tuple[str, int]:
    """The three events of one launch unit and the time the unit ends (µs)."""
    op_dur = rng.randint(20, 60)
    if forward:
        name, dims, kernel = _FORWARD_OPS[unit % len(_FORWARD_OPS)]
        tid = MAIN_TID
        op_args = f'"External id": {unit + 1}, "Ev Idx": {unit}, "Input Dims": {dims}, "Sequence number": {unit}'
        if record_types:
            op_args += f', "Input type": {_input_types(dims)}'
    else:
        name, kernel = _BACKWARD_OPS[unit % len(_BACKWARD_OPS)]
        tid = AUTOGRAD_TID
        op_args = f'"External id": {unit + 1}, "Ev Idx": {unit}, "Fwd thread id": 1, "Sequence number": {unit}'
    launch = ts + rng.randint(2, 8)
    kernel_ts = launch + rng.randint(5, 40)
    kernel_dur = rng.randint(3, 400)
    stream = 7 if unit % 5 else 20
    text = (
        f'{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": {PID}, "tid": {tid}, "ts": {ts}, '
        f'"dur": {op_dur}, "args": {{{op_args}}}}},\n'
        f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {PID}, "tid": {tid}, '
        f'"ts": {launch}, "dur": {rng.randint(3, 9)}, "args": {{"External id": {unit + 1}, "cbid": 211, '
        f'"correlation": {correlation}}}}},\n'
        f'{{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": {stream}, "ts": {kernel_ts}, '
        f'"dur": {kernel_dur}, "args": {{"External id": {unit + 1}, "queued": 0, "device": 0, "context": 1, '
        f'"stream": {stream}, "correlation": {correlation}, "registers per thread": 72, '
        f'"shared memory": 16384, "blocks per SM": 0.8, "warps per SM": 3.2, "grid": [128, 4, 1], '
        f'"block": [128, 1, 1], "est. achieved occupancy %": 12}}}},\n'
    )
    return text, ts + op_dur + rng.randint(1, 5)


def write_trace(path: Path, kernels: int, seed: int = 0, rank: int = 0, record_types: bool = False) -> Path:
    """Write a trace with about `kernels` kernels to `path` (plain JSON) and return it; `record_types` adds
    `Input type` beside every `Input Dims` (as `record_shapes=True` writes them)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = 1_700_000_000_000_000
    with open(path, "w", encoding="utf-8") as out:
        out.write(
            '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
            '"totalGlobalMem": 85198045184, "computeMajor": 8, "computeMinor": 0, "numSms": 108}], '
            f'"distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 8}}, '
            '"record_shapes": 1, "traceEvents": [\n'
        )
        batch: list[str] = []
        step_start = ts
        for unit in range(kernels):
            if unit % UNITS_PER_STEP == 0:
                step_start = ts
            forward = (unit // 500) % 2 == 0
            text, ts = _unit_events(unit, ts, rng, correlation=1_000_000 + unit, forward=forward,
                                    record_types=record_types)
            batch.append(text)
            if unit % 1000 == 999:
                batch.append(
                    f'{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, '
                    f'"tid": 7, "ts": {ts}, "dur": 12, "args": {{"device": 0, "context": 1, "stream": 7, '
                    f'"correlation": {unit}, "bytes": 1048576, "memory bandwidth (GB/s)": 87.4}}}},\n'
                )
            if unit % UNITS_PER_STEP == UNITS_PER_STEP - 1 or unit == kernels - 1:
                batch.append(
                    f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{unit // UNITS_PER_STEP}", '
                    f'"pid": {PID}, "tid": {MAIN_TID}, "ts": {step_start}, "dur": {ts - step_start + 1}, '
                    f'"args": {{"External id": {unit + 10_000_000}}}}},\n'
                )
                ts += 2
            if len(batch) >= 4096:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))
        out.write(
            '{"name": "process_labels", "ph": "M", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}\n'
            "]}\n"
        )
    return path


def cached_trace(folder: Path, kernels: int, record_types: bool = False) -> Path:
    """The benchmark trace with `kernels` kernels, generated once under `folder/k<kernels>/` (alone in its
    folder: HTA loads every trace of a folder); `record_types`: under `folder/k<kernels>-types/`, with
    `Input type` beside `Input Dims`."""
    trace = folder / f"k{kernels}{'-types' if record_types else ''}" / "bench_rank-0.pt.trace.json"
    if not trace.exists():
        print(f"generating {trace} ...")
        write_trace(trace, kernels, record_types=record_types)
    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record-types", action="store_true", help="`Input type` beside every `Input Dims`")
    args = parser.parse_args()
    out = write_trace(args.path, args.kernels, args.seed, record_types=args.record_types)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
