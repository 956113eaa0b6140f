"""Download links for a run: its Perfetto trace, each table as CSV, its original sources.

`run_downloads(run_id)` is a small "Download" menu for a page header;
`download_links(info)` is the same as {text, href} pairs for a grid cell
(the Runs page's, drawn by assets/grid-links.js). Both link to the routes
in dashboard/exports/routes.py, which serve the files as attachments, so a
click downloads without leaving the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import dash_bootstrap_components as dbc
from dash import html

from dashboard import schema
from dashboard.exports.perfetto import TRACE_TABLES
from dashboard.exports.routes import source_href, table_csv_href, trace_href
from dashboard.layouts.server_state import current_store
from dashboard.store import SOURCE_DIR, RunInfo, RunNotFound

MAX_SOURCE_LINKS = 30
# The table each kind of run is mostly about, for the one CSV link in the runs grid.
_MAIN_TABLES = ("kernels", "op_memory", "ws_buffers", "ranges", "dot_nodes")


def trace_available(row_counts: Mapping[str, int]) -> bool:
    return any(row_counts.get(table, 0) > 0 for table in TRACE_TABLES)


def _tables_present(row_counts: Mapping[str, int]) -> list[str]:
    return [table for table in schema.TABLES if row_counts.get(table, 0) > 0]


def _source_files(run_path: Path) -> list[str]:
    folder = run_path / SOURCE_DIR
    if not folder.is_dir():
        return []
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return [str(p.relative_to(folder)) for p in files]


def _item(label: str, href: str, filename: str, class_name: str) -> html.A:
    return html.A(label, href=href, download=filename, className=f"dropdown-item {class_name}")


def run_downloads(run_id: str | None) -> html.Div | dbc.DropdownMenu:
    """A "Download" menu for the run; an empty placeholder when there is no such run."""
    if not run_id:
        return html.Div(className="run-downloads")
    try:
        info = current_store().open(run_id).info
    except RunNotFound:
        return html.Div(className="run-downloads")
    items: list = []
    if trace_available(info.row_counts):
        items += [dbc.DropdownMenuItem("Timeline", header=True),
                  _item("Perfetto trace (.json)", trace_href(info.id), f"{info.id}.trace.json", "download-trace")]
    tables = _tables_present(info.row_counts)
    if tables:
        items.append(dbc.DropdownMenuItem("Tables (CSV)", header=True))
        items += [_item(f"{table} · {info.row_counts[table]:,} rows", table_csv_href(info.id, table),
                        f"{info.id}.{table}.csv", f"download-csv download-csv-{table}") for table in tables]
    sources = _source_files(info.path)
    if sources:
        items.append(dbc.DropdownMenuItem("Original sources", header=True))
        items += [_item(name, source_href(info.id, name), Path(name).name, "download-source")
                  for name in sources[:MAX_SOURCE_LINKS]]
        if len(sources) > MAX_SOURCE_LINKS:
            items.append(dbc.DropdownMenuItem(f"… and {len(sources) - MAX_SOURCE_LINKS} more files", disabled=True))
    if not items:
        return html.Div(className="run-downloads")
    return dbc.DropdownMenu(items, label="Download", size="sm", color="secondary", align_end=True,
                            className="run-downloads d-inline-block", toggle_class_name="download-toggle")


def download_links(info: RunInfo) -> list[dict[str, str]]:
    """Links for a grid cell ({text, href} each): the trace and the run's main table as CSV."""
    links = []
    if trace_available(info.row_counts):
        links.append({"text": "trace.json", "href": trace_href(info.id)})
    main = next((t for t in _MAIN_TABLES if info.row_counts.get(t, 0) > 0), None)
    main = main or next(iter(_tables_present(info.row_counts)), None)
    if main:
        links.append({"text": f"{main}.csv", "href": table_csv_href(info.id, main)})
    return links
