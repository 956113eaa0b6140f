"""The tables of GPU and CPU activity: kernels, copies, ranges, API calls, stacks."""

from __future__ import annotations

import polars as pl

from dashboard.schema.dtypes import F64 as _F64
from dashboard.schema.dtypes import I32 as _I32
from dashboard.schema.dtypes import I64 as _I64
from dashboard.schema.dtypes import STR as _STR

ACTIVITY_TABLES: dict[str, dict[str, pl.DataType]] = {
    # One row per GPU kernel execution.
    "kernels": {
        "rank": _I32,
        "device": _I32,
        "stream": _I64,
        "correlation": _I64,
        "name": _STR,
        "start_ns": _I64,
        "end_ns": _I64,
        "grid_x": _I32,
        "grid_y": _I32,
        "grid_z": _I32,
        "block_x": _I32,
        "block_y": _I32,
        "block_z": _I32,
        "registers": _I32,
        "shared_memory": _I64,
        # Attribution, filled by the collector where the source allows it.
        "op": _STR,  # innermost enclosing CPU op that launched the kernel
        "layer": _STR,  # innermost enclosing module / layer
        # forward / backward / optimizer by the ops enclosing the launch; unattributed = no launch links it;
        # other = outside the trainer's own `## forward ##` / `## backward ##` / `## optimizer ##` annotations
        "pass": _STR,
        "pass_annotation": _STR,  # pass `other`: the trainer's `## name ##` annotation it ran under
        "step": _I64,  # N of the ProfilerStep#N open at the launch; null outside steps or unknown
        "flops": _F64,  # null = unknown, never 0 for unknown
        # Bytes the kernel moves to and from memory, where the source estimates them (tinygrad: Estimates.mem,
        # each buffer's bytes counted once); null = unknown.
        "bytes": _I64,
        # The device as the source names it where an ordinal does not say it all (tinygrad: CPU, NULL,
        # AMD:1, with `device` the ordinal after the colon); null for CUDA sources.
        "device_name": _STR,
    },
    # One row per copy or memset.
    "memcpy": {
        "rank": _I32,
        "device": _I32,
        "stream": _I64,
        "correlation": _I64,
        "kind": _STR,  # HtoD, DtoH, DtoD, HtoH, PtoP, Memset
        "src_kind": _STR,  # Pageable, Pinned, Device, ...
        "dst_kind": _STR,
        "bytes": _I64,
        "start_ns": _I64,
        "end_ns": _I64,
        "op": _STR,
        "layer": _STR,
        "pass": _STR,  # as in kernels
        "pass_annotation": _STR,  # as in kernels
        "step": _I64,  # as in kernels
    },
    # A named interval on a CPU thread or GPU stream: NVTX range, PyTorch op,
    # module / layer, pass, profiler step, user annotation.
    "ranges": {
        "rank": _I32,
        "id": _I64,  # unique within (run, rank); `parent` refers to it
        "device": _I32,  # null on CPU threads
        "thread": _I64,  # OS thread id on CPU, stream id on GPU
        "name": _STR,
        # cpu_op, user_annotation, gpu_user_annotation, python_function, profiler_step,
        # nvtx, module, marker, ...
        "category": _STR,
        "start_ns": _I64,
        "end_ns": _I64,
        "depth": _I32,
        "parent": _I64,
        # forward / backward / optimizer; unattributed = holds every pass (a profiler step)
        "pass": _STR,
        "step": _I64,  # N of the ProfilerStep#N open at the range's start; null outside steps
        "layer": _STR,  # module / layer this range belongs to, when known
        "sequence": _I64,  # autograd sequence number, joins forward and backward
        "flops": _F64,  # null = unknown
        "correlation": _I64,  # External id where the source has one
        # The op's inputs as the profiler recorded them (`record_shapes=True`), one item per input, as text
        # without the list's outer brackets: `[64, 3, 224, 224], [64], []` (a tensor list: `[[4, 3], [4, 3]]`)
        # and `float, c10::Half, Scalar, ""` ("" = an input without a dtype). "" = no inputs; null = not
        # recorded. Cut at 8,192 characters, ending in "…" (collectors.kineto.shapes). Categorical: a few
        # thousand distinct texts over millions of ops, 4 bytes a row in memory, a dictionary in parquet.
        "input_shapes": pl.Categorical(),
        "input_dtypes": pl.Categorical(),
    },
    # One row per CUDA runtime / driver API call.
    "api_calls": {
        "rank": _I32,
        "thread": _I64,
        "name": _STR,
        "category": _STR,  # cuda_runtime / cuda_driver
        "correlation": _I64,
        "start_ns": _I64,
        "end_ns": _I64,
    },
    # One row per Python frame's lifetime (call to return) on one thread: the
    # intervals give the depth-over-time track and a flame graph alike.
    "stack": {
        "rank": _I32,
        "thread": _I64,
        "function": _STR,
        "depth": _I32,
        "start_ns": _I64,
        "end_ns": _I64,
    },
}
