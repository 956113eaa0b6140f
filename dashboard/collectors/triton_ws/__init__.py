"""Triton warp-specialization memory planner dumps: DOT graphs in debug logs, and plain DOT files.

Fills `ws_buffers` (SMEM / TMEM buffers with their liveness intervals),
`ws_ops` and `ws_channels` (the channel graph). `blocks` finds the DOT
graphs inside a log, `semantics` reads the planner's meaning from a graph,
`plain` keeps any other DOT as nodes and edges. The DOT language itself is
parsed by `dashboard.collectors.dot`. The entry point is `collector.COLLECTOR`.
"""
