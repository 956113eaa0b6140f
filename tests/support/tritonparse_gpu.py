"""A real tritonparse trace on a GPU: compiles, launches and an autotuning, as a user's program makes them.

    python -m tests.support.tritonparse_gpu OUT    # OUT/raw/*.ndjson, OUT/parsed/*_mapped.ndjson.gz

`add_kernel` is autotuned over two configs (key `n`), then launched 3 more times on n = 4096 (the cached
winner) and once on n = 1024 (a second autotuning); `scale_kernel` is launched twice without autotuning.
Run on the project's device machine; its output is the ground truth `tests/data/gpu/` keeps (see README there).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(out: Path) -> None:
    import tritonparse.structured_logging as tracing

    tracing.init(str(out / "raw"), enable_trace_launch=True)
    import torch
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)]

    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

    for n in (4096, 4096, 4096, 4096, 1024):
        x, y = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
        z = torch.empty_like(x)
        add_kernel[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](x, y, z, n)
        torch.cuda.synchronize()
        assert torch.equal(z, x + y)
    for n in (1024, 256):
        x = torch.ones(n, device="cuda")
        z = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 128),)](x, z, n, BLOCK=128)
    torch.cuda.synchronize()
    print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
