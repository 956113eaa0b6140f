"""The entry: `python -m dashboard.app` (and the `dashboard` console script) run the command line, whose
default action serves the Dash app that `create_app(settings)` builds.

Dash is imported inside `create_app` only: an ingest or an export never loads Dash, plotly or Flask
(~0.5 s). The command line is handed `serve` by `main()` instead of importing this module, so the two
never import each other.
"""

from __future__ import annotations

import gc
import logging
import re
import traceback
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

# First: the command line chooses polars' allocator for an ingest before anything loads polars.
from dashboard.cli.main import main as run_command_line
from dashboard.settings import Settings

if TYPE_CHECKING:
    import dash

    from dashboard.server.asset_bundles import Bundle
    from dashboard.server.security import WebApp

PACKAGE_DIR = Path(__file__).resolve().parent
log = logging.getLogger("dashboard")
# @babel/polyfill (core-js 2 + regenerator), which Dash puts first on every page for browsers without
# ES2015, costs ~115 ms of start-up on every load and slows what runs after it. The one part current
# browsers lack, the global `regeneratorRuntime` that dash-renderer, dcc and dash-bootstrap-components
# call when they load a lazy component, is served from assets/ (regenerator-runtime 0.14.1, MIT),
# which Dash places before dash-renderer.
# dash_table's loader, which Dash also puts on every page, goes too: no page draws a DataTable (grids are AG Grid).
_UNUSED_SCRIPTS = re.compile(r'<script src="[^"]*/(?:polyfill@|dash_table/bundle)[^"]*"></script>\s*')
# dcc's chunk that every page draws (the charts). Left lazy, it is asked for only when React first renders
# a graph and revalidated on every load (its URL has no version); as a script tag it comes with the page's
# scripts, fingerprinted and cached like them, and dcc's loader finds it already there. (No page draws a
# dcc.Dropdown any more, layouts/select.py: its chunk is not loaded at all.)
EAGER_CHUNKS = ("dcc/async-graph.js",)


def _show_callback_error(error: Exception) -> None:
    """Any callback that fails shows one line and an error id in the banner, the traceback goes to the
    server's log under that id; the app keeps serving. Only messages the app wrote for people (a run
    that does not exist or is damaged, an input it cannot read) are shown, paths cut; never Python's."""
    from dash import set_props

    from dashboard.collectors.base import IngestError
    from dashboard.server.messages import new_error_id, public_line
    from dashboard.store import RunDamaged, RunNotFound

    error_id = new_error_id()
    log.error("callback failed [error %s]: %s", error_id, "".join(traceback.format_exception(error)))
    for_people = isinstance(error, RunNotFound | RunDamaged | IngestError)
    set_props("error-banner", {"children": public_line(str(error) if for_people else None, error_id),
                               "is_open": True})


@cache
def _dash_class() -> type[dash.Dash]:
    import dash

    class DashWithoutPolyfill(dash.Dash):
        asset_bundles: dict[str, Bundle] = {}  # noqa: RUF012  (set once by create_app)

        def interpolate_index(self, **kwargs: str) -> str:
            from flask import request

            from dashboard.layouts.lazy_libraries import app_path, defer_libraries, eager_chunks
            from dashboard.server.asset_bundles import with_bundle

            kwargs["scripts"] = _UNUSED_SCRIPTS.sub("", kwargs["scripts"])
            # AG Grid and Cytoscape only where the first screen draws them (layouts/lazy_libraries.py).
            kwargs["scripts"], lazy_meta = defer_libraries(
                kwargs["scripts"], app_path(request.path, self.config.routes_pathname_prefix))
            kwargs["metas"] += lazy_meta
            # The renderer asks for the page's layout and the callbacks only once every script has run
            # (~0.2 s warm, ~0.6 s on a first visit); fetched from the head instead, the server builds the
            # layout while the browser compiles, and the renderer's own requests are served from these.
            prefix = self.config.requests_pathname_prefix
            kwargs["css"] += "".join(f'<link rel="preload" href="{prefix}{name}" as="fetch" crossorigin>'
                                     for name in ("_dash-layout", "_dash-dependencies"))
            chunks = self._collect_and_register_resources(
                [{"relative_package_path": chunk, "namespace": "dash"} for chunk in EAGER_CHUNKS]
                + [{"relative_package_path": chunk, "namespace": namespace}
                   for namespace, chunk in eager_chunks(kwargs["scripts"])])
            kwargs["scripts"] += "".join(f'<script src="{src}"></script>' for src in chunks)
            # The app's own scripts and style sheets: one file of each kind (server/asset_bundles.py).
            for bundle in self.asset_bundles.values():
                key = "scripts" if bundle.kind == "js" else "css"
                kwargs[key] = with_bundle(kwargs[key], bundle, prefix)
            return super().interpolate_index(**kwargs)

    return DashWithoutPolyfill


def web_app(app: dash.Dash) -> WebApp:
    """Dash's side of server.security's guards (the one place that reaches into Dash's internals)."""
    from dash import _callback as dash_callback
    from dash.exceptions import CallbackException, DependencyException, InvalidCallbackReturnValue, PreventUpdate

    from dashboard.server.security import WebApp

    return WebApp(
        server=app.server,
        # Dash exposes no public count: its own list plus callbacks registered but not yet merged.
        inline_script_count=lambda: len(app._inline_scripts) + len(dash_callback.GLOBAL_INLINE_SCRIPTS),
        csp_hashes=lambda: list(app.csp_hashes()),
        callback_map=lambda: app.callback_map,
        bad_request_errors=(KeyError, IndexError, TypeError, ValueError, AttributeError, CallbackException),
        passed_on_errors=(InvalidCallbackReturnValue, PreventUpdate),
        unknown_file_errors=(DependencyException, OSError, KeyError, ValueError),
    )


def create_app(settings: Settings | None = None) -> dash.Dash:
    """Build the app for one data folder; seeds the demo into an empty folder if asked."""
    from flask import jsonify, request

    from dashboard.exports.routes import install_run_downloads
    from dashboard.figures import (
        graphviz_runner,
        theme,  # noqa: F401  (registers the plotly template)
    )
    from dashboard.ingest.child_temp import remove_stale_child_temps
    from dashboard.ingest.uploads import install_upload_routes
    from dashboard.layouts import server_state
    from dashboard.server.asset_bundles import build_bundles, install_asset_bundles
    from dashboard.server.auth import install_login
    from dashboard.server.compile_hints import install_compile_hints
    from dashboard.server.health import health as server_health
    from dashboard.server.security import install_security
    from dashboard.store import memory

    settings = settings or Settings.from_env()
    # Dash serialises every layout and callback answer with plotly's JSON. Its orjson path first walks every
    # list item in Python; the json engine hands plain values to the C encoder: half the time on a page of
    # big charts (a 700 KB timeline layout: 14 -> 7 ms), which the browser waits for on every load.
    import plotly.io as pio

    pio.json.config.default_engine = "json"
    store = server_state.configure(settings)
    # Every worker of this data folder shares one Graphviz queue and the drawings it made.
    graphviz_runner.configure(settings.data_dir / ".cache" / "graphviz", running=settings.graphviz_running)
    store.runs_dir.mkdir(parents=True, exist_ok=True)
    store.remove_stale_staging()
    remove_stale_child_temps(settings.data_dir)  # TMPDIRs of ingest children that are gone
    if settings.seed_demo:
        from dashboard.demo import seed_demo_if_empty

        seed_demo_if_empty(store)

    app = _dash_class()(
        "dashboard.app",  # also when this file runs as __main__: Flask and the page registry key on it
        use_pages=True,
        pages_folder=str(PACKAGE_DIR / "pages"),
        assets_folder=str(PACKAGE_DIR / "assets"),
        # Bootstrap is served from assets/ (vendored 5.3.9, MIT): team servers often have no CDN access.
        # assets/ also holds a plotly.js bundle of the trace types we draw (MIT, the plotly package's
        # plotly.js version, built by tools/plotly-bundle): dcc.Graph uses a window.Plotly that is
        # already there, so browsers parse 1.3 MB instead of fetching the full 4.6 MB bundle after the
        # page has loaded, and compile it in one pass (see that folder's README).
        suppress_callback_exceptions=True,
        title="dashboard",
        update_title=None,
        on_error=_show_callback_error,
        # plotly.js alone is 4.6 MB; gzip makes a first visit on a team server several times faster.
        compress=True,
    )
    from dashboard.layouts.shell import shell  # after use_pages so the registry is filled

    app.layout = shell
    server = app.server
    # Bodies held in memory (callbacks) are small; an upload's files stream to disk (ingest/uploads.py).
    server.config["MAX_CONTENT_LENGTH"] = settings.max_request_mb * 1024 * 1024
    # Asset URLs carry the file's modification time (`?m=...`), so browsers may keep them: no
    # revalidation round trip per script on every page load.
    server.config["SEND_FILE_MAX_AGE_DEFAULT"] = 365 * 24 * 3600
    install_security(web_app(app))  # security headers, a clear 413
    install_compile_hints(server, app.config.routes_pathname_prefix)  # after Dash's gzip: runs before it
    # Not under --debug: Dash's hot reload swaps the single asset files it serves.
    app.asset_bundles = {} if settings.debug else build_bundles(PACKAGE_DIR / "assets")
    install_asset_bundles(server, app.asset_bundles, app.config.routes_pathname_prefix)
    install_login(server, settings.users_file, settings.users)  # off unless users are configured
    install_upload_routes(server, server_state.current_jobs(), settings.max_upload_mb * 1024 * 1024)
    import dash

    # A page export's browser is sent only to registered page paths (never a path from the request).
    page_paths = {page["module"].rsplit(".", 1)[-1]: page["path"] for page in dash.page_registry.values()}
    # /runs/<id>/source/..., /tables/<t>.csv, /trace.json, /export/<page>.png|zip
    install_run_downloads(server, store, page_paths=page_paths, public_url=settings.public_url)

    @server.route("/health")
    def health():  # type: ignore[no-untyped-def]
        # pid: which worker answered, for checking a multi-worker server. Under gunicorn with
        # server.worker.HealthFirstWorker the worker's loop answers plain /health itself, the same.
        # `?verbose` (behind the login) adds this worker's memory: its caches against their budgets.
        answer = server_health(settings.data_dir)
        if "verbose" in request.args:
            answer["memory"] = memory.CACHE.stats()
        return jsonify(answer)

    # What start-up built (Dash, plotly, the page registry) lives as long as the server: moved out of
    # the collector's reach, it is not rescanned by every collection during a request.
    gc.freeze()
    # One byte budget for this process's run tables and view results, from what it holds now.
    started = memory.resident_bytes() or 0
    memory.configure(settings.cache_bytes(started), settings.worker_memory_bytes())
    return app


def serve(settings: Settings) -> None:
    """Build the app and serve it on the settings' host and port until stopped (the development server)."""
    import click

    from dashboard.server.security import QuietRequestHandler  # no versions in `Server:`

    app = create_app(settings)
    click.echo(f"dashboard: serving {settings.data_dir.resolve()} at http://{settings.host}:{settings.port}/",
               err=True)
    app.run(host=settings.host, port=settings.port, debug=settings.debug, request_handler=QuietRequestHandler)


def main() -> None:
    """`python -m dashboard.app …` and the `dashboard` console script."""
    run_command_line(serve=serve)


if __name__ == "__main__":
    main()
