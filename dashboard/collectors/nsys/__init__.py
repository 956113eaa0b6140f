"""Nsight Systems SQLite exports (`nsys export --type sqlite`), read into Arrow through ADBC.

Fills `kernels`, `memcpy` (copies and memsets), `runtime` (CUDA runtime /
driver calls) and `ranges` (NVTX push/pop and start/end ranges). `enums`
names the export's integer codes; `readers` holds each table's query and reads
them side by side; `nvtx` nests ranges and attributes kernels to them. The
entry point is `collector.COLLECTOR`.
"""
