"""HTTP downloads of a run: its original sources, a table as CSV, its Perfetto trace.

    /runs/<run_id>/source/<path>        a file of source/, byte for byte
    /runs/<run_id>/tables/<table>.csv   a canonical table
    /runs/<run_id>/trace.json           kernels, copies, ranges, API calls as Chrome-trace JSON
    /runs/<run_id>/graph.svg?group=G    a plain DOT graph drawn by Graphviz (sanitised SVG)
    /runs/<run_id>/export/<page>.png    the page as seen (its view state in the query), one image
    /runs/<run_id>/export/<page>.zip    every chart of the page as PNG, captioned with run and view

Nothing outside the run's folder is ever read: run ids are checked by the
store, file paths by `resolve_inside`; a refused or unknown path is a 404.
CSV and trace are streamed in slices, so a big run does not need its whole
export in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from urllib.parse import quote

from flask import Flask, Response, abort, request, send_file

from dashboard import schema
from dashboard.exports.perfetto import TRACE_TABLES, encode_trace
from dashboard.exports.tables import encode_csv
from dashboard.server.security import resolve_inside
from dashboard.store import SOURCE_DIR, Run, RunDamaged, RunNotFound, RunStore
from dashboard.views.file_names import safe_file_stem


def source_href(run_id: str, relative: str) -> str:
    return f"/runs/{quote(run_id)}/source/{quote(relative)}"


def table_csv_href(run_id: str, table: str) -> str:
    return f"/runs/{quote(run_id)}/tables/{quote(table)}.csv"


def trace_href(run_id: str) -> str:
    return f"/runs/{quote(run_id)}/trace.json"


def graph_svg_href(run_id: str, group: str, download: bool = False) -> str:
    return f"/runs/{quote(run_id)}/graph.svg?group={quote(group, safe='')}" + ("&download=1" if download else "")


# The drawing is shown in a frame of the page and may be opened on its own: nothing in it may run or load.
GRAPH_SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def view_caption(run_id: str, page: str, state: dict[str, str]) -> str:
    """What an exported chart shows: the run, the page and its view state (the URL's query)."""
    view = " · ".join(f"{key}={value}" for key, value in sorted(state.items()) if key != "run" and value != "")
    return f"run {run_id} · /{page} · {view or 'default view'}"


def has_trace(run: Run) -> bool:
    return any(run.has(table) for table in TRACE_TABLES)


def _attachment(body: Iterator[bytes], mimetype: str, filename: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f"attachment; filename=\"{filename}\""
    return response


def install_run_downloads(server: Flask, store: RunStore, page_paths: Mapping[str, str] | None = None,
                          public_url: str = "") -> None:
    """Add the download routes for the runs of `store`.

    `page_paths`: page name -> its registered path (Dash's page registry, from the app), the only paths
    a page export's browser is sent to; `public_url`: the server's own URL for it (settings.py).
    """
    page_paths = dict(page_paths or {})

    def open_run(run_id: str) -> Run:
        try:
            return store.open(run_id)
        except RunDamaged as exc:  # there, but unreadable: its one line, never a 500 from the parquet reader
            abort(409, description=str(exc))
        except RunNotFound:
            abort(404, description=f"no run named {run_id!r}")

    @server.get("/runs/<run_id>/source/<path:relative>")
    def run_source(run_id: str, relative: str) -> Response:
        run = open_run(run_id)
        path = resolve_inside(run.info.path / SOURCE_DIR, relative, jail=run.info.path)
        # Bytes as they were uploaded: never rendered by the browser, whatever they contain.
        return send_file(path, mimetype="application/octet-stream", as_attachment=True,
                         download_name=path.name, conditional=True)

    @server.get("/runs/<run_id>/tables/<table>.csv")
    def run_table_csv(run_id: str, table: str) -> Response:
        run = open_run(run_id)
        if table not in schema.TABLES or not run.has(table):
            abort(404, description=f"run {run_id!r} has no table {table!r}")
        return _attachment(encode_csv(run.frame(table)), "text/csv", f"{run.id}.{table}.csv")

    @server.get("/runs/<run_id>/trace.json")
    def run_trace(run_id: str) -> Response:
        run = open_run(run_id)
        if not has_trace(run):
            abort(404, description=f"run {run_id!r} has no kernels, copies, ranges or API calls to trace")
        tables = {table: run.frame(table) for table in TRACE_TABLES if run.has(table)}
        return _attachment(encode_trace(tables, run_id=run.id), "application/json", f"{run.id}.trace.json")

    @server.get("/runs/<run_id>/graph.svg")
    def run_graph_svg(run_id: str) -> Response:
        from dashboard.analysis.dot_sources import DotSourceMissing, plain_graph_source
        from dashboard.figures.graphviz_svg import draw

        run = open_run(run_id)
        group = request.args.get("group", "")
        try:
            source = plain_graph_source(run, group)
        except DotSourceMissing as exc:
            abort(404, description=str(exc))
        result = draw(source.text, source.index)
        if result.drawing is None:
            if result.busy:  # the server's Graphviz queue is full: a moment later it is not
                busy = Response(f"{result.problem}\n", status=503, mimetype="text/plain")
                busy.headers["Retry-After"] = "30"
                return busy
            abort(503 if result.missing else 422, description=f"{source.path.name}: {result.problem}")
        response = Response(result.drawing.svg, mimetype="image/svg+xml")
        response.headers["Content-Security-Policy"] = GRAPH_SVG_POLICY
        response.headers["Cache-Control"] = "private, max-age=3600"  # a run never changes
        if request.args.get("download"):
            stem = f"{run.id}-{group}".replace('"', "")
            response.headers["Content-Disposition"] = f'attachment; filename="{safe_file_stem(stem)}.svg"'
        return response

    @server.get("/runs/<run_id>/export/<page>.zip")
    def run_page_pngs(run_id: str, page: str) -> Response:
        # Every chart of one page as PNG, for the view state in the query string.
        from dashboard.exports.page_figures import PAGES, page_figures
        from dashboard.exports.png import PngExportUnavailable, pngs_zip

        run = open_run(run_id)
        if page not in PAGES:
            abort(404, description=f"no page {page!r} with charts")
        state = request.args.to_dict()
        figures = page_figures(page, run, state)
        if not figures:
            abort(404, description=f"run {run_id!r} has nothing to draw on {page}")
        try:
            body = pngs_zip(figures, prefix=f"{run.id}-{page}-", caption=view_caption(run.id, page, state))
        except PngExportUnavailable as exc:
            abort(503, description=str(exc))
        return _attachment(iter([body]), "application/zip", f"{run.id}-{page}.zip")

    @server.get("/runs/<run_id>/export/<page>.png")
    def run_page_png(run_id: str, page: str) -> Response:
        # The page as the user sees it, rendered by a headless Chromium from this server itself.
        from dashboard.exports.page_figures import PAGES, page_state
        from dashboard.exports.page_png import (
            PageExportBusy,
            PageExportFailed,
            PngExportUnavailable,
            capture_page,
            export_options,
            own_base_url,
            page_query,
            page_url,
        )

        run = open_run(run_id)
        if page not in PAGES or page not in page_paths:
            abort(404, description=f"no page {page!r} to export")
        width, scale = export_options(request.args)
        headers = {"Authorization": request.headers["Authorization"]} if "Authorization" in request.headers else {}
        try:
            # Origin from the settings, path from the page registry, query re-encoded from the parsed state.
            state = page_state(page, run, page_query(request.args, run.id)) | {"run": run.id}
            url = page_url(own_base_url(public_url, request.environ), page_paths[page], state)
            shot = capture_page(url, width, scale, headers=headers, cookies=request.cookies)
        except PngExportUnavailable as exc:
            abort(503, description=str(exc))
        except PageExportBusy as exc:
            abort(503, description=str(exc))
        except PageExportFailed as exc:
            abort(502, description=f"{page} of {run.id}: {exc}")
        response = _attachment(iter([shot.png]), "image/png", f"{run.id}-{page}.png")
        response.headers["X-Page-Size"] = f"{shot.width}x{shot.height}@{shot.scale}"
        return response

    @server.get("/runs/<path:_anything>")
    def no_such_download(_anything: str) -> Response:
        # Without this, a path under /runs/ that matches none of the above
        # (e.g. an encoded '../' in the run id) would get Dash's page shell.
        abort(404)
