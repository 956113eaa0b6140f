"""The DOT language (Graphviz): a linear-time parser into graphs, nodes, edges and attributes.

Fills no table itself: `triton_ws` reads planner graphs through it, and
`analysis.dot_sources` keeps the source of plain graphs for Graphviz to draw.
"""
