"""Small Triton compiler outputs written by the tests themselves (never copied from ../shared)."""

from __future__ import annotations

from pathlib import Path

PY = "/src/kernels.py"


def ttir(kernel: str, block: int, extra_op: bool = False) -> str:
    extra = f"    %e = arith.addi %r, %r : tensor<{block}xi32> loc(#loc3)\n" if extra_op else ""
    return (
        f'#loc = loc("{PY}":5:0)\n'
        f'#loc1 = loc("{PY}":6:10)\n'
        f'#loc2 = loc("{PY}":7:12)\n'
        f'#loc3 = loc("x"(#loc2))\n'
        f'#loc4 = loc("/venv/triton/language/standard.py":40:3)\n'
        f"#loc5 = loc(callsite(#loc4 at #loc1))\n"
        f"#loc6 = loc(fused[#loc1, #loc2])\n"
        f"module {{\n"
        f"  tt.func public @{kernel}(%p: !tt.ptr<f32>) attributes {{noinline = false}} {{\n"
        f"    %pid = tt.get_program_id x : i32 loc(#loc1)\n"
        f"    %r = tt.make_range {{end = {block} : i32, start = 0 : i32}} : tensor<{block}xi32> loc(#loc3)\n"
        f"{extra}"
        f"    %m = tt.reduce %r : tensor<{block}xi32> loc(#loc5)\n"
        f"    %s = scf.for %i = %pid to %pid step %pid iter_args(%a = %pid) -> (i32) : i32 {{\n"
        f"      scf.yield %a : i32 loc(#loc6)\n"
        f"    }} loc(#loc6)\n"
        f"    tt.return loc(#loc)\n"
        f"  }} loc(#loc)\n"
        f"}} loc(#loc)\n"
    )


def ttgir(kernel: str, block: int, target: str = "cuda:90", warps: int = 4, shared: int | None = None) -> str:
    attrs = f'"ttg.num-warps" = {warps} : i32, ttg.target = "{target}"'
    if shared is not None:
        attrs += f", ttg.shared = {shared} : i32, ttg.tensor_memory_size = 128 : i32"
    alloc = ("    %buf = ttg.local_alloc %r {allocation.offset = 1024 : i32} : (tensor<128x64xf16, #blocked>) -> "
             "!ttg.memdesc<128x64xf16, #shared, #smem> loc(#loc2)\n"
             "    %acc = ttng.tmem_alloc {tensor_memory_col_offset = 0 : i32, tensor_memory_row_offset = 0 : i32} : "
             "() -> !ttg.memdesc<128x64xf32, #tmem, #ttng.tensor_memory, mutable> loc(#loc2)\n"
             if shared is not None else "")
    return ttir(kernel, block).replace("module {", f"module attributes {{{attrs}}} {{").replace(
        "    tt.return", alloc + "    ttg.barrier loc(#loc1)\n    tt.return")


def llvm_dialect(kernel: str) -> str:
    return (
        f'#loc = loc("{PY}":5:0)\n'
        f'module attributes {{"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"}} {{\n'
        f"  llvm.func @{kernel}(%arg0: !llvm.ptr<1>) attributes {{nvvm.kernel = 1 : ui1}} {{\n"
        f'    %0 = nvvm.read.ptx.sreg.ctaid.x : i32 loc("{PY}":6:10)\n'
        f"    %1 = llvm.add %0, %0 : i32 loc(#loc)\n"
        f"    llvm.return loc(#loc)\n"
        f"  }} loc(#loc)\n"
        f"}} loc(#loc)\n"
    )


def without_aliases(text: str) -> str:
    """The body as the pipeliner prints its snapshots: no `#loc` alias lines."""
    return "\n".join(line for line in text.split("\n") if not line.startswith("#loc"))


def header(pass_name: str, arg: str, old: bool = False, kind: str = "Before", func: str | None = None) -> str:
    anchor = f"('tt.func' operation: @{func})" if func else "('builtin.module' operation)"
    if old:
        return f"// -----// IR Dump {kind} {pass_name} ({arg}) {anchor} //----- //"
    return f"// -----// IR Dump {kind} {pass_name}: {arg} {anchor} //----- //"


def compile_log(kernel: str, block: int, old: bool = False, failed: bool = False, noise: bool = False) -> str:
    """One compile: 3 TTIR dumps (one unchanged), a function-scope dump, 3 TTGIR (one internal), 1 LLVM."""
    parts: list[tuple[str, str]] = [
        (header("InlinerPass", "inline{max-iterations=4 }", old), ttir(kernel, block, extra_op=True)),
        (header("CanonicalizerPass", "canonicalize", old, func=kernel),
         ttir(kernel, block).split("module {")[1].split("\n", 1)[1].rsplit("}", 1)[0]),
        (header("CSEPass", "cse", old), ttir(kernel, block)),
        (header("ConvertTritonToTritonGPU", "convert-triton-to-tritongpu{num-warps=4 target=cuda:90}", old),
         ttir(kernel, block)),
        (header("TritonGPUPipeline", "tritongpu-pipeline{num-stages=3}", old), ttgir(kernel, block)),
        ("// -----// SoftwarePipeliner internal IR Dump After: LowerLoops", without_aliases(ttgir(kernel, block))),
        (header("AllocateSharedMemoryNv", "allocate-shared-memory-nv", old), ttgir(kernel, block)),
        (header("ConvertTritonGPUToLLVM", "convert-triton-gpu-to-llvm", old),
         ttgir(kernel, block, shared=17408)),
        (header("CanonicalizerPass", "canonicalize", old), llvm_dialect(kernel)),
    ]
    if failed:
        parts.append((header("TritonGPUPipeline Failed", "cse", old, kind="After"), llvm_dialect(kernel)))
    out = []
    for number, (head, body) in enumerate(parts):
        if noise and number == 3:
            out.append("UserWarning: something the program printed\nstep 1 loss 0.25")
        out.append(f"{head}\n{body.rstrip()}\n\n")
    return "\n".join(out)


def with_extra_pass(kernel: str, block: int) -> str:
    """compile_log with one more TTIR pass (LoopUnrollPass) after CSEPass, whose input is CSE's output."""
    log = compile_log(kernel, block)
    marker = header("ConvertTritonToTritonGPU", "convert-triton-to-tritongpu{num-warps=4 target=cuda:90}")
    extra = f"{header('LoopUnrollPass', 'loop-unroll')}\n{ttir(kernel, block).rstrip()}\n\n\n"
    return log.replace(marker, extra + marker, 1)


LLVM_LOG = (
    "Running pass: Annotation2MetadataPass on [module]\n"
    "; *** IR Dump After Annotation2MetadataPass on [module] ***\n"
    "; ModuleID = 'LLVMDialectModule'\n"
    "\n"
    "define ptx_kernel void @add_kernel(ptr addrspace(1) %0) #0 !dbg !4 {\n"
    "  %2 = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x(), !dbg !7\n"
    "  ret void, !dbg !8\n"
    "}\n"
    "\n"
    'attributes #0 = { "target-cpu"="sm_90a" }\n'
    '!1 = !DIFile(filename: "kernels.py", directory: "/src")\n'
    '!4 = distinct !DISubprogram(name: "add_kernel", scope: !1, file: !1, line: 5)\n'
    "!7 = !DILocation(line: 6, column: 10, scope: !4)\n"
    "!8 = !DILocation(line: 9, column: 4, scope: !4)\n"
    "Running pass: InstCombinePass on add_kernel\n"
    "; *** IR Dump After InstCombinePass on add_kernel ***\n"
    "define ptx_kernel void @add_kernel(ptr addrspace(1) %0) #0 !dbg !4 {\n"
    "  ret void, !dbg !8\n"
    "}\n"
    "*** IR Dump After SROA (sroa) ***\n"
    "define ptx_kernel void @add_kernel(ptr addrspace(1) %0) #0 !dbg !4 {\n"
    "  ret void, !dbg !8\n"
    "}\n"
    "# *** IR Dump After NVPTX DAG->DAG Pattern Instruction Selection (nvptx-isel) ***:\n"
    "# Machine code for function add_kernel: IsSSA, TracksLiveness\n"
    "bb.0:\n"
    "  Return\n"
)

PTX = (
    "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.4\n.target sm_90a\n.address_size 64\n\n"
    ".visible .entry add_kernel(\n)\n{\n"
    "\t.loc\t1 6 10\n\tmov.u32 \t%r1, %ctaid.x;\n\tadd.s32 \t%r2, %r1, 1;\n"
    "\t.loc\t1 9 4\n\tret;\n}\n"
    '\t.file\t1 "/src/kernels.py"\n'
)


def write_cache(folder: Path, kernel: str = "add_kernel") -> list[Path]:
    """A cache folder: source, ttir, ttgir, llir, ptx, a cubin (ELF bytes), metadata and __grp__ JSON."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    files = {
        f"{kernel}.source": ttir(kernel, 1024, extra_op=True),
        f"{kernel}.ttir": ttir(kernel, 1024),
        f"{kernel}.ttgir": ttgir(kernel, 1024, warps=8),
        f"{kernel}.llir": LLVM_LOG.split("\n", 2)[2].split("Running pass: InstCombinePass")[0],
        f"{kernel}.ptx": PTX,
        f"{kernel}.json": json.dumps({"name": kernel, "num_warps": 8, "num_stages": 3, "num_ctas": 1,
                                      "shared": 32768, "tmem_size": 0, "triton_version": "3.9.0",
                                      "hash": "abc", "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}),
        f"__grp__{kernel}.json": json.dumps({"child_paths": {f"{kernel}.ttir": f"/x/{kernel}.ttir"}}),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    elf = b"\x7fELF\x02\x01\x01" + b"\x00" * 40 + b".nv.info.add_kernel" + b"\x00" * 64
    (folder / f"{kernel}.cubin").write_bytes(elf)
    return sorted(folder.iterdir())
