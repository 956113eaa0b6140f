"""What a team server adds around the Dash app: security headers, a clear 413, path-safe files.

- Every response carries X-Content-Type-Options, X-Frame-Options,
  Referrer-Policy and a Content-Security-Policy under which Dash, plotly and
  AG Grid work: scripts only from this server plus the sha256 hashes of
  Dash's own inline scripts (the clientside callbacks and the renderer
  bootstrap), so an injected inline script does not run.
- A request over its limit answers 413 with "upload too large: N MiB > limit
  M MiB" as JSON for Dash's requests and as text elsewhere. Bodies held in
  memory (callbacks) have a small limit (Flask's MAX_CONTENT_LENGTH); an
  upload's files are streamed to disk by their own route with the upload limit.
  A body sent without a length (chunked) is counted as it arrives and gets
  the same 413 once it passes the limit.
- A run's downloads (`/runs/...`) are `Cache-Control: no-store`: a user's
  data is never kept by a shared cache, nor served from one after the run is
  deleted (auth.py makes every other answer behind a login `private`).
- Malformed requests are the client's error, never the server's: an unknown
  component-suite file is a 404, a callback request that does not match a
  callback of this app is a 400 (Dash itself answers both with a 500).
- `QuietRequestHandler`: the development server's `Server:` header names no
  versions (gunicorn's says only "gunicorn").
- `resolve_inside` is the one gate for serving a file from a folder: no
  `..`, no absolute paths, no symlink that leads outside; anything refused
  is a 404, never a 500 and never a read elsewhere.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import NotFound, RequestEntityTooLarge
from werkzeug.serving import WSGIRequestHandler

MIB = 1024 * 1024
log = logging.getLogger("dashboard.security")
DOWNLOADS_PREFIX = "/runs/"
# PUT requests under here stream their body to disk themselves, with the upload limit (ingest/uploads.py);
# every other request's body is held in memory and limited by MAX_CONTENT_LENGTH (a callback's state).
STREAMED_BODY_PREFIX = "/uploads/"
SERVER_NAME = "dashboard"
# A chunked body is kept in memory up to this size, beyond it in a temporary file.
_SPOOL_BYTES = 16 * MIB

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "same-origin",
}

# Why each exception to "'self' only":
# - style-src 'unsafe-inline': plotly and AG Grid set inline styles and inject
#   <style> elements at run time; styles cannot run code.
# - img-src data: blob:: plotly's PNG export and AG Grid's icons are data/blob URLs.
# No 'unsafe-eval': the plotly.js bundle Dash serves (v4, precompiled WebGL
# shaders), AG Grid with {"function": ...} value formatters and cytoscape run
# without it; their remaining `Function(...)` calls are fallbacks for old
# browsers. Inline scripts run only if their hash is listed.
_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:", "blob:"],
    "font-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "worker-src": ["'self'", "blob:"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'self'"],
}


def content_security_policy(script_hashes: list[str]) -> str:
    """The CSP header value allowing Dash's inline scripts by hash."""
    policy = {**_POLICY, "script-src": _POLICY["script-src"] + script_hashes}
    return "; ".join(f"{directive} {' '.join(sources)}" for directive, sources in policy.items())


def _mib(size: int) -> str:
    return f"{size / MIB:.1f}".removesuffix(".0")


def too_large_message(size: int | None, limit: int) -> str:
    if size:
        return f"upload too large: {_mib(size)} MiB > limit {_mib(limit)} MiB"
    return f"upload too large: more than the limit of {_mib(limit)} MiB"


@dataclass(frozen=True)
class WebApp:
    """What this module needs of the web framework on top of Flask; the app entry fills it from Dash.

    Keeping Dash out of here keeps the dependency one-way: the entry wires the framework to the server.
    """

    server: Flask
    inline_script_count: Callable[[], int]  # grows until the first request is set up
    csp_hashes: Callable[[], list[str]]  # sha256 sources of the framework's own inline scripts
    callback_map: Callable[[], dict[str, Any]]
    # Raised by a callback route for a request whose values do not fit the callback: answered 400.
    bad_request_errors: tuple[type[BaseException], ...]
    # Raised by the same route as the framework's own answers (a declined update, our own bug): passed on.
    passed_on_errors: tuple[type[BaseException], ...]
    # Raised by the component-suite route for a file the framework never registered: answered 404.
    unknown_file_errors: tuple[type[BaseException], ...]
    callback_route: str = "_dash-update-component"
    suites_route: str = "_dash-component-suites"


def install_security(app: WebApp) -> None:
    """Security headers on every response and a clear 413 for oversized requests."""
    server = app.server
    # Inline scripts are added until the first request is set up (Dash's page router adds one then),
    # so the hashes are recomputed when their number changes.
    cached: dict[str, object] = {"count": -1, "policy": ""}

    def policy() -> str:
        count = app.inline_script_count()
        if count != cached["count"]:
            cached["policy"] = content_security_policy(app.csp_hashes())
            cached["count"] = app.inline_script_count()
        return str(cached["policy"])

    @server.after_request
    def add_security_headers(response: Response) -> Response:
        for header, value in SECURITY_HEADERS.items():
            response.headers.setdefault(header, value)
        response.headers.setdefault("Content-Security-Policy", policy())
        if request.path.startswith(DOWNLOADS_PREFIX):
            response.headers["Cache-Control"] = "no-store"
        return response

    @server.before_request
    def refuse_declared_oversize() -> None:
        # Flask enforces the limit only when a view reads the body; checking the
        # declared length up front gives every route the same answer, unread.
        # A route that streams its body itself (an upload's file) checks its own, larger limit.
        if request.method == "PUT" and request.path.startswith(STREAMED_BODY_PREFIX):
            return
        limit = server.config.get("MAX_CONTENT_LENGTH")
        if limit and request.content_length and request.content_length > limit:
            raise RequestEntityTooLarge()
        if limit and request.content_length is None and "chunked" in request.headers.get("Transfer-Encoding", ""):
            _count_unsized_body(limit)

    _guard_dash_routes(app)

    @server.errorhandler(RequestEntityTooLarge)
    def upload_too_large(_error: RequestEntityTooLarge) -> tuple[Response, int]:
        limit = int(server.config.get("MAX_CONTENT_LENGTH") or 0)
        message = too_large_message(request.content_length, limit)
        wants_json = request.path.startswith("/_dash") or request.is_json or (
            request.accept_mimetypes.best == "application/json")
        if wants_json:
            return jsonify({"error": message, "limit_bytes": limit, "size_bytes": request.content_length}), 413
        return Response(message + "\n", mimetype="text/plain"), 413


def _count_unsized_body(limit: int) -> None:
    """Read a body sent without a length (chunked) up to the limit; past it, 413.

    Werkzeug cuts such a body silently at MAX_CONTENT_LENGTH, so the view saw
    truncated JSON and answered 400. Read here, the body is handed on with its
    length, as if it had been declared.
    """
    environ = request.environ
    source = environ["wsgi.input"]
    body = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 (lives as long as the request)
    size = 0
    while chunk := source.read(64 * 1024):
        size += len(chunk)
        if size > limit:
            body.close()
            raise RequestEntityTooLarge()
        body.write(chunk)
    body.seek(0)
    environ["wsgi.input"] = body
    environ["CONTENT_LENGTH"] = str(size)
    environ.pop("wsgi.input_terminated", None)
    environ.pop("HTTP_TRANSFER_ENCODING", None)  # else Werkzeug ignores the length just set
    request.__dict__.pop("stream", None)  # not read yet; dropped in case anything cached it


def _guard_dash_routes(app: WebApp) -> None:
    server = app.server
    endpoints = {rule.rule.split("/")[1]: rule.endpoint for rule in server.url_map.iter_rules()}

    def wrap(route: str, guard: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        endpoint = endpoints[route]
        server.view_functions[endpoint] = guard(server.view_functions[endpoint])

    def suites(serve: Callable[..., Any]) -> Callable[..., Any]:
        def serve_known(package_name: str, fingerprinted_path: str) -> Any:
            try:
                return serve(package_name, fingerprinted_path)
            except app.unknown_file_errors:  # not a file the framework registered
                raise NotFound() from None
        return serve_known

    def callbacks(dispatch: Callable[..., Any]) -> Callable[..., Any]:
        def dispatch_known() -> Any:
            body = request.get_json(silent=True)
            problem = callback_request_problem(body, app.callback_map())
            if problem:
                output = body.get("output") if isinstance(body, dict) else None
                log.warning("refused callback request for %s: %s", output, problem)
                return jsonify({"error": f"malformed callback request: {problem}"}), 400
            try:
                return dispatch()
            except app.bad_request_errors as exc:
                # The request has the right shape but not the values its callback takes (a callback's
                # own errors never get here: the app's on_error shows them in the page). A value our
                # callback returned that Dash cannot send is our bug: that stays a 500.
                # A declined update (Dash's PreventUpdate) is a CallbackException too, but it is a
                # callback's normal "no change" that Dash answers 204.
                if isinstance(exc, app.passed_on_errors):
                    raise
                log.warning("malformed callback request for %s: %s: %s", request.get_json().get("output"),
                            type(exc).__name__, exc)
                return jsonify({"error": "malformed callback request: its values do not fit the callback"}), 400
        return dispatch_known

    wrap(app.suites_route, suites)
    wrap(app.callback_route, callbacks)


def _is_dependency(item: object) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("property"), str)
            and isinstance(item.get("id"), str | dict))


_WILDCARDS = (["ALL"], ["MATCH"], ["ALLSMALLER"])


def _declared(component: str) -> str | dict[str, Any]:
    """A declared dependency id: a plain id, or a pattern-matching one (its JSON)."""
    if component.startswith("{"):
        try:
            parsed = json.loads(component)
        except ValueError:
            return component
        if isinstance(parsed, dict):
            return parsed
    return component


def _fits(item: object, declared_id: str | dict[str, Any], declared_property: str) -> bool:
    """Whether one sent dependency is the declared one (a pattern: a component its pattern matches)."""
    if not _is_dependency(item):
        return False
    assert isinstance(item, dict)
    if item["property"].split("@")[0] != declared_property.split("@")[0]:
        return False
    if isinstance(declared_id, str):
        return item["id"] == declared_id
    sent = item["id"]
    return isinstance(sent, dict) and set(sent) == set(declared_id) and all(
        value in _WILDCARDS or sent[key] == value for key, value in declared_id.items())


def _slot_problem(sent: object, declared: dict[str, Any] | tuple[str, str], key: str) -> str:
    component, prop = (declared["id"], declared["property"]) if isinstance(declared, dict) else declared
    declared_id = _declared(component)
    if isinstance(declared_id, dict) and any(value in (["ALL"], ["ALLSMALLER"]) for value in declared_id.values()):
        # Matches any number of components: the renderer sends their list.
        if isinstance(sent, list) and all(_fits(item, declared_id, prop) for item in sent):
            return ""
        return f"'{key}' does not match the callback's pattern {component}.{prop}"
    if not _fits(sent, declared_id, prop):
        return f"'{key}' is not {component}.{prop} as the callback declares"
    return ""


def _output_parts(output: str) -> list[tuple[str, str]]:
    parts = output[2:-2].split("...") if output.startswith("..") and output.endswith("..") else [output]
    return [(part.rsplit(".", 1)[0], part.rsplit(".", 1)[1]) for part in parts if "." in part]


def callback_request_problem(body: object, callback_map: dict[str, Any]) -> str:
    """What is wrong with a /_dash-update-component body, or '' when it names a callback of this app and
    sends exactly the outputs, inputs and states it declares (patterns: components they match)."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callback_map:
        return "'output' names no callback of this app"
    declared = callback_map[output]
    outputs, parts = body.get("outputs"), _output_parts(output)
    if output.startswith(".."):
        if not isinstance(outputs, list) or len(outputs) != len(parts):
            return f"'outputs' is not the callback's {len(parts)} outputs"
    else:
        outputs = [outputs]
    for index, (sent, part) in enumerate(zip(outputs, parts, strict=False)):
        problem = _slot_problem(sent, part, f"outputs[{index}]")
        if problem:
            return problem
    for key in ("inputs", "state"):
        sent_items, wanted = body.get(key, []), declared.get(key, [])
        if not isinstance(sent_items, list) or len(sent_items) != len(wanted):
            return f"'{key}' is not the callback's {len(wanted)} {key}"
        for index, (sent, want) in enumerate(zip(sent_items, wanted, strict=True)):
            problem = _slot_problem(sent, want, f"{key}[{index}]")
            if problem:
                return problem
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(prop, str) for prop in changed):
        return "'changedPropIds' is not a list of names"
    return ""


class QuietRequestHandler(WSGIRequestHandler):
    """The development server's request handler without versions in `Server:`."""

    def version_string(self) -> str:
        return SERVER_NAME


def resolve_inside(root: Path, relative: str, jail: Path | None = None) -> Path:
    """The regular file `relative` names under `root`, or NotFound.

    Refused: empty or absolute paths, '..' or '.' segments, backslashes, NUL,
    a path that does not exist, anything that is not a regular file, and any
    symlink (of the file or a folder on the way) whose target is outside
    `root`; `root` itself must resolve inside `jail` (default: root).
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        raise NotFound()
    if any(part in ("", ".", "..") for part in relative.split("/")):
        raise NotFound()
    try:
        base = root.resolve(strict=True)
        allowed = (jail or root).resolve(strict=True)
        target = (base / relative).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a symlink loop, a name too long
        raise NotFound() from None
    if not base.is_relative_to(allowed) or not target.is_relative_to(base) or not target.is_file():
        raise NotFound()
    return target
