"""Generated canonical kernel-side tables (kernels, memcpy, ranges, api_calls) for export and server tests.

Deterministic: a fixed seed, epoch-nanosecond timestamps (as real traces
have), two ranks, two GPUs on rank 1, several streams, CPU thread ids too
large for 32 bits, and API calls whose correlation ids launch the kernels.
"""

from __future__ import annotations

import random

import polars as pl

from dashboard import schema

EPOCH_NS = 1_761_000_000_123_456_789
KERNEL_NAMES = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)",
    "ampere_sgemm_128x64_tn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(Params)",
    "flash_fwd_kernel",
)
CPU_THREAD = 139_872_331_290_432  # a pthread id: does not fit in 32 bits


def kernel_tables(kernels_per_stream: int = 40, seed: int = 7) -> dict[str, pl.DataFrame]:
    """kernels, memcpy, ranges and api_calls of a small two-rank run."""
    rng = random.Random(seed)
    tracks = [(0, 0, 7), (0, 0, 13), (1, 0, 7), (1, 1, 21)]  # (rank, device, stream)
    kernel_rows, api_rows = [], []
    correlation = 100
    for rank, device, stream in tracks:
        start = EPOCH_NS + rank * 1_000 + stream
        for index in range(kernels_per_stream):
            gap = rng.randrange(100, 5_000)
            duration = rng.randrange(1_000, 90_000)
            start += gap
            correlation += 1
            kernel_rows.append({"rank": rank, "device": device, "stream": stream, "correlation": correlation,
                                "name": KERNEL_NAMES[index % len(KERNEL_NAMES)], "start_ns": start,
                                "end_ns": start + duration, "grid_x": 128, "grid_y": 1, "grid_z": 1,
                                "block_x": 256, "block_y": 1, "block_z": 1, "registers": 32,
                                "shared_memory": 4096, "op": "aten::add", "layer": "model.layer1",
                                "pass": "forward"})
            api_rows.append({"rank": rank, "thread": CPU_THREAD + rank, "name": "cudaLaunchKernel",
                             "category": "cuda_runtime", "correlation": correlation,
                             "start_ns": start - 900, "end_ns": start - 400})
            start += duration
    kernels = schema.conform("kernels", pl.DataFrame(kernel_rows))
    memcpy = schema.conform("memcpy", pl.DataFrame({
        "rank": [0, 0, 1], "device": [0, 0, 1], "stream": [7, 7, 21], "correlation": [1, 2, 3],
        "kind": ["HtoD", "Memset", "DtoH"], "bytes": [1 << 20, 4096, 1 << 22],
        "start_ns": [EPOCH_NS - 50_000, EPOCH_NS - 30_000, EPOCH_NS - 20_000],
        "end_ns": [EPOCH_NS - 40_001, EPOCH_NS - 29_000, EPOCH_NS - 10_000],
    }))
    end = int(kernels.get_column("end_ns").max())  # type: ignore[arg-type]
    ranges = schema.conform("ranges", pl.DataFrame({
        "rank": [0, 0, 0, 1],
        "id": [1, 2, 3, 1],
        "device": [None, None, 0, None],
        "thread": [CPU_THREAD, CPU_THREAD, 7, CPU_THREAD + 1],
        "name": ["ProfilerStep#3", "aten::linear", "gpu annotation", "ProfilerStep#3"],
        "category": ["profiler_step", "cpu_op", "gpu_user_annotation", "profiler_step"],
        "start_ns": [EPOCH_NS - 60_000, EPOCH_NS - 59_000, EPOCH_NS, EPOCH_NS - 60_000],
        "end_ns": [end, end - 10, end - 5_000, end],
        "depth": [0, 1, 0, 0], "parent": [None, 1, None, None], "pass": ["none", "forward", "none", "none"],
    }))
    api_calls = schema.conform("api_calls", pl.DataFrame(api_rows))
    return {"kernels": kernels, "memcpy": memcpy, "ranges": ranges, "api_calls": api_calls}
