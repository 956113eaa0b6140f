"""`/`: the runs: list, upload with ingest progress, errors, delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dash
import dash_ag_grid as dag
import dash_bootstrap_components as dbc
import polars as pl
from dash import Input, Output, State, callback, dcc, html

from dashboard.analysis.units import format_bytes
from dashboard.ingest.progress import phases_text
from dashboard.layouts.compare_links import compare_buttons, compare_links
from dashboard.layouts.downloads import download_links
from dashboard.layouts.failed_uploads import failed_uploads_card, register_callbacks
from dashboard.layouts.page import page_header, page_href
from dashboard.layouts.run_warnings import runs_warnings_overview, warnings_details
from dashboard.layouts.server_state import current_jobs, current_settings, current_store
from dashboard.layouts.shell import RUNS_VERSION
from dashboard.schema import EVIDENCE_LABELS
from dashboard.store import RunInfo, RunNotFound
from dashboard.views import run_pages

dash.register_page(__name__, path="/", name="Runs", order=0, title="Runs · dashboard")
register_callbacks()  # the failed-uploads section's callbacks, for this app

def runs_rows() -> list[dict[str, Any]]:
    store = current_store()
    infos = store.list_runs(include_damaged=True)  # damaged ones too: listed with what is wrong
    counts = run_pages.name_counts([info for info in infos if not info.damaged])
    rows = []
    for info in infos:
        if info.damaged:
            rows.append(_damaged_row(info))
            continue
        try:
            links = run_pages.run_links(store.open(info.id), counts)
        except (OSError, RunNotFound, pl.exceptions.PolarsError):  # a run going away, or damaged: no links
            links = []
        rows.append(_row(info, links))
    return rows


def _damaged_row(info: RunInfo) -> dict[str, Any]:
    """A run that cannot be read: listed, with what is wrong, so it can be deleted (or restored from a backup)."""
    return {"id": info.id, "name": info.name, "open": f"⚠ damaged: {info.damaged}", "download": "–",
            "evidence": "damaged", "sources": "", "created": info.created.replace("T", " ") or "?", "rows": 0,
            "size": "", "size_bytes": 0, "parse_s": None, "warnings": 1, "warnings_text": info.damaged,
            "damaged": info.damaged}


def _row(info: RunInfo, pages: list[tuple[str, str, dict[str, str]]]) -> dict[str, Any]:
    """A run's grid row; `pages`: (path, text, query) of each page with data for it, Insights first."""
    links = [{"text": text, "href": page_href(path, None if path == '/history' else info.id, **query)}
             for path, text, query in pages]
    return {
        "id": info.id,
        "name": info.name,
        "open": links or "–",
        "download": download_links(info) or "–",
        "evidence": ", ".join(EVIDENCE_LABELS.get(kind, kind) for kind in info.evidence) or "none",
        "sources": ", ".join(Path(source).name for source in info.sources) or "live capture",
        "created": info.created.replace("T", " "),
        "rows": info.total_rows,
        "size": format_bytes(info.size_bytes),
        "size_bytes": info.size_bytes,
        "parse_s": info.parse_seconds,
        "warnings": len(info.warnings),
        "warnings_text": "\n".join(info.warnings),
    }


# Minimum widths add up to what a 1440 px window leaves the grid (~1375 px beside the tick column), so
# sizeToFit never squeezes a column under its header; the numbers stay whole ("3…" said nothing).
COLUMNS = [
    {"field": "id", "headerName": "Run", "minWidth": 185, "pinned": "left"},
    # Links drawn by assets/grid-links.js from {text, href} pairs: the markdown renderer parsed every cell
    # (64 ms of the page's first render with 15 runs, warm).
    {"field": "open", "headerName": "Open", "cellRenderer": "LinkList", "filter": False, "minWidth": 230,
     "wrapText": True, "autoHeight": True, "cellClass": "runs-open-links",
     "tooltipField": "damaged", "cellClassRules": {"run-damaged": "params.data.damaged"}},
    {"field": "download", "headerName": "Download", "cellRenderer": "LinkList", "filter": False, "minWidth": 140},
    {"field": "evidence", "headerName": "Evidence", "minWidth": 135, "tooltipField": "evidence"},
    # Beside the evidence it qualifies; the list itself is under the table and in the tooltip.
    {"field": "warnings", "headerName": "Warnings", "minWidth": 120, "tooltipField": "warnings_text",
     "valueFormatter": {"function": "params.value ? '⚠ ' + params.value : ''"}},
    {"field": "sources", "headerName": "Sources", "minWidth": 115, "tooltipField": "sources"},
    {"field": "created", "headerName": "Created", "sort": "desc", "minWidth": 150},
    {"field": "rows", "headerName": "Rows", "type": "rightAligned", "minWidth": 95,
     "valueFormatter": {"function": "d3.format(',')(params.value)"}},
    {"field": "size", "headerName": "Size", "type": "rightAligned", "minWidth": 95},
    {"field": "parse_s", "headerName": "Parse s", "type": "rightAligned", "minWidth": 100},
]


def _upload_card() -> dbc.Card:
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Add a run", className="card-title"),
                # Files go to the server by assets/upload.js, streamed to disk by ingest/uploads.py (never
                # base64 inside a callback, which held the file eight times over in the worker).
                html.Div(
                    [
                        html.Strong("Drop files here or click to choose"),
                        html.Div("PyTorch-profiler traces (.json/.json.gz, several ranks at once), Nsight "
                                 "Systems .sqlite exports, allocator snapshots (.pickle), Tenstorrent memory logs "
                                 "and JSON, Triton dumps and tritonparse traces, warp-specialization DOT dumps; "
                                 "or a .tar.gz / .zip of them", className="small text-muted"),
                    ],
                    id="upload",
                    className="upload-zone",
                    role="button",
                    tabIndex="0",
                    **{"data-max-bytes": str(current_settings().max_upload_mb * 1024 * 1024),
                       "aria-label": "Upload files: drop them here or press to choose"},
                ),
                dbc.InputGroup(
                    [dbc.InputGroupText("Run name"),
                     dbc.Input(id="run-name", placeholder="from the first file's name", type="text")],
                    size="sm", className="mt-2",
                ),
                dbc.Progress(id="ingest-progress", value=0, striped=True, animated=True,
                             className="mt-3", style={"display": "none"}),
                html.Div(id="ingest-message", className="mt-2"),
            ]
        ),
        className="mb-3",
    )


def layout(**_query: Any) -> html.Div:
    return html.Div(
        [
            page_header("Runs", None, "Every ingested trace, capture, memory log and planner dump"),
            _upload_card(),
            failed_uploads_card(),
            html.Div(
                [
                    dbc.Button("Delete selected", id="delete-runs", color="danger", outline=True, size="sm",
                               disabled=True),
                    *compare_buttons(),
                    html.Span(id="delete-message", className="ms-3 small"),
                ],
                className="mb-2",
            ),
            dcc.ConfirmDialog(id="confirm-delete"),
            dag.AgGrid(
                id="runs-grid",
                rowData=runs_rows(),
                columnDefs=COLUMNS,
                getRowId="params.data.id",
                defaultColDef={"sortable": True, "filter": True, "resizable": True},
                dashGridOptions={
                    "rowSelection": {"mode": "multiRow", "checkboxes": True, "headerCheckbox": True,
                                     "enableClickSelection": False},
                    "selectionColumnDef": {"pinned": "left", "width": 44, "maxWidth": 44},
                    "domLayout": "autoHeight",
                    "tooltipShowDelay": 300,
                },
                columnSize="responsiveSizeToFit",
                className="ag-theme-alpine runs-grid",
            ),
            runs_warnings_overview(current_store().list_runs()),
            dcc.Store(id="ingest-job"),
            dcc.Interval(id="ingest-poll", interval=400, disabled=True),
        ]
    )


@callback(
    Output("ingest-progress", "value"),
    Output("ingest-progress", "label"),
    Output("ingest-message", "children", allow_duplicate=True),
    Output("ingest-poll", "disabled", allow_duplicate=True),
    Output("runs-grid", "rowData", allow_duplicate=True),
    Output(RUNS_VERSION, "data", allow_duplicate=True),
    Output("ingest-progress", "style", allow_duplicate=True),
    Input("ingest-poll", "n_intervals"),
    State("ingest-job", "data"),
    State(RUNS_VERSION, "data"),
    prevent_initial_call=True,
)
def poll_ingest(_ticks: int, job_id: str | None, version: int) -> tuple[Any, ...]:
    if not job_id:
        return (dash.no_update,) * 7
    status = current_jobs().status(job_id)
    state = status.get("state")
    if state == "running":
        fraction = status.get("fraction")
        value = 100 if fraction is None else round(fraction * 100)
        message = html.Div([html.Span(status.get("message", ""), className="text-muted ingest-status"),
                            _phases_line(status)])
        return value, f"{value}%", message, False, dash.no_update, dash.no_update, {"display": "flex"}
    hidden = {"display": "none"}
    if state == "done":
        run_id = status["run_id"]
        message = dbc.Alert(["Ingested ", html.Strong(", ".join(status.get("files", []))), " as ",
                             dcc.Link(run_id, href=_best_page(run_id)), ".", _phases_line(status),
                             _new_run_warnings(run_id)],
                            color="success", dismissable=True, className="ingest-success")
        return 100, "100%", message, True, runs_rows(), (version or 0) + 1, hidden
    error = status.get("error") or status.get("message", "unknown error")
    message = dbc.Alert([html.Strong("Could not ingest: "), error,
                         html.Div("The uploaded files are kept on the server: retry or delete them below.",
                                  className="small")],
                        color="danger", dismissable=True, className="ingest-error")
    return 0, "", message, True, dash.no_update, dash.no_update, hidden


def _phases_line(status: dict[str, Any]) -> html.Div | None:
    """The ingest's phases so far with their seconds: the lines `dashboard ingest` prints, on one line."""
    text = phases_text(status)
    return None if text is None else html.Div(text, className="small text-muted ingest-phases")


def _new_run_warnings(run_id: str) -> html.Details | None:
    try:
        return warnings_details(current_store().open(run_id).info, open_=True)
    except RunNotFound:
        return None


def _best_page(run_id: str) -> str:
    """Where a new run's link leads: the first page with data for it (Insights, what to fix first)."""
    try:
        run = current_store().open(run_id)
    except RunNotFound:
        return "/"
    path = run_pages.run_links(run, {})[0][0]
    return page_href(path, run_id)


callback(Output("compare-runs", "href"), Output("compare-runs", "disabled"), Output("history-runs-link", "href"),
         Output("history-runs-link", "disabled"), Input("runs-grid", "selectedRows"))(compare_links)


@callback(Output("delete-runs", "disabled"), Input("runs-grid", "selectedRows"))
def enable_delete(selected: list[dict[str, Any]] | None) -> bool:
    return not selected


@callback(
    Output("confirm-delete", "displayed"),
    Output("confirm-delete", "message"),
    Input("delete-runs", "n_clicks"),
    State("runs-grid", "selectedRows"),
    prevent_initial_call=True,
)
def ask_delete(_clicks: int, selected: list[dict[str, Any]] | None) -> tuple[bool, str]:
    ids = [row["id"] for row in selected or []]
    if not ids:
        return False, ""
    return True, f"Delete {len(ids)} run(s) and their stored sources?\n\n" + "\n".join(ids)


@callback(
    Output("runs-grid", "rowData", allow_duplicate=True),
    Output("delete-message", "children"),
    Output(RUNS_VERSION, "data", allow_duplicate=True),
    Input("confirm-delete", "submit_n_clicks"),
    State("runs-grid", "selectedRows"),
    State(RUNS_VERSION, "data"),
    prevent_initial_call=True,
)
def delete_runs(submitted: int | None, selected: list[dict[str, Any]] | None, version: int) -> tuple[Any, ...]:
    if not submitted:
        return (dash.no_update,) * 3
    store = current_store()
    deleted = []
    for row in selected or []:
        try:
            store.delete(row["id"])
            deleted.append(row["id"])
        except RunNotFound:
            continue
    return runs_rows(), f"Deleted {', '.join(deleted)}." if deleted else "Nothing deleted.", (version or 0) + 1
