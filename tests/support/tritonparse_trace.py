"""Write a real tritonparse trace on a machine without a GPU: `python -m tests.support.tritonparse_trace OUT`.

Compiles are real: tritonparse's compilation listener is installed by `tritonparse.structured_logging.init`
and `triton.compile` (an explicit GPUTarget, as the compiler tests do) calls it with every stage's IR.
Launches and the autotuner's verdict need a GPU to happen, so they are written by tritonparse's own writer
code with what a launch would hand it: the launch hook (`knobs.runtime.launch_enter_hook`) gets the
`LazyDict` that `CompiledKernel.launch_metadata` builds (name, stream, then tritonparse's
`add_launch_metadata(grid, metadata, args)` with CPU tensors as arguments), and the autotune listener gets
the JITFunction, the two `triton.Config`s and timings that say config 1 won, as the
Autotuner calls it.

What it writes, and what the tests count on (`EXPECTED`): two compiles of `add_kernel` (BLOCK 256 and
1024, the two autotune configs) and one of `scale_kernel`; launches: add_kernel 3 x with BLOCK 1024
(grid 4), 1 x with BLOCK 256 (grid 16), scale_kernel 2 x (grid 8, then 2); one autotune record.
"""

from __future__ import annotations

import sys
from pathlib import Path

EXPECTED = {
    "compiles": 3,
    "launches": {"add_kernel": 4, "scale_kernel": 2},
    "grids": {("add_kernel", 256): [(16, 1, 1)], ("add_kernel", 1024): [(4, 1, 1)] * 3,
              ("scale_kernel", 128): [(8, 1, 1), (2, 1, 1)]},
    "autotune_best": "BLOCK: 1024, num_warps: 8",
}


def main(out: Path) -> None:
    import tritonparse.structured_logging as tracing

    tracing.init(str(out), enable_trace_launch=True)
    import torch
    import triton
    import triton.language as tl
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import LazyDict

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

    target = GPUTarget("cuda", 90, 32)
    add_sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)]
    compiled = {}
    for config in configs:
        source = ASTSource(fn=add_kernel, signature=add_sig, constexprs=dict(config.kwargs))
        compiled[config.kwargs["BLOCK"]] = triton.compile(source, target=target,
                                                          options={"num_warps": config.num_warps})
    scale = triton.compile(ASTSource(fn=scale_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                                                 "BLOCK": "constexpr"}, constexprs={"BLOCK": 128}),
                           target=target)
    # tritonparse's JIT hook sets this on every jitted function it sees; a launch calls it (compiler.py).
    for function in (add_kernel, scale_kernel):
        tracing.JITHookImpl()(key="", repr="", fn=function, compile=None, is_manual_warmup=False,
                              already_compiled=True)

    def launch(kernel, function, grid, *args) -> None:
        metadata = LazyDict({"name": kernel.name, "function": None, "stream": 0})
        # As compiler.py pairs them: constexpr parameters (BLOCK) are not passed at launch.
        named = dict(zip(function.arg_names, args, strict=False))
        metadata.add(function.launch_metadata, (grid, kernel.metadata, named))
        knobs.runtime.launch_enter_hook(metadata)

    n = 4096
    x, y, z = (torch.ones(n) for _ in range(3))
    launch(compiled[256], add_kernel, (16, 1, 1), x, y, z, n)  # the autotuner's benchmark of config 0
    for _ in range(3):
        launch(compiled[1024], add_kernel, (4, 1, 1), x, y, z, n)
    launch(scale, scale_kernel, (8, 1, 1), x, z, 1024)
    launch(scale, scale_kernel, (2, 1, 1), x, z, 256)
    # As triton/runtime/autotuner.py calls it once the configs are benchmarked: the JITFunction, the key
    # (the key arguments' values, then the tensors' dtypes).
    knobs.autotuning.listener(fn=add_kernel, key=(n, "torch.float32", "torch.float32", "torch.float32"),
                              best_config=configs[1], configs_timings={configs[0]: [0.021], configs[1]: [0.012]},
                              duration=0.4, cache_hit=False)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
