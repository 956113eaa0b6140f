"""Demo sources: a `TRITON_DUMP_WS_GRAPHS` folder written by an invented planner run.

Two kernels, as one process with `TRITON_DUMP_WS_GRAPHS` would dump them:
* a Blackwell flash-attention forward with two Q sub-tiles (6 partitions: load,
  MMA, two softmax, correction, epilogue store; 13 SMEM buffers, 6 TMEM allocs,
  ~60 key ops), compiled with SMEM allocator 0 and the debug flag, so
  `smem_liveness_0`, `combined_graph_1`, `tmem_liveness_2` with op ids;
* a persistent GEMM under the defaults (allocator 1, no debug flag):
  `combined_graph_3`, `tmem_liveness_4`, pointer-hash node ids, no op ids.

The kernels are a small IR model made up here; only the text follows the
emitters (see `ws_dump_text`). `attention_kernel(sub_tiles=N)` grows the graph
(about 28 ops per sub-tile) for speed checks. Deterministic: fixed seed.
"""

from __future__ import annotations

import random
from pathlib import Path

from dashboard.demo.ws_dump_text import (
    Buffer,
    Channel,
    Kernel,
    Op,
    combined_graph,
    smem_liveness,
    tmem_liveness,
)

SEED = 20260211


class _Builder:
    """Appends ops in program order; ids grow like the planner's post-order walk (with hidden ops)."""

    def __init__(self, seed: int, first_id: int) -> None:
        self.random = random.Random(seed)
        self.next_id = first_id
        self.ops: list[Op] = []
        self.channels: list[Channel] = []
        self.smem: list[Buffer] = []
        self.tmem: list[Buffer] = []
        self.loop_ends: dict[int, int] = {}  # buffer id() -> op id at which its enclosing loop ends

    def op(self, partition: int | list[int], op: str, out: str | None, args: list[str], shape: str | None,
           depth: int, gap: int = 1) -> Op:
        self.next_id += gap
        partitions = [partition] if isinstance(partition, int) else partition
        new = Op(self.next_id, partitions, op, out, args, shape, depth, self.random.randrange(1, 25000) * 4)
        self.ops.append(new)
        return new

    def skip(self, count: int) -> int:
        """Ops the graph does not show (scalars, allocs, an scf.for closing its body)."""
        self.next_id += count
        return self.next_id

    def smem_buffer(self, name: str, size: int, buffer_id: int | None, loc: str | None = None) -> Buffer:
        buffer = Buffer("SMEM", name, size=size, alloc_id=len(self.smem), buffer_id=buffer_id, loc=loc)
        self.smem.append(buffer)
        return buffer

    def tmem_buffer(self, name: str, rows: int, cols: int) -> Buffer:
        buffer = Buffer("TMEM", name, rows=rows, cols=cols)
        self.tmem.append(buffer)
        return buffer

    def channel(self, src: Op, dst: Op, buffer: Buffer, operand_d: bool = False) -> Channel:
        channel = Channel(len(self.channels), src, dst, buffer, operand_d)
        self.channels.append(channel)
        buffer.channels.append(channel)
        return channel

    def kernel(self, debug: bool, loop_end: int) -> Kernel:
        for buffer in self.smem + self.tmem:
            ends = [op.op_id for c in buffer.channels for op in (c.src, c.dst)]
            if not ends:  # an alloc no channel uses still gets a short interval
                buffer.start, buffer.end = loop_end - 2, loop_end - 1
                continue
            buffer.start = min(ends)
            # Users inside a deeper loop keep a buffer live to that loop's end.
            deep = any(op.depth >= 2 for c in buffer.channels for op in (c.src, c.dst))
            buffer.end = max(max(ends) + 1, self.loop_ends.get(id(buffer), 0) if deep else 0)
        return Kernel(self.ops, self.channels, self.smem, self.tmem, debug)


def attention_kernel(sub_tiles: int = 2, debug: bool = True) -> Kernel:
    """A Blackwell FA-forward-like WS kernel; 2 sub-tiles give 13 SMEM, 6 TMEM buffers, 60 ops."""
    b = _Builder(SEED, first_id=40)
    load, mma, correction, store = 0, 1, 4, 5
    softmax = [2 + (t % 2) for t in range(sub_tiles)]
    tile = "128x128"
    q = [b.smem_buffer(f"q{t}", 32768, buffer_id=t % 2) for t in range(sub_tiles)]
    k = b.smem_buffer("k", 32768, buffer_id=2)
    v = b.smem_buffer("v", 32768, buffer_id=2)
    alpha = [b.smem_buffer(f"alpha{t}", 512, buffer_id=3) for t in range(sub_tiles)]
    m_i = [b.smem_buffer(f"m_i{t}", 512, buffer_id=3) for t in range(sub_tiles)]
    l_i = [b.smem_buffer(f"l_i{t}", 512, buffer_id=4) for t in range(sub_tiles)]
    o = [b.smem_buffer(f"o{t}", 32768, buffer_id=5, loc=f"attn_fwd_ws.py:{311 + t}") for t in range(sub_tiles)]
    b.smem_buffer("alloc" + str(len(b.smem)), 1024, buffer_id=None)  # an unused scratch alloc
    qk = [b.tmem_buffer(f"qk{t}", 128, 128) for t in range(sub_tiles)]
    acc = [b.tmem_buffer(f"acc{t}", 128, 128) for t in range(sub_tiles)]
    p = [b.tmem_buffer(f"p{t}", 128, 64) for t in range(sub_tiles)]

    # Outer (persistent) loop, depth 1: load the Q sub-tiles, zero the accumulators.
    q_store = []
    for t in range(sub_tiles):
        b.op(load, "descriptor_load", f"q{t}", [], f"{tile}xf16", 1, gap=3)
        q_store.append(b.op(load, "local_store", None, [f"q{t}"], f"{tile}xf16", 1))
    acc_init = [b.op(correction, "tmem_store", None, ["L402"], None, 1, gap=2) for _ in range(sub_tiles)]
    # Inner loop over K/V blocks, depth 2.
    b.op(load, "descriptor_load", "k", [], f"{tile}xf16", 2, gap=4)
    k_store = b.op(load, "local_store", None, ["k"], f"{tile}xf16", 2)
    b.op(load, "descriptor_load", "v", [], f"{tile}xf16", 2)
    v_store = b.op(load, "local_store", None, ["v"], f"{tile}xf16", 2)
    loop_mmas = []
    for t in range(sub_tiles):
        s = softmax[t]
        qk_mma = b.op(mma, "tc_gen5_mma", f"qk{t}", [f"q{t}", "kT"], None, 2, gap=2)
        b.channel(q_store[t], qk_mma, q[t])
        b.channel(k_store, qk_mma, k)
        qk_load = b.op([s], "tmem_load", f"qk{t}", [f"qk{t}"], f"{tile}xf32", 2, gap=2)
        b.channel(qk_mma, qk_load, qk[t])
        b.op(s, "maxnumf", f"m_ij{t}", [f"m_i{t}", f"qk{t}"], "128xf32", 2)
        b.op(s, "subf", f"qk{t}", [f"qk{t}", f"m_ij{t}"], f"{tile}xf32", 2)
        b.op(s, "exp2", f"p{t}", [f"qk{t}"], f"{tile}xf32", 2)
        b.op(s, "exp2", f"alpha{t}", [f"m_ij{t}"], "128xf32", 2)
        alpha_store = b.op(s, "local_store", None, [f"alpha{t}"], "128xf32", 2)
        m_store = b.op(s, "local_store", None, [f"m_ij{t}"], "128xf32", 2)
        b.op(s, "addf", f"l_ij{t}", [f"l_i{t}", "?"], "128xf32", 2)
        b.op(s, "truncf", f"pp{t}", [f"p{t}"], f"{tile}xf16", 2)
        p_store = b.op(s, "tmem_store", None, [f"pp{t}"], f"{tile}xf16", 2)
        alpha_load = b.op(correction, "local_load", f"alpha{t}", [f"alpha{t}"], "128xf32", 2, gap=2)
        b.channel(alpha_store, alpha_load, alpha[t])
        m_load = b.op(correction, "local_load", f"m_i{t}", [f"m_i{t}"], "128xf32", 2)
        b.channel(m_store, m_load, m_i[t])
        acc_load = b.op(correction, "tmem_load", f"acc{t}", [f"acc{t}"], f"{tile}xf32", 2)
        b.op(correction, "mulf", f"acc{t}", [f"acc{t}", f"alpha{t}"], f"{tile}xf32", 2)
        acc_store = b.op(correction, "tmem_store", None, [f"acc{t}"], f"{tile}xf32", 2)
        pv_mma = b.op(mma, "tc_gen5_mma", f"acc{t}", [f"pp{t}", "v"], None, 2, gap=2)
        b.channel(p_store, pv_mma, p[t])
        b.channel(v_store, pv_mma, v)
        b.channel(acc_init[t], pv_mma, acc[t], operand_d=True)
        b.channel(acc_store, pv_mma, acc[t], operand_d=True)  # the rescaled accumulator
        b.channel(pv_mma, acc_load, acc[t], operand_d=True)  # wrap-around: next iteration's correction
        loop_mmas.append(pv_mma)
    inner_end = b.skip(3)  # the inner scf.for gets its id after its body
    for buffer in (k, v, *q):
        b.loop_ends[id(buffer)] = inner_end
    # Epilogue, depth 1: normalise, stage through SMEM, store.
    for t in range(sub_tiles):
        pv_mma = loop_mmas[t]
        l_store = b.op(softmax[t], "local_store", None, [f"l_ij{t}"], "128xf32", 1, gap=2)
        final = b.op(correction, "tmem_load", f"acc{t}", [f"acc{t}"], f"{tile}xf32", 1, gap=2)
        b.channel(pv_mma, final, acc[t], operand_d=True)
        l_load = b.op(correction, "local_load", f"l_i{t}", [f"l_i{t}"], "128xf32", 1)
        b.channel(l_store, l_load, l_i[t])
        b.op(correction, "divf", f"o{t}", [f"acc{t}", f"l_i{t}"], f"{tile}xf32", 1)
        b.op(correction, "truncf", f"o{t}", [f"o{t}"], f"{tile}xf16", 1)
        o_store = b.op(correction, "local_store", None, [f"o{t}"], f"{tile}xf16", 1)
        o_load = b.op(store, "local_load", f"o{t}", [f"o{t}"], f"{tile}xf16", 1, gap=2)
        b.channel(o_store, o_load, o[t])
        b.op(store, "descriptor_store", None, [f"o{t}"], f"{tile}xf16", 1)
    return b.kernel(debug, loop_end=b.skip(2))


def gemm_kernel(debug: bool = False) -> Kernel:
    """A persistent Blackwell GEMM: TMA loads, one MMA partition, TMEM accumulator, split epilogue."""
    b = _Builder(SEED + 1, first_id=20)
    x = b.smem_buffer("x", 16384, buffer_id=0)
    w = b.smem_buffer("w", 32768, buffer_id=0)
    out = [b.smem_buffer("out", 32768, buffer_id=1) for _ in range(2)]
    acc = b.tmem_buffer("acc", 128, 256)
    x_load = b.op(0, "descriptor_load", "x", ["x"], None, 2, gap=6)
    w_load = b.op(0, "descriptor_load", "w", ["w"], None, 2)
    mma = b.op(1, "tc_gen5_mma", "acc", ["x", "L188"], None, 2, gap=2)
    b.channel(x_load, mma, x)
    b.channel(w_load, mma, w)
    acc_load = b.op(2, "tmem_load", "acc", ["acc"], "128x256xf32", 1, gap=3)
    b.channel(mma, acc_load, acc, operand_d=True)
    b.channel(acc_load, mma, acc, operand_d=True)  # the next tile's MMA waits for the epilogue
    for half in range(2):
        b.op(2, "truncf", f"out{half}", ["acc"], "128x128xf16", 1, gap=2)
        store = b.op(2, "local_store", None, [f"out{half}"], "128x128xf16", 1)
        load = b.op(3, "local_load", "out", ["out"], "128x128xf16", 1)
        b.channel(store, load, out[half])
        b.op(3, "descriptor_store", None, ["out"], "128x128xf16", 1)
    kernel = b.kernel(debug, loop_end=b.skip(2))
    if not debug:
        # Without op ids the emitter inserts channel endpoints first, then the other key ops.
        by_identity = {id(op): op for c in kernel.channels for op in (c.src, c.dst)}
        kernel.ops = list(by_identity.values()) + [op for op in kernel.ops if id(op) not in by_identity]
    return kernel


def write_dump_folder(folder: Path, kernels: list[tuple[Kernel, bool]], first_counter: int = 0) -> list[Path]:
    """Write `<kind>_<N>.dot` files for (kernel, with SMEM liveness) pairs, numbering like the planner."""
    folder.mkdir(parents=True, exist_ok=True)
    counter = first_counter
    written = []
    for kernel, with_smem in kernels:
        dumps = [("smem_liveness", smem_liveness)] if with_smem else []
        dumps += [("combined_graph", combined_graph), ("tmem_liveness", tmem_liveness)]
        for kind, emit in dumps:
            path = folder / f"{kind}_{counter}.dot"
            path.write_text(emit(kernel))
            written.append(path)
            counter += 1
    return written


_LOG_NOISE = (
    "// -----// IR Dump Before NVGPUWarpSpecialization (nvgpu-warp-specialization) //----- //",
    "module attributes {\"ttg.num-warps\" = 4 : i32} {",
    "  tt.func public @{kernel}(%arg0: !tt.tensordesc<tensor<128x128xf16>>) attributes {{noinline = false}} {{",
    "    %0 = ttg.local_alloc : () -> !ttg.memdesc<128x128xf16, #shared, #smem, mutable>",
    "  } loc(#loc)",
    "} loc(#loc)",
    "[nvgpu-ws-memory-planner]: Dump bufferRange: id size offset ---------",
    "=== All Channels ===",
    "[nvgpu-ws-memory-planner]: tmem liveness: 44 98",
)


def debug_log_text(kernels: list[tuple[str, Kernel, bool]], dump_dir: str | None = None) -> str:
    """A planner debug log: IR noise, planner lines and the graph blocks of each (name, kernel, smem)."""
    lines: list[str] = ["$ TRITON_LLVM_DEBUG_ONLY=nvgpu-ws-memory-planner python bench.py 2>&1 | tee log.txt"]
    counter = 0
    for name, kernel, with_smem in kernels:
        lines += [line.replace("{kernel}", name).replace("{{", "{").replace("}}", "}") for line in _LOG_NOISE]
        blocks = [("[MemoryPlanner] SMEM buffer liveness:", smem_liveness, "SMEM liveness", "smem_liveness")]
        blocks = blocks if with_smem else []
        blocks += [("[doMemoryPlanner] Combined visualization:", combined_graph, "combined graph",
                    "combined_graph"),
                   ("[MemoryPlannerTmem] TMEM buffer liveness:", tmem_liveness, "TMEM liveness", "tmem_liveness")]
        for intro, emit, what, file_kind in blocks:
            lines += ["", intro, emit(kernel).rstrip("\n")]
            if dump_dir is not None:
                lines.append(f"Dumped {what} to: {dump_dir}/{file_kind}_{counter}.dot")
            counter += 1
            lines.append("[nvgpu-ws-memory-planner]: === hasPotentialReuse Matrix ===")
    return "\n".join(lines) + "\n"


def write(folder: Path) -> list[Path]:
    """The demo: one dump folder with an FA-forward-like kernel (algo 0, debug) and a GEMM (defaults)."""
    folder = Path(folder)
    write_dump_folder(folder, [(attention_kernel(), True), (gemm_kernel(debug=False), False)])
    return [folder]
