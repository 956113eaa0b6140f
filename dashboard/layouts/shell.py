"""The frame around every page: navbar, run picker carried in the URL, error banner.

View state (selections, filters, zoom) is written into the address bar with
`history.replaceState` from a clientside callback: going through a
dcc.Location would make Dash's page router re-render the whole page on every
selection. A copied link still carries the state, and each page's
`layout(**query)` reads it back.

The layout the browser first asks for already holds the page it is on (see
`shell`), so opening a link costs no router round trip.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import dash
import dash_bootstrap_components as dbc
import flask
from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, dcc, html

from dashboard.layouts.page import default_run_for_path
from dashboard.layouts.select import native_select
from dashboard.layouts.server_state import current_store

PAGES_LOCATION = "_pages_location"  # the dcc.Location Dash's page router listens to
PAGES_CONTENT = "_pages_content"  # the Div the router fills with the page's layout
PAGES_STORE = "_pages_store"  # the router's {"title": ...}, copied into document.title
PAGES_DUMMY = "_pages_dummy"
RUNS_VERSION = "runs-version"  # bumped by pages that add or delete runs
URL_STATE = "url-state"  # pattern-matching id type of each page's view-state store
# View state that means the same on every page travels with the navbar links:
# the run, the rank, selected kernels, a time window, a layer and a pass.
CARRIED_KEYS = ("run", "rank", "sel", "window", "layer", "pass")

log = logging.getLogger(__name__)


def url_state_store(page: str, state: dict[str, Any]) -> dcc.Store:
    """A page's view state; whatever a callback writes here lands in the address bar."""
    return dcc.Store(id={"type": URL_STATE, "page": page}, data=state)


def _nav_pages() -> list[dict[str, Any]]:
    return [page for page in dash.page_registry.values() if not page.get("hidden")]


def navbar(picker_state: dict[str, Any] | None = None) -> dbc.Navbar:
    """The top bar; `picker_state` (run_picker_state's answer) fills the run picker and links up front."""
    state = picker_state or {}
    hrefs = state.get("hrefs") or [page["relative_path"] for page in _nav_pages()]
    links = [
        dbc.NavItem(dbc.NavLink(page["name"], href=href, active="exact",
                                id={"type": "nav-link", "path": page["relative_path"]}))
        for page, href in zip(_nav_pages(), hrefs, strict=True)
    ]
    picker = native_select("run-picker", state.get("options", []), state.get("value"), placeholder="Choose a run…",
                           min_width="320px", class_name="run-picker")
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
    """The app's layout. Served with the page the browser is on already in it, when it can tell which.

    Dash's page router fills the page in with a callback once the browser reports its address, and a
    second callback fills the run picker: two round trips, one after the other, before a chart can be
    drawn (~250 ms of a ~2 s first render). The layout request's Referer (sent for same-origin requests
    under our Referrer-Policy) names the page, so both are answered here; the dcc.Location starts
    with the same pathname and search as the browser, so it reports no change and neither callback
    runs. Without a usable Referer the shell is the plain one and the callbacks do the work as before.
    """
    page_url = _layout_request_page_url()
    content: Any = None
    title: str | None = None
    location = dcc.Location(id=PAGES_LOCATION, refresh="callback-nav")
    picker_state = None
    if page_url is not None:
        pathname, search = page_url
        rendered = _page_layout(pathname, search)
        if rendered is not None:
            content, title = rendered
            location = dcc.Location(id=PAGES_LOCATION, refresh="callback-nav", pathname=pathname, search=search)
            picker_state = run_picker_state(search, pathname, [page["relative_path"] for page in _nav_pages()])
    container = html.Div([
        location,
        html.Div(content, id=PAGES_CONTENT, disable_n_clicks=True),
        dcc.Store(id=PAGES_STORE, data={"title": title} if title else None),
        html.Div(id=PAGES_DUMMY, disable_n_clicks=True),
    ])
    return html.Div(
        [
            dcc.Store(id=RUNS_VERSION, data=0),
            dcc.Store(id="url-state-sink"),
            navbar(picker_state),
            dbc.Container(
                [
                    dbc.Alert(id="error-banner", color="danger", is_open=False, dismissable=True,
                              className="error-banner"),
                    container,
                ],
                fluid=True,
                className="pb-5",
            ),
        ]
    )


def _layout_request_page_url() -> tuple[str, str] | None:
    """(pathname, search) of the page that asked for the layout, from its Referer; None if unknown."""
    if not flask.has_request_context() or not flask.request.path.endswith("/_dash-layout"):
        return None
    referrer = flask.request.referrer
    if not referrer:
        return None
    parts = urlsplit(referrer)
    if parts.netloc != flask.request.host:
        return None
    return parts.path or "/", f"?{parts.query}" if parts.query else ""


def _page_layout(pathname: str, search: str) -> tuple[Any, str] | None:
    """What Dash's page router would put in the page container for this address, and the page's title.

    Called as the router calls it: `layout(**query)`, a key given twice passing a list. Our pages have
    no path templates, so a page is found by its path alone.
    """
    path = (dash.strip_relative_path(pathname) or "").strip("/")
    page = next((page for page in dash.page_registry.values() if page["path"].strip("/") == path), None)
    if page is None:
        return None  # the router's 404 handling stays the one place for unknown paths
    query = {key: values[0] if len(values) == 1 else values
             for key, values in parse_qs(search.lstrip("?"), keep_blank_values=True).items()}
    try:
        layout = page.get("layout", "")
        if callable(layout):
            layout = layout(**query)
        title = page["title"]
        if callable(title):
            title = title()
    except Exception:  # the router callback then shows the error the usual way
        log.exception("rendering %s%s into the initial layout failed", pathname, search)
        return None
    return layout, title


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
    # The shell fills these in when it knows the page; otherwise the location's first report runs this.
    prevent_initial_call=True,
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
    state = run_picker_state(new_search if new_search is not dash.no_update else search, pathname,
                             [nav["path"] for nav in nav_ids], run_only=new_search is not dash.no_update)
    return new_search, state["options"], state["value"], state["hrefs"]


def run_picker_state(search: str | None, pathname: str | None, nav_paths: list[str],
                     run_only: bool = False) -> dict[str, Any]:
    """The run picker's options and value and the navbar links' hrefs for this address.

    A page with no ?run= shows its default run; the picker names it too (without writing the URL).
    Links carry the view state that means the same on every page (`run_only`: just the run).
    """
    query = _query(search)
    run_id = query.get("run")
    options = [{"label": info.id, "value": info.id} for info in current_store().list_runs()]
    shown = run_id or default_run_for_path(pathname)
    carried = {"run": run_id} if run_only else {key: query[key] for key in CARRIED_KEYS if query.get(key)}
    suffix = f"?{urlencode(carried)}" if carried else ""
    return {"options": options, "value": shown, "hrefs": [path + suffix for path in nav_paths]}


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
    # Also on page load: a page served in the initial layout writes its default view state (compare's
    # run B, say) into the address bar just as one the router inserts does.
    prevent_initial_call="initial_duplicate",
)
