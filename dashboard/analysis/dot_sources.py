"""The DOT text of a plain graph of a run, read back from the run's `source/` copy.

The collector keeps a plain (non-planner) DOT graph as `dot_nodes` /
`dot_edges` rows, which is enough to list and search it, but not to draw it as
its author wrote it: ports, graph attributes, HTML-table labels and node
defaults shape a Graphviz drawing. The run keeps every input byte for byte, so
the drawing is made from that copy. `run.json` records, per plain graph, the
path the collector read (`metadata.triton_ws.plain_graphs[].source`, as given on
the command line, relative or absolute, possibly inside an input folder) and the
store records each input's resolved path and where it was copied; this module
maps one onto the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import read_source_bytes
from dashboard.collectors.triton_ws.blocks import normalise_text
from dashboard.collectors.triton_ws.collector import first_graph_offset
from dashboard.store import SOURCE_DIR, Run


class DotSourceMissing(LookupError):
    """The run has no readable source for that graph; the message says which and why."""


@dataclass(frozen=True)
class DotSource:
    """One plain graph's file text, cut where its DOT starts, and which graph of the file it is."""

    group: str
    path: Path  # the copy under the run's source/
    text: str  # from the first `graph`/`digraph` statement on (header lines the planner writes dropped)
    index: int  # 0-based: a file may hold several graphs
    count: int  # graphs in the file


def _copy_of(run: Run, source: str) -> Path | None:
    """Where the store copied the file the collector read as `source`."""
    read = Path(source)
    originals = [Path(p) for p in _original_paths(run)]
    copies = [run.info.path / SOURCE_DIR / relative for relative in run.info.sources]
    for original, copy in zip(originals, copies, strict=False):
        # The input itself, or a file inside an input folder: `read` is `<input as given>/<inside>`, and the
        # input as given ends with the resolved input's name.
        if read == original:
            return copy if copy.is_file() else None
        for position, part in enumerate(read.parts):
            if part != original.name:
                continue
            candidate = copy.joinpath(*read.parts[position + 1:])
            if candidate.is_file() and candidate.resolve().is_relative_to(run.info.path.resolve()):
                return candidate
    return None


def _original_paths(run: Run) -> list[str]:
    # Not part of RunInfo: only this lookup needs them.
    data = json.loads((run.info.path / "run.json").read_text(encoding="utf-8"))
    return [str(p) for p in data.get("original_paths", [])]


def plain_graph_source(run: Run, group: str) -> DotSource:
    """The DOT text of plain graph `group` of `run`; DotSourceMissing says why not."""
    graphs = run.info.metadata.get("triton_ws", {}).get("plain_graphs", [])
    entry = next((g for g in graphs if g.get("group") == group), None)
    if entry is None:
        raise DotSourceMissing(f"run {run.id} has no plain DOT graph named {group!r}")
    siblings = [g for g in graphs if g.get("source") == entry.get("source")]
    path = _copy_of(run, str(entry.get("source", "")))
    if path is None:
        raise DotSourceMissing(f"{entry.get('source')}: the run's copy of this DOT file is missing from "
                               f"{run.info.path / SOURCE_DIR}")
    text = normalise_text(read_source_bytes(path))
    offset = first_graph_offset(text)
    if offset is None:
        raise DotSourceMissing(f"{path}: no `digraph`/`graph` statement at the start of the file")
    return DotSource(group, path, text[offset:], siblings.index(entry), len(siblings))


def _split_edge(title: str) -> tuple[str, str] | None:
    """Graphviz titles an edge `a->b` (`a--b` undirected), with ports as `a:p`; ports are not in the rows."""
    for operator in ("->", "--"):
        if operator in title:
            src, dst = title.split(operator, 1)
            return src.split(":", 1)[0], dst.split(":", 1)[0]
    return None


def element_details(dot_nodes: pl.DataFrame, dot_edges: pl.DataFrame, group: str, kind: str,
                    name: str) -> list[dict[str, Any]]:
    """The rows behind a clicked element of a Graphviz drawing (its `<title>` is `name`).

    kind: "node", "cluster" or "edge" (the SVG group's class). A cluster row's `node` is its
    path (`cluster_a/cluster_b`), Graphviz titles it with its own name. Each row comes back with its
    attributes decoded from JSON.
    """
    if kind == "edge":
        ends = _split_edge(name)
        if ends is None:
            return []
        rows = dot_edges.filter((pl.col("group") == group) & (pl.col("src") == ends[0]) & (pl.col("dst") == ends[1]))
    elif kind == "cluster":
        rows = dot_nodes.filter((pl.col("group") == group) & (pl.col("kind") == "cluster")
                                & (pl.col("node").str.split("/").list.last() == name))
    else:
        rows = dot_nodes.filter((pl.col("group") == group) & (pl.col("kind") == "node") & (pl.col("node") == name))
    details = []
    for row in rows.iter_rows(named=True):
        attributes = json.loads(row.pop("attributes") or "{}")
        details.append({**row, "attributes": attributes})
    return details
