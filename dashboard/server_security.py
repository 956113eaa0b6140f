"""What a team server adds around the Dash app: security headers, a clear 413, path-safe files.

- Every response carries X-Content-Type-Options, X-Frame-Options,
  Referrer-Policy and a Content-Security-Policy under which Dash, plotly and
  AG Grid work: scripts only from this server plus the sha256 hashes of
  Dash's own inline scripts (the clientside callbacks and the renderer
  bootstrap), so an injected inline script does not run.
- An upload over the limit (Flask's MAX_CONTENT_LENGTH) answers 413 with
  "upload too large: N MiB > limit M MiB" as JSON for Dash's requests and as
  text elsewhere.
- `resolve_inside` is the one gate for serving a file from a folder: no
  `..`, no absolute paths, no symlink that leads outside; anything refused
  is a 404, never a 500 and never a read elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import dash
from dash import _callback as dash_callback
from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import NotFound, RequestEntityTooLarge

MIB = 1024 * 1024

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


def install_security(app: dash.Dash) -> None:
    """Security headers on every response and a clear 413 for oversized requests."""
    server: Flask = app.server
    # Dash adds inline scripts until its first request is set up (the page
    # router adds one then), so the hashes are recomputed when their number changes.
    cached: dict[str, object] = {"count": -1, "policy": ""}

    def inline_script_count() -> int:
        # Dash exposes no public count: its own list plus callbacks registered but not yet merged.
        return len(app._inline_scripts) + len(dash_callback.GLOBAL_INLINE_SCRIPTS)

    def policy() -> str:
        count = inline_script_count()
        if count != cached["count"]:
            cached["policy"] = content_security_policy(list(app.csp_hashes()))
            cached["count"] = inline_script_count()
        return str(cached["policy"])

    @server.after_request
    def add_security_headers(response: Response) -> Response:
        for header, value in SECURITY_HEADERS.items():
            response.headers.setdefault(header, value)
        response.headers.setdefault("Content-Security-Policy", policy())
        return response

    @server.before_request
    def refuse_declared_oversize() -> None:
        # Flask enforces the limit only when a view reads the body; checking the
        # declared length up front gives every route the same answer, unread.
        limit = server.config.get("MAX_CONTENT_LENGTH")
        if limit and request.content_length and request.content_length > limit:
            raise RequestEntityTooLarge()

    @server.errorhandler(RequestEntityTooLarge)
    def upload_too_large(_error: RequestEntityTooLarge) -> tuple[Response, int]:
        limit = int(server.config.get("MAX_CONTENT_LENGTH") or 0)
        message = too_large_message(request.content_length, limit)
        wants_json = request.path.startswith("/_dash") or request.is_json or (
            request.accept_mimetypes.best == "application/json")
        if wants_json:
            return jsonify({"error": message, "limit_bytes": limit, "size_bytes": request.content_length}), 413
        return Response(message + "\n", mimetype="text/plain"), 413


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
