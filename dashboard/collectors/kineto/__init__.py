"""PyTorch profiler (Kineto) Chrome traces, `.json` or `.json.gz`, one file per rank.

Reads kernels, copies / memsets, CPU ops, runtime calls, user annotations and
`[memory]` events; fills `kernels`, `memcpy`, `ranges` (ops, layers, passes,
steps, with FLOPs from `flops`), `runtime`, `stack` and `device_memory`.
Big files are decoded in worker processes (`parallel`, `worker`). The entry
point is `collector.COLLECTOR`.
"""
