"""A generated MLIR_ENABLE_DUMP log for add_kernel, for demos on machines without Triton.

The IR follows what Triton 3.x prints for this kernel (TTIR, TTGIR with a
blocked layout, the LLVM dialect), shortened; locations point at the demo's
kernel file so the page maps IR lines to its Python lines.
"""

from __future__ import annotations

from pathlib import Path

_HEADER = "// -----// IR Dump Before {name}: {arg} ('builtin.module' operation) //----- //"
_INTERNAL = "// -----// SoftwarePipeliner internal IR Dump After: {name}"


def _locs(file: Path) -> dict[str, str]:
    lines = file.read_text().split("\n")
    start = next(i for i, line in enumerate(lines, start=1) if line.startswith("def add_kernel"))
    return {"file": str(file), "def": str(start), **{f"l{k}": str(start + k) for k in range(1, 7)}}


def _ttir(block: int, loc: dict[str, str], folded: bool) -> str:
    offs = (f"    %offs = arith.muli %pid, %c{block}_i32 : i32 loc(#loc2)\n" if folded else
            f"    %c{block}_i32 = arith.constant {block} : i32 loc(#loc2)\n"
            f"    %offs = arith.muli %pid, %c{block}_i32 : i32 loc(#loc2)\n")
    return (
        f'#loc = loc("{loc["file"]}":{loc["def"]}:0)\n'
        f"module {{\n"
        f"  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32>, %y_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, "
        f"%n: i32) attributes {{noinline = false}} {{\n"
        f"    %pid = tt.get_program_id x : i32 loc(#loc1)\n"
        f"{offs}"
        f"    %range = tt.make_range {{end = {block} : i32, start = 0 : i32}} : tensor<{block}xi32> loc(#loc3)\n"
        f"    %base = tt.splat %offs : i32 -> tensor<{block}xi32> loc(#loc2)\n"
        f"    %offsets = arith.addi %base, %range : tensor<{block}xi32> loc(#loc2)\n"
        f"    %bound = tt.splat %n : i32 -> tensor<{block}xi32> loc(#loc4)\n"
        f"    %mask = arith.cmpi slt, %offsets, %bound : tensor<{block}xi32> loc(#loc4)\n"
        f"    %xp = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<{block}x!tt.ptr<f32>> loc(#loc5)\n"
        f"    %xa = tt.addptr %xp, %offsets : tensor<{block}x!tt.ptr<f32>>, tensor<{block}xi32> loc(#loc5)\n"
        f"    %x = tt.load %xa, %mask : tensor<{block}x!tt.ptr<f32>> loc(#loc5)\n"
        f"    %yp = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<{block}x!tt.ptr<f32>> loc(#loc6)\n"
        f"    %ya = tt.addptr %yp, %offsets : tensor<{block}x!tt.ptr<f32>>, tensor<{block}xi32> loc(#loc6)\n"
        f"    %y = tt.load %ya, %mask : tensor<{block}x!tt.ptr<f32>> loc(#loc6)\n"
        f"    %sum = arith.addf %x, %y : tensor<{block}xf32> loc(#loc7)\n"
        f"    %op = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<{block}x!tt.ptr<f32>> loc(#loc7)\n"
        f"    %oa = tt.addptr %op, %offsets : tensor<{block}x!tt.ptr<f32>>, tensor<{block}xi32> loc(#loc7)\n"
        f"    tt.store %oa, %sum, %mask : tensor<{block}x!tt.ptr<f32>> loc(#loc7)\n"
        f"    tt.return loc(#loc)\n"
        f"  }} loc(#loc)\n"
        f"}} loc(#loc)\n"
        + "".join(f'#loc{k} = loc("{loc["file"]}":{loc[f"l{k}"]}:{4 + k})\n' for k in range(1, 7))
        + f'#loc7 = loc("{loc["file"]}":{loc["l6"]}:26)\n'
    )


def _ttgir(ttir: str, block: int, allocated: bool) -> str:
    layout = "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>\n"
    shared = ", ttg.shared = 4096 : i32" if allocated else ""
    text = ttir.replace("module {", '#smem = #ttg.shared_memory\nmodule attributes {"ttg.num-ctas" = 1 : i32, '
                        f'"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32'
                        f"{shared}}} {{", 1)
    text = text.replace("xi32>", "xi32, #blocked>").replace("xf32>", "xf32, #blocked>")
    text = text.replace("x!tt.ptr<f32>>", "x!tt.ptr<f32>, #blocked>")
    staging = (f"    %stage = ttg.local_alloc %x {{allocation.offset = 0 : i32}} : (tensor<{block}xf32, #blocked>) -> "
               f"!ttg.memdesc<{block}xf32, #shared, #smem> loc(#loc5)\n" if allocated else "")
    text = text.replace("    %sum = ", staging + "    %sum = ", 1)
    return layout + text


def _llvm(block: int, loc: dict[str, str]) -> str:
    body = "".join(f"    %{k} = llvm.add %{k - 1}, %{k - 1} : i32 loc(#loc{1 + k % 6})\n"
                   for k in range(1, 4 * block // 256))
    return (
        f'#loc = loc("{loc["file"]}":{loc["def"]}:0)\n'
        'module attributes {"ttg.num-warps" = 4 : i32, ttg.shared = 4096 : i32, ttg.target = "cuda:90"} {\n'
        "  llvm.func @add_kernel(%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr<1>, %arg2: !llvm.ptr<1>, %arg3: i32) "
        "attributes {nvvm.kernel = 1 : ui1, nvvm.reqntid = array<i32: 128>} {\n"
        "    %0 = nvvm.read.ptx.sreg.ctaid.x : i32 loc(#loc1)\n"
        f"{body}"
        "    llvm.return loc(#loc)\n"
        "  } loc(#loc)\n"
        "} loc(#loc)\n"
        + "".join(f'#loc{k} = loc("{loc["file"]}":{loc[f"l{k}"]}:4)\n' for k in range(1, 7))
    )


def generated_log(kernels: Path) -> str:
    """The log text: program output, then two compiles of add_kernel."""
    loc = _locs(kernels)
    out = ["Compiling the demo kernels (generated log: Triton is not installed here)"]
    for block in (1024, 2048):
        ttir, folded = _ttir(block, loc, False), _ttir(block, loc, True)
        plain, allocated = _ttgir(folded, block, False), _ttgir(folded, block, True)
        llvm = _llvm(block, loc)
        passes = [
            ("InlinerPass", "inline", ttir), ("CanonicalizerPass", "canonicalize", ttir),
            ("CSEPass", "cse", folded), ("ConvertTritonToTritonGPU",
                                         "convert-triton-to-tritongpu{num-warps=4 target=cuda:90}", folded),
            ("TritonGPUCoalesce", "tritongpu-coalesce", plain),
            ("TritonGPURemoveLayoutConversions", "tritongpu-remove-layout-conversions", plain),
            ("TritonGPUPipeline", "tritongpu-pipeline{num-stages=3}", plain),
            ("internal:ExpandLoops", "", plain),
            ("AllocateSharedMemoryNv", "allocate-shared-memory-nv{compute-capability=90}", plain),
            ("ConvertTritonGPUToLLVM", "convert-triton-gpu-to-llvm{compute-capability=90}", allocated),
            ("CanonicalizerPass", "canonicalize", llvm), ("CSEPass", "cse", llvm),
        ]
        for name, arg, body in passes:
            if name.startswith("internal:"):
                out.append(_INTERNAL.format(name=name.split(":", 1)[1]))
                out.append(body.split("#loc1 =")[0].rstrip("\n"))
            else:
                out.append(_HEADER.format(name=name, arg=arg))
                out.append(body.rstrip("\n"))
            out.append("\n")
    return "\n".join(out) + "\n"
