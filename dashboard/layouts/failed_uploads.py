"""The runs page's "Failed uploads" section: a kept upload can be retried or deleted.

An upload whose ingest failed (bad input, over its budget, a server restart)
is kept under `uploads/failed/<job>/` so nothing a user gave is lost; this
section lists them with their error, re-runs the ingest on the kept files
(Retry: the progress shows in the upload card as for a new upload) or removes
them after a confirmation (Delete).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html

from dashboard.ingest.jobs import JobNotStarted
from dashboard.layouts.server_state import current_jobs

HIDDEN = {"display": "none"}
_CALLBACKS: list[tuple[tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = []


def _section_callback(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Keep a callback of this section for `register_callbacks` (not registered at import)."""
    def keep(function: Callable[..., Any]) -> Callable[..., Any]:
        _CALLBACKS.append((args, kwargs, function))
        return function
    return keep


def register_callbacks() -> None:
    """Hand this section's callbacks to the app being built.

    Dash gives module-level callbacks to the first app a process builds and re-executes page modules for
    every app; this module is not a page, so the runs page (pages/home.py) calls this as it is executed.
    """
    for args, kwargs, function in _CALLBACKS:
        callback(*args, **kwargs)(function)


def _label(item: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item["when"]))
    return f"{', '.join(item['files'])} ({when}): {item['error']}"


def failed_upload_options() -> list[dict[str, str]]:
    """One choice per kept failed upload, newest first."""
    return [{"label": _label(item), "value": item["job_id"]} for item in current_jobs().failed_uploads()]


def _shown(options: list[dict[str, str]]) -> dict[str, str]:
    return {} if options else HIDDEN


def failed_uploads_card() -> html.Div:
    options = failed_upload_options()
    return html.Div(
        dbc.Card(dbc.CardBody([
            html.H6("Failed uploads", className="card-title"),
            html.Div("Kept on the server: ingest them again, or delete them.", className="small text-muted mb-2"),
            dbc.RadioItems(id="failed-upload-choice", options=options, value=None, className="small mb-2"),
            dbc.Button("Retry", id="retry-upload", color="primary", outline=True, size="sm", className="me-2"),
            dbc.Button("Delete…", id="delete-upload", color="danger", outline=True, size="sm"),
            html.Span(id="failed-upload-message", className="ms-3 small"),
            html.Span(id="delete-upload-message", className="ms-3 small"),
            dcc.ConfirmDialog(id="confirm-delete-upload"),
        ]), className="mb-3"),
        id="failed-uploads", style=_shown(options),
    )


@_section_callback(
    Output("failed-upload-choice", "options"),
    Output("failed-uploads", "style"),
    Input("ingest-poll", "disabled"),
    prevent_initial_call=True,
)
def refresh_failed_uploads(_polling_stopped: bool) -> tuple[Any, ...]:
    # When an ingest ends (a failure adds an entry, a retry that worked removes one).
    options = failed_upload_options()
    return options, _shown(options)


@_section_callback(
    Output("failed-upload-message", "children"),
    Output("failed-upload-choice", "options", allow_duplicate=True),
    # a retry is a new ingest job: the runs page's progress bar follows it
    *[Output(f"ingest-{part}", prop, allow_duplicate=True)
      for part, prop in (("job", "data"), ("poll", "disabled"), ("message", "children"), ("progress", "style"))],
    Input("retry-upload", "n_clicks"),
    State("failed-upload-choice", "value"),
    prevent_initial_call=True,
)
def retry_upload(_clicks: int | None, job_id: str | None) -> tuple[Any, ...]:
    if not job_id:
        return "Choose a failed upload first.", *(dash.no_update,) * 5
    try:
        new_job = current_jobs().retry(job_id)
    except (KeyError, FileNotFoundError):
        return "That upload is gone (retried or deleted meanwhile).", failed_upload_options(), *(dash.no_update,) * 4
    except JobNotStarted as exc:  # a full disk: still listed, to retry once there is room
        return str(exc), failed_upload_options(), *(dash.no_update,) * 4
    return ("", failed_upload_options(), new_job, False, html.Span("Ingesting the kept files again…",
                                                                   className="text-muted"), {"display": "flex"})


@_section_callback(
    Output("confirm-delete-upload", "displayed"),
    Output("confirm-delete-upload", "message"),
    Input("delete-upload", "n_clicks"),
    State("failed-upload-choice", "value"),
    State("failed-upload-choice", "options"),
    prevent_initial_call=True,
)
def ask_delete_upload(_clicks: int | None, job_id: str | None, options: list[dict[str, str]] | None) -> tuple[Any, ...]:
    label = next((option["label"] for option in options or [] if option["value"] == job_id), None)
    if not job_id or label is None:
        return False, ""
    return True, f"Delete the kept files of this failed upload? They cannot be recovered.\n\n{label}"


@_section_callback(
    Output("delete-upload-message", "children"),
    Output("failed-upload-choice", "options", allow_duplicate=True),
    Output("failed-uploads", "style", allow_duplicate=True),
    Input("confirm-delete-upload", "submit_n_clicks"),
    State("failed-upload-choice", "value"),
    prevent_initial_call=True,
)
def delete_upload(submitted: int | None, job_id: str | None) -> tuple[Any, ...]:
    if not submitted or not job_id:
        return (dash.no_update,) * 3
    try:
        current_jobs().discard_failed(job_id)
        message = "Deleted."
    except (KeyError, FileNotFoundError):
        message = "That upload is gone (retried or deleted meanwhile)."
    options = failed_upload_options()
    return message, options, _shown(options)
