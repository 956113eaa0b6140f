"""The frame around every page: navbar, run picker carried in the URL, error banner.

View state (selections, filters, zoom) is written into the address bar with
`history.replaceState` from a clientside callback: going through a
dcc.Location would make Dash's page router re-render the whole page on every
selection. A copied link still carries the state, and each page's
`layout(**query)` reads it back.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, dcc, html

from dashboard.layouts.context import current_store
from dashboard.layouts.page import default_run_for_path

PAGES_LOCATION = "_pages_location"  # the dcc.Location Dash's page router listens to
RUNS_VERSION = "runs-version"  # bumped by pages that add or delete runs
URL_STATE = "url-state"  # pattern-matching id type of each page's view-state store
# View state that means the same on every page travels with the navbar links:
# the run, the rank, selected kernels, a time window, a layer and a pass.
CARRIED_KEYS = ("run", "rank", "sel", "window", "layer", "pass")


def url_state_store(page: str, state: dict[str, Any]) -> dcc.Store:
    """A page's view state; whatever a callback writes here lands in the address bar."""
    return dcc.Store(id={"type": URL_STATE, "page": page}, data=state)


def navbar() -> dbc.Navbar:
    links = [
        dbc.NavItem(dbc.NavLink(page["name"], href=page["relative_path"], active="exact",
                                id={"type": "nav-link", "path": page["relative_path"]}))
        for page in dash.page_registry.values()
        if not page.get("hidden")
    ]
    picker = dcc.Dropdown(id="run-picker", placeholder="Choose a run…", clearable=False,
                          style={"minWidth": "320px"}, className="run-picker")
    return dbc.Navbar(
        dbc.Container(
            [
                dbc.NavbarBrand([html.Span("▦ ", className="brand-mark"), "dashboard"], href="/"),
                dbc.Nav(links, navbar=True, className="me-auto"),
                html.Div([html.Small("Run", className="text-light me-2"), picker],
                         className="d-flex align-items-center"),
            ],
            fluid=True,
        ),
        color="dark",
        dark=True,
        className="mb-3",
    )


def shell() -> html.Div:
    return html.Div(
        [
            dcc.Store(id=RUNS_VERSION, data=0),
            dcc.Store(id="url-state-sink"),
            navbar(),
            dbc.Container(
                [
                    dbc.Alert(id="error-banner", color="danger", is_open=False, dismissable=True,
                              className="error-banner"),
                    dash.page_container,
                ],
                fluid=True,
                className="pb-5",
            ),
        ]
    )


def _query(search: str | None) -> dict[str, str]:
    parsed = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {key: values[-1] for key, values in parsed.items()}


@callback(
    Output(PAGES_LOCATION, "search"),
    Output("run-picker", "options"),
    Output("run-picker", "value"),
    Output({"type": "nav-link", "path": ALL}, "href"),
    Input(PAGES_LOCATION, "search"),
    Input("run-picker", "value"),
    Input(RUNS_VERSION, "data"),
    State({"type": "nav-link", "path": ALL}, "id"),
    State(PAGES_LOCATION, "pathname"),
)
def sync_run_picker(search: str | None, picked: str | None, _version: int,
                    nav_ids: list[dict[str, str]], pathname: str | None) -> tuple[Any, ...]:
    """Keep the run picker, the URL's ?run= and the navbar links in step."""
    query = _query(search)
    run_id = query.get("run")
    new_search: Any = dash.no_update
    if ctx.triggered_id == "run-picker" and picked and picked != run_id:
        run_id = picked
        new_search = "?" + urlencode({"run": picked})  # other state belongs to the old run
    options = [{"label": info.id, "value": info.id} for info in current_store().list_runs()]
    # A page with no ?run= shows its default run; the picker names it too (without writing the URL).
    shown = run_id or default_run_for_path(pathname)
    carried = {"run": run_id} if new_search is not dash.no_update else {
        key: query[key] for key in CARRIED_KEYS if query.get(key)}
    suffix = f"?{urlencode(carried)}" if carried else ""
    hrefs = [nav["path"] + suffix for nav in nav_ids]
    return new_search, options, shown, hrefs


# Merge every page's view state into the address bar without a page reload or
# a router re-render; keys set to null or "" are removed.
clientside_callback(
    """
    function(states, navIds) {
        const url = new URL(window.location.href);
        (states || []).forEach(function(state) {
            Object.entries(state || {}).forEach(function([key, value]) {
                if (value === null || value === undefined || value === "" ||
                    (Array.isArray(value) && value.length === 0)) {
                    url.searchParams.delete(key);
                } else {
                    url.searchParams.set(key, Array.isArray(value) ? value.join(",") : String(value));
                }
            });
        });
        if (url.href !== window.location.href) {
            window.history.replaceState(window.history.state, "", url.href);
        }
        const carried = new URLSearchParams();
        CARRIED.forEach(function(key) {
            if (url.searchParams.get(key)) { carried.set(key, url.searchParams.get(key)); }
        });
        const suffix = carried.toString() ? "?" + carried.toString() : "";
        return [url.search, (navIds || []).map(function(nav) { return nav.path + suffix; })];
    }
    """.replace("CARRIED", str(list(CARRIED_KEYS))),
    Output("url-state-sink", "data"),
    Output({"type": "nav-link", "path": ALL}, "href", allow_duplicate=True),
    Input({"type": URL_STATE, "page": ALL}, "data"),
    State({"type": "nav-link", "path": ALL}, "id"),
    prevent_initial_call=True,
)
