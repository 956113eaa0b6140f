"""Small ingests give freed memory back to the system at once.

polars allocates with jemalloc, set up by polars to keep freed pages for
0.5-1 s to reuse them; an ingest is over in a few seconds. It builds a few
short-lived copies of every table (normalised, nested, linked), so the kept
pages, not the live tables, made most of its peak resident memory: ~505 MB for
a 262 MB Kineto trace (1.9x the file) against ~370 MB (1.4x) when freed pages
are returned at once. Returning them costs CPU (page faults on fresh buffers):
~10 % at 262 MB, ~20 % at 882 MB, where the default already peaks at 1.4x the
file (1.2 GB; the fixed ~150 MB of interpreter and libraries no longer
dominates). Measured for issue 19; so prompt release is asked for inputs under
PROMPT_RELEASE_BELOW_BYTES only, and the server keeps the default.

jemalloc reads its settings from the environment once, when polars loads:
`prefer_prompt_release` must run before the first `import polars` of the
process, and decode workers inherit the setting. A setting the user made
(`_RJEM_MALLOC_CONF`) is kept. (polars itself writes
`dirty_decay_ms:500,muzzy_decay_ms:1000` and appends the variable's value, and
jemalloc takes the last value of an option.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

# polars' jemalloc has its symbols prefixed `_rjem_`, and so is its environment variable.
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
# Purging happens in jemalloc's background thread, off the path of the work.
PROMPT_RELEASE = "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"
# Where the default's peak falls under 1.5x the input (between the 262 and 882 MB measurements).
PROMPT_RELEASE_BELOW_BYTES = 700 * 1000 * 1000


def input_bytes(arguments: Iterable[str]) -> int:
    """Bytes on disk of the arguments that name files or folders (options and missing paths count 0)."""
    total = 0
    for argument in arguments:
        try:
            if os.path.isfile(argument):
                total += os.path.getsize(argument)
            elif os.path.isdir(argument):
                for folder, _, files in os.walk(argument):
                    total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
        except OSError:
            continue
    return total


def prefer_prompt_release(input_size: int | None = None) -> bool:
    """Ask for prompt release when polars is not loaded yet and the input is small (or unknown);
    whether it was asked."""
    if "polars" in sys.modules:
        return False
    if input_size is not None and input_size >= PROMPT_RELEASE_BELOW_BYTES:
        return False
    os.environ.setdefault(ALLOCATOR_ENV, PROMPT_RELEASE)
    return True
