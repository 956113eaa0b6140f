"""Collector: Triton warp-specialization memory-planner graphs, and any other DOT graph.

Sources:
* a `TRITON_DUMP_WS_GRAPHS` folder (`smem_liveness_N.dot`, `combined_graph_N.dot`,
  `tmem_liveness_N.dot`, header/footer lines around each `digraph`, one counter
  shared by the three kinds, several kernels per folder);
* a debug log (`TRITON_LLVM_DEBUG_ONLY=nvgpu-ws-memory-planner`) holding the same
  blocks among IR dumps and other planner output;
* single dump files; any other DOT file (kept as a plain graph).

Tables: `ws_buffers`, `ws_ops`, `ws_channels` (one `group` per kernel compile:
`<folder>#<k>` for dump folders, `<log>#<k> [kernel]` for logs), and
`dot_nodes` / `dot_edges` for other graphs. Layers: `blocks` cuts and
groups blocks, `dot_grammar` parses DOT, `semantics` reads the
planner labels, `tables` merges one compile's graphs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn, read_source_bytes
from dashboard.collectors.dot.grammar import parse_dot
from dashboard.collectors.dot.graph import DotSyntaxError
from dashboard.collectors.triton_ws.blocks import (
    Block,
    Group,
    drop_repeated_log_groups,
    dump_file_counter,
    find_blocks,
    group_dump_files,
    group_log_blocks,
    normalise_text,
    unique_labels,
)
from dashboard.collectors.triton_ws.plain import plain_rows
from dashboard.collectors.triton_ws.semantics import Interpretation, interpret
from dashboard.collectors.triton_ws.tables import group_rows
from dashboard.schema import schema_of

# Lines a planner debug log shows early, long before its first graph (IR dumps can be megabytes).
_PLANNER_LOG = re.compile(
    r"^digraph (?:SmemBufferLiveness|TmemBufferLiveness|CombinedGraph) \{"
    r"|^=== (?:SMEM Buffer Liveness Graph|TMEM Buffer Liveness Graph|Combined Key Ops \+ Channel Graph)"
    r"|^\[(?:MemoryPlanner|doMemoryPlanner|MemoryPlannerTmem)\] "
    r"|^Dumped (?:SMEM liveness|combined graph|TMEM liveness) to: "
    r"|\[nvgpu-ws-memory-planner\]",
    re.M,
)
# `[strict] (di)graph [name] [{ ...]` alone on its line; a prose line such as "Graph of ..." is not DOT.
# Possessive (`*+`, `?+`): the blanks before an absent name are not retried by `[ \t]*` (linear on any line).
_GRAPH_START = re.compile(
    r'[ \t]*+(?:strict[ \t]++)?+(?:di)?graph(?:[ \t]++(?:"(?:[^"\\]|\\.)*+"|[\w.\-]++))?+[ \t]*+(?:\{.*)?', re.I
)
_HEADER_LINE = re.compile(r"[ \t]*(?:$|//|#|=== .* ===[ \t]*$)")
_HEADER_LINES = 50


def first_graph_offset(text: str) -> int | None:
    """Where a DOT graph starts, if the text is DOT after at most a few header lines.

    Header lines are blank lines, comments and the planner's `=== ... ===` lines.
    """
    position = 0
    in_comment = False
    for _ in range(_HEADER_LINES):
        end = text.find("\n", position)
        line = text[position:] if end < 0 else text[position:end]
        if in_comment or line.lstrip().startswith("/*"):
            in_comment = "*/" not in line
        elif not _HEADER_LINE.match(line):
            if _GRAPH_START.fullmatch(line) and "{" in text[position:]:
                return position
            return None
        if end < 0:
            return None
        position = end + 1
    return None


@dataclass
class _Parsed:
    dump_blocks: list[Block] = field(default_factory=list)
    log_blocks: dict[Path, tuple[str, list[Block]]] = field(default_factory=dict)
    plain: list[tuple[Path, str, int]] = field(default_factory=list)  # (path, text, start line)
    blockless: list[Path] = field(default_factory=list)  # planner logs without a graph block
    warnings: list[str] = field(default_factory=list)


def _read(path: Path, parsed: _Parsed) -> None:
    text = normalise_text(read_source_bytes(path))
    if not text.strip():
        raise IngestError(path, "the file is empty")
    try:
        blocks, problems = find_blocks(text, path)
    except DotSyntaxError as exc:
        raise IngestError(path, _syntax_problem(exc)) from None
    parsed.warnings.extend(f"{path}: {problem}" for problem in problems)
    named = dump_file_counter(path)
    if named is not None and len(blocks) == 1:
        blocks[0].counter = named[1]
        parsed.dump_blocks.append(blocks[0])
    elif blocks:
        parsed.log_blocks[path] = (text, blocks)
    else:
        offset = first_graph_offset(text)
        if offset is None:
            if _PLANNER_LOG.search(text):
                parsed.blockless.append(path)
                return
            raise IngestError(path, "not DOT: no `digraph`/`graph` statement at the start of the file")
        parsed.plain.append((path, text[offset:], text.count("\n", 0, offset)))


def _syntax_problem(exc: DotSyntaxError) -> str:
    return f"DOT syntax error at line {exc.line}: {exc.message}" if exc.line else f"DOT syntax error: {exc.message}"


def _parse_graph(block: Block) -> Interpretation:
    try:
        graphs = parse_dot(block.text, line_offset=block.line - 1)
    except DotSyntaxError as exc:
        raise IngestError(block.source, _syntax_problem(exc)) from None
    return interpret(graphs[0])


class TritonWsCollector:
    name = "triton_ws"
    description = ("Triton warp-specialization planner DOT dumps (TRITON_DUMP_WS_GRAPHS) or debug logs, "
                   "or any DOT graph")

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if _PLANNER_LOG.search(text):
            return True
        return first_graph_offset(text) is not None

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        parsed = _Parsed()
        total = max(len(sources), 1)
        for position, path in enumerate(sources):
            progress(position / (2 * total), f"reading {Path(path).name}")
            _read(Path(path), parsed)
        groups = group_dump_files(parsed.dump_blocks)
        log_labels = unique_labels(list(parsed.log_blocks))
        for path, (text, blocks) in parsed.log_blocks.items():
            groups.extend(group_log_blocks(text, blocks, log_labels[path]))
        groups, repeated = drop_repeated_log_groups(groups)
        tables: dict[str, list[dict[str, Any]]] = {t: [] for t in
                                                   ("ws_buffers", "ws_ops", "ws_channels", "dot_nodes", "dot_edges")}
        warnings = list(parsed.warnings)
        group_info = []
        for position, group in enumerate(groups):
            progress(0.5 + position / (2 * max(len(groups), 1)), f"reading planner graphs of {group.name}")
            group_info.append(self._collect_group(group, tables, warnings))
        plain_info = self._collect_plain(parsed.plain, tables, warnings)
        progress(1.0, "planner graphs read")
        if not groups and not parsed.plain:
            where = parsed.blockless[0] if parsed.blockless else (sources[0] if sources else "?")
            raise IngestError(where, "a planner debug log without any complete `digraph` block: "
                                     "no planner graph to read")
        warnings.extend(f"{path}: a planner debug log without any complete `digraph` block; nothing read "
                        "from it" for path in parsed.blockless)
        frames = {name: pl.DataFrame(rows, schema=schema_of(name)) for name, rows in tables.items() if rows}
        metadata: dict[str, Any] = {"groups": group_info, "repeated": repeated}
        if plain_info:
            metadata["plain_graphs"] = plain_info
        return Collected(tables=frames, metadata=metadata, warnings=warnings)

    def _collect_group(self, group: Group, tables: dict[str, list[dict[str, Any]]],
                       warnings: list[str]) -> dict[str, Any]:
        graphs = []
        for block in group.blocks:
            try:
                graph = _parse_graph(block)
            except IngestError as error:
                if not group.from_log:
                    raise
                # A log is read best-effort: one garbled block (output interleaved by `2>&1`)
                # must not hide the other compiles in it.
                warnings.append(f"{error}; this {block.kind} graph of {group.name} is left out")
                continue
            warnings.extend(f"{block.source}: {problem}" for problem in graph.problems)
            graphs.append(graph)
        if not graphs:
            raise IngestError(group.blocks[0].source, f"no graph of {group.name} could be read ({warnings[-1]})")
        rows = group_rows(group.name, graphs)
        tables["ws_buffers"].extend(rows.buffers)
        tables["ws_ops"].extend(rows.ops)
        tables["ws_channels"].extend(rows.channels)
        warnings.extend(f"{group.name}: {problem}" if not problem.startswith(group.name) else problem
                        for problem in rows.problems)
        return {
            "group": group.name,
            "sources": sorted({str(b.source) for b in group.blocks}),
            "graphs": [graph.kind for graph in graphs],
            "counters": [b.counter for b in group.blocks],
            "kernel": group.blocks[0].kernel,
            "op_ids": rows.has_op_ids,
            "notes": rows.notes,
        }

    def _collect_plain(self, plain: list[tuple[Path, str, int]], tables: dict[str, list[dict[str, Any]]],
                       warnings: list[str]) -> list[dict[str, Any]]:
        labels = unique_labels([path for path, _, _ in plain])
        info = []
        for path, text, line_offset in plain:
            try:
                graphs = parse_dot(text, line_offset=line_offset)
            except DotSyntaxError as exc:
                raise IngestError(path, _syntax_problem(exc)) from None
            for number, graph in enumerate(graphs, start=1):
                group = labels[path] if len(graphs) == 1 else f"{labels[path]}#{number}"
                nodes, edges = plain_rows(graph, group)
                if not nodes:
                    warnings.append(f"{path}: graph {graph.name or '(unnamed)'} is empty")
                tables["dot_nodes"].extend(nodes)
                tables["dot_edges"].extend(edges)
                info.append({"group": group, "source": str(path), "name": graph.name,
                             "directed": graph.directed, "nodes": len(graph.nodes), "edges": len(graph.edges)})
        return info


COLLECTOR = TritonWsCollector()
