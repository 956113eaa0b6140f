"""Tenstorrent per-operation device memory: the tt-mlir runtime log and the memory profiler's JSON.

Fills `op_memory` (DRAM / L1 / L1_SMALL / TRACE per op and bank: allocated,
free, largest free block) and `ops`. `runtime_log` reads the log,
`profiler_json` the `*_memory.json` / `*_operations.json` files,
`mlir_text` the op text both carry. The entry point is `collector.COLLECTOR`.
"""
