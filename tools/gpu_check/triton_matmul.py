"""The device check's Triton stage: one matmul kernel compiled for the GPU it runs on, and checked.

    MLIR_ENABLE_DUMP=1 python tools/gpu_check/triton_matmul.py --out triton.json 2> mlir_dump.txt

Triton prints every MLIR pass dump on stderr while it compiles (the caller sets TRITON_ALWAYS_COMPILE=1,
so the kernel is compiled, not loaded from a cache). `tl.dot` on Hopper goes through the
warp-group MMA lowering, the interesting part of the pipeline. The result is compared with torch's
matmul, and the target Triton compiled for goes to --out with the device's capability: the dump's
`ttg.target` must name the same `cuda:<major><minor>`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

M = N = K = 512
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("triton stage: no CUDA device visible to torch")
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    torch.cuda.synchronize()
    error = (c.float() - (a.float() @ b.float())).abs().max().item()
    major, minor = torch.cuda.get_device_capability()
    result = {"triton": triton.__version__, "expected_target": f"cuda:{major}{minor}", "max_abs_error": error,
              # fp16 output of a K=512 fp32-accumulated product: a few ulps of values up to ~100.
              "correct": error < 0.5}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    print(json.dumps(result), file=sys.stdout)


if __name__ == "__main__":
    main()
