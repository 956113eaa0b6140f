"""A small training-like run for the /kernels and /layers browser tests.

Two ranks, a few steps of forward and backward through four layers, with
GPU-side module ranges (one per layer occurrence), FLOPs on the GEMMs and
the attention kernel (null elsewhere), and H100 device properties in the
metadata. Deterministic, a few thousand rows.
"""

from __future__ import annotations

import random

import polars as pl

from dashboard import schema

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_kernel__5x_cublas"
GEMM_BWD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize2x1x1_kernel__5x_cublas"
ATTENTION = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 4>, false, true>(flash::Flash_fwd_params)"
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
NORM = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)"
EMBED = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long>(long)"
# (layer, forward kernels, backward kernels); a kernel is (name, op, mean duration ns, flops or None).
MODEL = (
    ("embed", [(EMBED, "aten::embedding", 40_000, None)], [(ADD, "EmbeddingBackward0", 30_000, None)]),
    ("blocks.0.attn", [(NORM, "aten::layer_norm", 20_000, None), (GEMM, "aten::addmm", 300_000, 1.8e11),
                       (ATTENTION, "FlashAttnFunc", 250_000, 1.2e11)],
     [(GEMM_BWD, "AddmmBackward0", 600_000, 3.6e11), (NORM, "NativeLayerNormBackward0", 30_000, None)]),
    ("blocks.0.mlp", [(GEMM, "aten::addmm", 500_000, 3e11), (ADD, "aten::add", 15_000, None)],
     [(GEMM_BWD, "AddmmBackward0", 900_000, 6e11), (ADD, "AddBackward0", 15_000, None)]),
    ("head", [(GEMM, "aten::mm", 200_000, 1.2e11)], [(GEMM_BWD, "MmBackward0", 400_000, 2.4e11)]),
)
DEVICE_METADATA = {"kineto": {"files": [{"rank": 0, "deviceProperties": [
    {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]}]}}


def layered_tables(steps: int = 6, ranks: int = 2, seed: int = 3) -> dict[str, pl.DataFrame]:
    """kernels and ranges (module ranges on the compute stream) of a small training run."""
    rng = random.Random(seed)
    kernels, modules = [], []
    correlation = 0
    for rank in range(ranks):
        clock = 1_000_000 + rank * 7_000
        for _ in range(steps):
            forward = [(layer, "forward", ks) for layer, ks, _ in MODEL]
            backward = [(layer, "backward", ks) for layer, _, ks in reversed(MODEL)]
            for layer, pass_, launches in forward + backward:
                first = clock
                for name, op, duration, flops in launches:
                    took = int(duration * rng.uniform(0.8, 1.3) * (1.0 + 0.1 * rank))
                    correlation += 1
                    kernels.append({"rank": rank, "device": rank, "stream": 7, "correlation": correlation,
                                    "name": name, "start_ns": clock, "end_ns": clock + took, "grid_x": 132,
                                    "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1, "block_z": 1,
                                    "registers": 128 if flops else 32, "shared_memory": 65536 if flops else 0,
                                    "op": op, "layer": layer, "pass": pass_, "flops": flops})
                    clock += took + 2_000
                layer_flops = [f for _, _, _, f in launches if f is not None]
                modules.append({"rank": rank, "device": rank, "thread": 7, "name": layer, "category": "module",
                                "start_ns": first, "end_ns": clock - 2_000, "depth": 0, "pass": pass_,
                                "layer": layer, "flops": sum(layer_flops) if layer_flops else None})
            clock += 300_000
    ranges = pl.DataFrame(modules).with_columns(pl.int_range(pl.len()).over("rank").alias("id"))
    return {"kernels": schema.conform("kernels", pl.DataFrame(kernels)), "ranges": schema.conform("ranges", ranges)}
