"""Component libraries loaded only where a page needs them at once: AG Grid (1.3 MB) and Cytoscape (0.5 MB).

Dash puts every registered library's script on every page, because its pages change in place and any
component may appear; the browser reads and runs all of them before the renderer draws anything (~80 ms
of a warm load on two cores, measured with the two tags removed). Pages whose first screen holds neither
a grid nor a graph of these libraries (/insights, /timeline, /ranks, /history, and every table that
AfterCharts draws after the charts) get the scripts' URLs in a meta tag instead, and
`assets/lazy-libraries.js` stands in for their components: it loads the script when one of them is first
drawn, or once the page's charts are drawn and the browser is idle, whichever is first.
"""

from __future__ import annotations

import json
import re
from html import escape

META_NAME = "dashboard-lazy-libraries"
# namespace -> its component types (what the stand-in must answer for) and the page paths whose first
# screen draws one of them, where the script stays a plain tag in the page.
LIBRARIES: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "dash_ag_grid": (("AgGrid",), frozenset({"/"})),  # the Runs page is its grid
    "dash_cytoscape": (("Cytoscape", "CyLeaflet"), frozenset({"/compiler"})),  # /planner: a preview first
}
# namespace -> the chunks its components load on first draw. Where the library comes as a tag, its chunks
# come as tags too: left lazy, a chunk is asked for only once React draws the component, and revalidated
# on every load (its URL has no version): ~30 ms on the Runs page's critical path.
CHUNKS: dict[str, tuple[str, ...]] = {"dash_ag_grid": ("async-community.js",)}
_TAG = re.compile(r'<script src="(?P<src>[^"]*/(?P<namespace>dash_ag_grid|dash_cytoscape)/[^"]*)"></script>\s*')


def defer_libraries(scripts: str, page_path: str) -> tuple[str, str]:
    """(the page's script tags without the libraries it does not need at once, the meta tag naming them).

    `page_path`: the request's path inside the app (`app_path`). A library whose tag is
    not found is left as it is; with nothing deferred the meta tag is empty.
    """
    deferred: dict[str, dict[str, object]] = {}

    def drop(match: re.Match[str]) -> str:
        namespace = match["namespace"]
        types, eager_paths = LIBRARIES[namespace]
        if page_path in eager_paths:
            return match[0]
        deferred[namespace] = {"src": match["src"], "types": list(types)}
        return ""

    kept = _TAG.sub(drop, scripts)
    if not deferred:
        return kept, ""
    return kept, f'<meta name="{META_NAME}" content="{escape(json.dumps(deferred), quote=True)}">'


def app_path(request_path: str, pathname_prefix: str) -> str:
    """The page path of a request Flask routed under Dash's `routes_pathname_prefix` ("/" for the prefix itself).

    The routes prefix, not the requests one: a proxy that serves the app under a prefix strips it before
    Flask sees the path (Dash's own `strip_relative_path`, which strips the requests prefix, fails there).
    """
    prefix = pathname_prefix.rstrip("/")
    inside = request_path[len(prefix):] if prefix and request_path.startswith(prefix) else request_path
    return "/" + inside.strip("/")


def eager_chunks(scripts: str) -> list[tuple[str, str]]:
    """(namespace, chunk) of each library whose script tag is in the page's `scripts` (after defer_libraries)."""
    return [(namespace, chunk) for namespace, chunks in CHUNKS.items()
            if f"/{namespace}/" in scripts for chunk in chunks]
