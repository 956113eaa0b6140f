"""The tables of device memory: Tenstorrent per-op states, allocator curves and segments, op metadata."""

from __future__ import annotations

import polars as pl

from dashboard.schema.dtypes import I32 as _I32
from dashboard.schema.dtypes import I64 as _I64
from dashboard.schema.dtypes import STR as _STR

MEMORY_TABLES: dict[str, dict[str, pl.DataType]] = {
    # Device memory state *before* one operation, per buffer type. Values are
    # bytes per bank (as the runtime prints them) and device totals (x banks).
    "op_memory": {
        "rank": _I32,
        "program": _STR,
        "op_index": _I64,
        "op_type": _STR,
        "mlir_op": _STR,
        "loc": _STR,
        "const_eval_graph": _STR,
        "is_weight_op": pl.Boolean,
        "buffer_type": _STR,  # DRAM, L1, L1_SMALL, TRACE
        "banks": _I32,
        "total_per_bank": _I64,
        "allocated_per_bank": _I64,
        "free_per_bank": _I64,
        "largest_free_per_bank": _I64,
        "total": _I64,
        "allocated": _I64,
        "free": _I64,
        "largest_free": _I64,
        # Position in the profiler's own JSON (deallocate / get_device left out),
        # so an index quoted from its report can be found; null for those ops.
        "profiler_index": _I64,
        # v1 profiler JSON only: device-wide bytes of the live tensors it tracks from
        # op output types (logical and tile-padded); null where the source lacks them.
        "unpadded_bytes": _I64,
        "padded_bytes": _I64,
    },
    # One allocator event on a device: a Kineto `[memory]` instant (profile_memory=True) or an
    # action of a PyTorch allocator snapshot's trace (torch.cuda.memory._dump_snapshot).
    "device_memory": {
        "rank": _I32,
        "device": _STR,  # cuda:0, cpu
        "time_ns": _I64,  # run clock for traces; the snapshot's own clock (time_us x 1000) for snapshots
        "addr": _I64,
        # change of `allocated`: + on alloc, - on free (snapshots: free_completed); 0 for other actions
        # (segment_alloc / segment_free change `reserved`)
        "bytes_delta": _I64,
        # Bytes allocated on the device after the event: the allocator's own total, or (relative) the
        # running sum of bytes_delta from the trace start, when the source gives no totals.
        "allocated": _I64,
        "reserved": _I64,  # bytes held in segments after the event; null when the source does not say
        "op": _STR,  # innermost CPU op open at the event on its thread (traces); null in snapshots
        "relative": pl.Boolean,  # true: allocated counts from 0 at the trace start, memory held before is unknown
        "action": _STR,  # alloc / free (traces); alloc / free_requested / free_completed / segment_alloc / ...
        "stream": _I64,  # snapshots only
        "frame": _STR,  # top Python frame (`file:line function`) of the allocating call; snapshots only
    },
    # A PyTorch allocator snapshot's segments, one row per block at the snapshot's end.
    "memory_segments": {
        "rank": _I32,
        "device": _STR,
        "segment_addr": _I64,
        "segment_size": _I64,  # the cudaMalloc'd size
        "addr": _I64,
        "size": _I64,
        "requested_size": _I64,
        "state": _STR,  # allocated / free (inactive) / awaiting_free
        "stream": _I64,
        "frame": _STR,  # top Python frame of the allocation; null for free blocks
    },
    # Operation metadata for the memory page's detail panel.
    "op_meta": {
        "rank": _I32,
        "program": _STR,
        "op_index": _I64,
        "mlir_op": _STR,
        "loc": _STR,
        "result": _STR,
        "inputs": pl.List(_STR),
        "attributes": _STR,
        "input_shapes": pl.List(_STR),
        "input_dtypes": pl.List(_STR),
        "output_shapes": pl.List(_STR),
        "output_dtypes": pl.List(_STR),
        "layouts": pl.List(_STR),
        "buffer_types": pl.List(_STR),
        "const_eval_graph": _STR,
        "is_weight_op": pl.Boolean,
        "profiler_index": _I64,  # as in op_memory
    },
}
