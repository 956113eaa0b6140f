"""The scripts a page runs, in order, with the app's joined assets (server/asset_bundles.py) listed by file."""

from __future__ import annotations

import re
from typing import Any

MEMBER = re.compile(r"^/\* assets/([^ ]+) \*/$", re.MULTILINE)


def page_scripts(client: Any, path: str) -> list[str]:
    """Script URLs of `path` as a Flask test client gets them; a bundle's place holds `/assets/<name>` per member."""
    scripts = []
    for src in re.findall(r'<script src="([^"]+)"', client.get(path).get_data(as_text=True)):
        if "/_bundles/" in src:
            scripts += [f"/assets/{name}" for name in MEMBER.findall(client.get(src).get_data(as_text=True))]
        else:
            scripts.append(src)
    return scripts
