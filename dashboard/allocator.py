"""Ingest processes give freed memory back to the system at once.

polars allocates with jemalloc, set up by polars to keep freed pages for
0.5-1 s to reuse them; an ingest is over in a few seconds. An ingest builds a few short-lived copies of every table
(normalised, nested, linked), so the kept pages, not the live tables, made
most of its peak resident memory: 575 MB for a 262 MB Kineto trace, against
~400 MB when freed pages are returned at once (measured for issue 19; the
returns cost ~15 % more CPU, mostly page faults on fresh buffers, so the
server keeps the default). jemalloc reads its settings from the environment
once, when polars loads: `prefer_prompt_release` must run before the first
`import polars` of the process, and decode workers inherit the setting.
A setting the user made (`_RJEM_MALLOC_CONF`) is kept. (polars itself writes
`dirty_decay_ms:500,muzzy_decay_ms:1000` and appends the variable's value, and
jemalloc takes the last value of an option.)
"""

from __future__ import annotations

import os
import sys

# polars' jemalloc has its symbols prefixed `_rjem_`, and so is its environment variable.
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
# Purging happens in jemalloc's background thread, off the path of the work.
PROMPT_RELEASE = "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"


def prefer_prompt_release() -> bool:
    """Ask for prompt release when polars is not loaded yet; whether the setting can take effect."""
    if "polars" in sys.modules:
        return False
    os.environ.setdefault(ALLOCATOR_ENV, PROMPT_RELEASE)
    return True
