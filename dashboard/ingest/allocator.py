"""How polars' allocator keeps and gives back freed memory during an ingest, by input size.

polars allocates with jemalloc, set up by polars to keep freed pages for
0.5 s (dirty) and another 1 s (muzzy, given back lazily: still resident until
the kernel wants them) to reuse them. An ingest builds a few short-lived copies
of every table (normalised, nested, linked), so kept pages, not live tables,
make much of its peak resident memory; but every page given back is a page
fault (zeroing, ~3 µs here) when the next buffer takes it again, and an ingest
of a 262 MB trace allocates ~2 GB over its life. Measured for issue 19 on the
benchmark traces (two cores, interleaved runs):

* all sizes: one arena (`narenas:1`) rather than jemalloc's 4 per CPU. Freed
  pages of one polars thread then serve the next buffer of any thread; with
  one arena per thread each kept its own (262 MB: peak 1.55-1.64x, 1.3x with one).
* small inputs (< LARGE_INPUT_BYTES): no background thread, freed pages kept
  50 ms (SMALL_INPUT). Without the background thread jemalloc purges as the
  program allocates (every ~1,000 allocations), so pages are reused at once
  and given back soon after. 262 MB: 2.3-2.4 s at 1.28-1.37x against 2.9-3.0 s
  at 1.24-1.36x when every page went back at once (`dirty_decay_ms:0`: twice
  the page faults, 500 k against 230 k); leaving the purges to the background
  thread, which purges at most every 100 ms, peaked at 1.56x. Below ~100 MB
  the fixed part (interpreter, libraries: ~150 MB) dominates whatever the
  setting (97 MB: 2.0x).
* big inputs: the background thread gives pages back 0.2 s after they were
  freed (LARGE_INPUT): 882 MB in 6.2 s at 1.03-1.05x against 6.9 s at 1.0x
  with SMALL_INPUT (1.8x the page faults: at this size the allocation-driven
  purges come more often than the thread's); 503 MB 3.5 s at 1.19x against
  3.9 s at 1.09x.

The server keeps polars' default; an upload, parsed in a child process
(`budget.py`), gets the setting the command line would choose.
jemalloc reads its settings from the environment once, when polars loads:
`choose_for_ingest` must run before the first `import polars` of the process,
and decode workers inherit the setting. A setting the user made
(`_RJEM_MALLOC_CONF`) is kept. (polars itself writes
`dirty_decay_ms:500,muzzy_decay_ms:1000` and appends the variable's value, and
jemalloc takes the last value of an option.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable, Sequence

# polars' jemalloc has its symbols prefixed `_rjem_`, and so is its environment variable.
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
SMALL_INPUT = "background_thread:false,dirty_decay_ms:50,muzzy_decay_ms:0,narenas:1"
LARGE_INPUT = "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0,narenas:1"
# From here the background thread's purging keeps the peak well under 1.5x the input (1.19x at 503 MB).
LARGE_INPUT_BYTES = 500 * 1000 * 1000


def ingest_inputs(arguments: Sequence[str], value_options: Collection[str] = ()) -> list[str]:
    """The ingest command's arguments that name inputs: not options, nor the values of `value_options`
    (`--data DIR` names the data folder, whose runs must not count: a folder of earlier runs made every
    ingest look big)."""
    inputs, skip_value, options_ended = [], False, False
    for argument in arguments:
        if skip_value:
            skip_value = False
            continue
        if not options_ended and argument == "--":
            options_ended = True
            continue
        if not options_ended and argument.startswith("-"):
            skip_value = argument in value_options  # `--data=DIR` carries its value in the same word
            continue
        inputs.append(argument)
    return inputs


def input_bytes(paths: Iterable[str | os.PathLike[str]]) -> int:
    """Bytes on disk of the files and folders among `paths`; missing paths count 0."""
    total = 0
    for path in paths:
        try:
            if os.path.isfile(path):
                total += os.path.getsize(path)
            elif os.path.isdir(path):
                for folder, _, files in os.walk(path):
                    total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
        except OSError:
            continue
    return total


def setting_for(input_size: int | None) -> str:
    """The setting for an ingest of `input_size` bytes (unknown: a small one)."""
    return LARGE_INPUT if input_size is not None and input_size >= LARGE_INPUT_BYTES else SMALL_INPUT


def choose_for_ingest(input_size: int | None = None) -> str | None:
    """Set the allocator for an ingest of `input_size` bytes when polars is not loaded yet and the user
    set none; the setting asked for, or None."""
    if "polars" in sys.modules or ALLOCATOR_ENV in os.environ:
        return None
    os.environ[ALLOCATOR_ENV] = setting_for(input_size)
    return os.environ[ALLOCATOR_ENV]
