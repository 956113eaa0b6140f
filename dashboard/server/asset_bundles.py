"""The app's own scripts and style sheets, served as one file of each kind.

Dash puts every file of assets/ on the page as a tag of its own: 13 small scripts and 4 style sheets.
A returning visitor's browser looks each one up in its cache, holds the scripts until every style sheet
has arrived, and runs each script in a task of its own: on 2 cores that is ~20-60 ms more before
DOMContentLoaded than one file of each kind (warm loads, interleaved A/B). So each kind is joined, in
Dash's order (sorted names), into one file whose URL carries a digest of its content and is cached a
year; the page gets one tag where Dash put the first of them. The plotly.js bundle (1.3 MB, its version
in its name, see tools/plotly-bundle) stays a file of its own.

Each member starts with a `/* assets/<name> */` line, so the developer tools (and the tests) can tell
where a file's code is. The scripts are classic scripts sharing one global scope whether joined or not;
each is followed by `;` so a file without a final semicolon cannot run into the next. The joined script
starts with V8's compile hint (server/compile_hints.py). Bundles are built when the app is created (every
worker builds the same), so an edited asset is served once the server restarts; with `--debug` (Dash's hot
reload of assets) nothing is joined.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, Response, abort

from dashboard.server.compile_hints import COMPILE_HINT

KINDS = {"js": "application/javascript", "css": "text/css"}
ROUTE = "_bundles/"
# Kept out of the joined script: the plotly.js bundle, large and versioned by its own name.
SEPARATE = re.compile(r"^plotly-dashboard-[\w.]+\.js$")
_TAG = {
    "js": r'<script src="{prefix}assets/(?P<name>[^"?]+\.js)\?m=[\d.]+"></script>',
    "css": r'<link rel="stylesheet" href="{prefix}assets/(?P<name>[^"?]+\.css)\?m=[\d.]+">',
}


@dataclass(frozen=True)
class Bundle:
    """One kind's files of assets/, joined; `members` in the order they run; `file_name` carries the digest."""

    kind: str
    members: tuple[str, ...]
    body: bytes
    file_name: str

    def tag(self, prefix: str) -> str:
        url = f"{prefix}{ROUTE}{self.file_name}"
        return f'<script src="{url}"></script>' if self.kind == "js" else f'<link rel="stylesheet" href="{url}">'


def build_bundles(assets_dir: Path) -> dict[str, Bundle]:
    """A bundle per kind with any file in `assets_dir` (top level only, as this app keeps it)."""
    bundles = {}
    for kind in KINDS:
        names = tuple(sorted(path.name for path in assets_dir.glob(f"*.{kind}")
                             if path.is_file() and not SEPARATE.match(path.name)))
        if names:
            body = _joined(assets_dir, names, kind)
            # Hashed once here: every page's index names the file.
            bundles[kind] = Bundle(kind, names, body, f"{kind}-{hashlib.sha256(body).hexdigest()[:16]}.{kind}")
    return bundles


def _joined(assets_dir: Path, names: tuple[str, ...], kind: str) -> bytes:
    parts = [COMPILE_HINT] if kind == "js" else []
    for name in names:
        parts += [f"/* assets/{name} */\n".encode(), (assets_dir / name).read_bytes(),
                  b"\n;\n" if kind == "js" else b"\n"]
    return b"".join(parts)


def with_bundle(tags: str, bundle: Bundle, prefix: str) -> str:
    """`tags` (Dash's script or style sheet tags) with the bundle's members replaced by its one tag.

    Unchanged unless the asset tags are exactly the bundle's members in its order: a file Dash serves
    that the bundle lacks (or the reverse) keeps every tag as Dash wrote it.
    """
    pattern = re.compile(_TAG[bundle.kind].format(prefix=re.escape(prefix)) + r"\s*")
    found = [match for match in pattern.finditer(tags) if not SEPARATE.match(match["name"])]
    if tuple(match["name"] for match in found) != bundle.members:
        return tags
    kept, end = [], 0
    for match in found:
        kept.append(tags[end:match.start()])
        end = match.end()
    kept.append(tags[end:])
    return kept[0] + bundle.tag(prefix) + "\n" + "".join(kept[1:])


def install_asset_bundles(server: Flask, bundles: dict[str, Bundle], routes_prefix: str) -> None:
    """Serve each bundle at its digest-named URL, cached a year (the URL changes with the content)."""
    by_name = {bundle.file_name: bundle for bundle in bundles.values()}

    @server.route(f"{routes_prefix}{ROUTE}<name>")
    def asset_bundle(name: str) -> Response:
        bundle = by_name.get(name)
        if bundle is None:
            abort(404)
        response = Response(bundle.body, mimetype=KINDS[bundle.kind])
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return response
