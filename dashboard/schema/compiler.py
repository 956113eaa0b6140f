"""The tables of compilers: the warp-specialization planner, DOT graphs, Triton IR, tritonparse, tinygrad's rewrites."""

from __future__ import annotations

import polars as pl

from dashboard.schema.dtypes import F64 as _F64
from dashboard.schema.dtypes import I32 as _I32
from dashboard.schema.dtypes import I64 as _I64
from dashboard.schema.dtypes import STR as _STR

# Dialects with their own `ops_<dialect>` column in ir_steps (any other counts in `ops_other`).
IR_DIALECTS: tuple[str, ...] = ("tt", "ttg", "ttng", "amdg", "arith", "math", "scf", "cf", "llvm", "nvvm", "rocdl")

COMPILER_TABLES: dict[str, dict[str, pl.DataType]] = {
    # One SMEM / TMEM buffer of one warp-specialization planner dump group.
    "ws_buffers": {
        "group": _STR,
        "memory": _STR,  # SMEM / TMEM
        "buffer_index": _I32,  # i of cluster_smem_<i> / cluster_tmem_<i>: the key within (group, memory)
        "name": _STR,  # not a key: duplicates (dqN x4) are normal
        "buffer_id": _I64,  # SMEM allocation BufferId of the liveness dump (not the combined graph's B<n>)
        "bytes": _I64,  # SMEM: one copy; TMEM: null (sized in rows x cols of 32-bit cells)
        "rows": _I32,
        "cols": _I32,
        "start_op": _I64,
        "end_op": _I64,  # exclusive
        "channels": pl.List(_I64),
        "operand_d": _I32,  # TMEM: channels using it as MMA operand D; SMEM: null
    },
    # A key operation in the combined channel graph.
    "ws_ops": {
        "group": _STR,
        "op_id": _I64,  # operation_id (post-order); null in dumps made without the debug flag
        "node": _STR,  # op_op_<id>, or op_op_<pointer hash> without the debug flag: the key within a group
        "graph_order": _I32,  # order in the combined graph: program order with op ids, else insertion order
        "partitions": pl.List(_I32),  # every partition cluster the node is declared in
        "op": _STR,
        "out": _STR,
        "args": _STR,
        "shape": _STR,
        "loop_depth": _I32,
    },
    # A producer / consumer channel.
    "ws_channels": {
        "group": _STR,
        "uid": _I64,
        "src_op": _I64,
        "dst_op": _I64,
        "src_node": _STR,
        "dst_node": _STR,
        "memory": _STR,
        "buffer_id": _I64,  # the combined graph's B<n> (the alloc's buffer.id), null when absent
        "name": _STR,
        "operand_d": pl.Boolean,
    },
    # Any other DOT graph, kept as a plain graph.
    "dot_nodes": {
        "group": _STR,
        "kind": _STR,  # node / cluster (a cluster row's `node` is its path, e.g. cluster_a/cluster_b)
        "node": _STR,
        "label": _STR,
        "cluster": _STR,  # path of the enclosing cluster, null at top level
        "attributes": _STR,  # JSON object of the remaining attributes
    },
    "dot_edges": {
        "group": _STR,
        "src": _STR,
        "dst": _STR,
        "label": _STR,
        "attributes": _STR,
    },
    # Triton compiler output (collectors/triton_ir): one row per IR snapshot. A pass-dump log gives
    # one row per dump; a cache or kernel-dump folder one row per stage file (kind "file").
    "ir_steps": {
        "compile": _I64,  # 0, 1, ... in log order across the run's sources: one kernel compile
        "kernel": _STR,  # the kernel function (`tt.func public @k`, LLVM `define ... @k`)
        "target": _STR,  # cuda:90, cuda:100, hip:gfx942 (ttg.target, the pass options or the metadata)
        "stage": _STR,  # source, ttir, ttgir, llvm-mlir, llir, mir, ptx, amdgcn, sass, cubin
        "step": _I32,  # position within the compile, 0-based
        "pass_name": _STR,  # the pass the header names (Before: about to run; After/Failed: just ran)
        "pass_arg": _STR,  # the pass argument with its {options}, null where the header has none
        "anchor": _STR,  # module / function
        "symbol": _STR,  # the function a function-anchored pass ran on
        "kind": _STR,  # before / after / failed / internal (SoftwarePipeliner snapshots) / file
        # The IR differs from the previous snapshot with the same anchor in the same compile (for a
        # Before dump: the previous pass changed it); internal snapshots compare without becoming the reference.
        "changed": pl.Boolean,
        "lines": _I64,  # lines of the IR body
        "ops": _I64,  # MLIR operations (`dialect.op` lines) / LLVM IR instructions
        **{f"ops_{dialect}": _I64 for dialect in IR_DIALECTS},  # ops of that dialect
        "ops_other": _I64,  # ops of every other dialect
        "text_id": _I64,  # the body in ir_text; null for binary stage files (cubin)
        "source": _STR,  # the file this snapshot was read from
        "source_line": _I64,  # line of its header in the log (1-based); null for stage files
    },
    # Distinct IR bodies (equal bodies, e.g. a pass that changed nothing, are stored once).
    "ir_text": {
        "text_id": _I64,
        "format": _STR,  # mlir / llir / mir / ptx / amdgcn / sass / source / python: how to read `zlib`
        "bytes": _I64,  # uncompressed size
        "lines": _I64,
        "zlib": pl.Binary,  # the UTF-8 body, zlib-compressed (decompress with zlib.decompress)
    },
    # IR line -> Python file:line, for the last TTIR and TTGIR snapshot of each compile and every
    # stage file (other snapshots, the large LLVM-dialect ones included, are mapped on demand by the
    # same parser, collectors/triton_ir/locs.py).
    "ir_locs": {
        "text_id": _I64,
        "ir_line": _I64,  # 1-based line within the body
        "file": _STR,  # Python file as the location names it
        "line": _I64,  # 1-based line in that file
        "column": _I64,
        "via": _STR,  # direct / named / fused / callee / caller (the two ends of a call-site location)
    },
    # One row per compile: its metadata (from the cache JSON where there is one, else from the IR).
    "ir_kernels": {
        "compile": _I64,
        "kernel": _STR,
        "target": _STR,
        "num_warps": _I64,
        "num_ctas": _I64,
        "num_stages": _I64,  # the pipeliner's num-stages option / metadata
        "shared": _I64,  # shared memory bytes (ttg.shared / metadata `shared`)
        "tmem_size": _I64,  # tensor-memory columns (ttg.tensor_memory_size / metadata `tmem_size`)
        "triton_version": _STR,  # metadata only: a log does not say
        "hash": _STR,  # cache hash (metadata), null for logs
        "source": _STR,  # the log or folder it was read from
        "source_line": _I64,  # line of the compile's first dump in the log
        "steps": _I64,  # ir_steps rows of this compile
        "python_file": _STR,  # the kernel's Python file (its function's location)
        "python_text_id": _I64,  # tritonparse: the kernel's source in ir_text ("python"), padded to its file's lines
    },
    # tritonparse traces: a row per launch (counted per kernel) and per benchmarked config; source_line: the record's
    "ir_launches": {
        "launch": _I64, "compile": _I64,  # trace order; the ir_kernels compile of the same hash (null: not traced)
        "kernel": _STR, "hash": _STR,  # the compile's cache hash (`compilation_metadata.hash`)
        "grid_x": _I64, "grid_y": _I64, "grid_z": _I64, "stream": _I64,
        "args": _STR, "benchmark": pl.Boolean,  # `x_ptr: float32[4096] cpu, n: int = 4096`; an autotuner's timing run
        "source": _STR, "source_line": _I64,
    },
    "ir_autotune": {
        "session": _I64, "kernel": _STR, "key": _STR,  # one autotuning (a kernel and its key) in trace order
        "config": _STR,  # `BLOCK: 1024, num_warps: 8, ...` as Triton prints a Config
        "timing_ms": _F64, "best": pl.Boolean,  # the benchmark's time (null: a cached verdict); the chosen one
        "cache_hit": pl.Boolean, "duration_s": _F64, "source": _STR, "source_line": _I64,
    },
    # tinygrad's graph rewrites (collectors/tinygrad, from VIZ's rewrites.pkl). One row per context: a
    # kernel's codegen (`codegen`, with its program's columns) or another traced function (a schedule,
    # a JIT capture, an HCQ compile). A run of several pairs of files numbers them as ranks.
    "rewrite_contexts": {
        "rank": _I32,
        "context": _I64,  # index in the file: the key of rewrite_steps / rewrite_matches
        "name": _STR,  # display name without its terminal colours
        "display": _STR,  # display name as tinygrad wrote it, ANSI colours included (colour by axis type)
        "codegen": pl.Boolean,  # a kernel's codegen (its TracingKey returns a renderer)
        "kernel": _STR,  # the kernel's function name (E_2, r_8_32_16); not unique: kernels recompile
        "steps": _I64,
        "matches": _I64,
        "renderer": _STR,  # ClangRenderer, NullRenderer, ... (ProgramSpec in 0.12)
        "device": _STR,  # the renderer's target device
        "arch": _STR,
        "program_key": _STR,  # hex of the program's key: the profile's kernels refer to it
        "tb": _STR,  # where the context was created: `file:line function` per frame, innermost first
        "program_trace": _I64,  # the PROGRAM UOp of the `View Program` step (0.13+), in rewrite_uops
        "global_size": _STR,  # as tinygrad writes them, symbolic sizes as expressions
        "local_size": _STR,
        # The program's Estimates: FLOPs, bytes loaded/stored, bytes of memory touched once each; a
        # symbolic estimate (a Variable shape) is null here and its expression in the `_expr` column.
        "ops": _I64,
        "ops_expr": _STR,
        "lds": _I64,
        "lds_expr": _STR,
        "mem": _I64,
        "mem_expr": _STR,
        "applied_opts": _STR,  # the optimizations applied (Opt(op=OptOps.UPCAST, axis=0, arg=4), ...)
        "uop_count": _I64,  # linearized uops (LINEAR's sources)
        "source": _STR,  # the rendered program (C for CLANG)
        "binary": pl.Binary,  # the compiled object (an ELF object on CPU), for a disassembler
    },
    # One row per rewrite step (graph_rewrite call) of a context, in execution order.
    "rewrite_steps": {
        "rank": _I32,
        "context": _I64,
        "context_name": _STR,
        "kernel": _STR,  # the context's kernel, null for other contexts
        "step": _I32,  # position within the context
        "name": _STR,  # View Base AST, early movement ops, linearize/render, View Program, ...
        "depth": _I32,  # nesting of the rewrite inside another (indentation in VIZ)
        "matches": _I64,
        "file": _STR,  # where graph_rewrite was called
        "line": _I64,
        "sink": _I64,  # trace number of the input graph's root (rewrite_uops)
        # How the step rewrote, which its graphs' replay needs (walk / enter_calls: false before 0.14).
        "bottom_up": pl.Boolean,
        "walk": pl.Boolean,
        "enter_calls": pl.Boolean,
    },
    # One row per pattern match of a step: `before` was replaced by `after` (trace numbers).
    "rewrite_matches": {
        "rank": _I32,
        "context": _I64,
        "step": _I32,
        "match": _I64,  # position within the step
        "before": _I64,
        "after": _I64,
        "file": _STR,  # the matched pattern's location (its source text is not in the file)
        "line": _I64,
        "seconds": _F64,  # time the match took; 0 for a REWRITE_ERROR
    },
    # The UOp table every graph is made of: one row per trace number (a structurally equal UOp rebuilt
    # later gets a new number). A graph is its root's trace number followed through `src`.
    "rewrite_uops": {
        "rank": _I32,
        "trace": _I64,
        "op": _STR,  # ADD, RANGE, ... (by the release table the file fits; Ops(33) when none does)
        "dtype": _STR,  # dtypes.float, dtypes.float.vec(4), ...
        "arg": _STR,  # the argument as text (SOURCE's code whole, others up to 2,000 characters); null: None
        "src": pl.List(_I64),  # trace numbers of the sources, in order
        "tag": _STR,
        "metadata": _STR,  # the Tensor call that made it (TRACEMETA>=2)
    },
}
