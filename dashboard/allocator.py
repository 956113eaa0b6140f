"""How polars' allocator gives freed memory back during an ingest, by input size.

polars allocates with jemalloc, set up by polars to keep freed pages for
0.5 s (dirty) and another 1 s (muzzy, given back lazily: still resident until
the kernel wants them) to reuse them. An ingest builds a few short-lived copies
of every table (normalised, nested, linked), so kept pages, not live tables,
make much of its peak resident memory. Measured for issue 19 on the benchmark
traces (two cores):

* small inputs (< PROMPT_RELEASE_BELOW_BYTES): the fixed part (interpreter,
  libraries, ~100 MB of pages kept for reuse) dominates. Keeping freed pages
  for even 5 ms peaked at 1.6x a 262 MB trace (200 ms: 1.7x; polars' default
  1.9x); returning them at once (PROMPT_RELEASE) 1.36x, at a price in CPU
  (page faults on fresh buffers: ~0.6 s of a ~2.6 s ingest). Prompt release
  is asked for.
* big inputs: pages are kept for 0.2 s and then returned at once
  (LARGE_INPUT: no lazy "muzzy" stage, whose pages still count as resident).
  The peak then grows by ~1.04x the input over a fixed ~180 MB: 503 MB peaked
  at 1.43x the file in 3.5 s against 1.15x in 4.9 s with prompt release; 882 MB
  at 1.1-1.24x (polars' default: 1.49x). Below ~500 MB the fixed part lifts it
  over 1.5x.

The server keeps polars' default. jemalloc reads its settings from the
environment once, when polars loads: `prefer_prompt_release` must run before the
first `import polars` of the process, and decode workers inherit the setting.
A setting the user made (`_RJEM_MALLOC_CONF`) is kept. (polars itself writes
`dirty_decay_ms:500,muzzy_decay_ms:1000` and appends the variable's value, and
jemalloc takes the last value of an option.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Sequence

# polars' jemalloc has its symbols prefixed `_rjem_`, and so is its environment variable.
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
# Purging happens in jemalloc's background thread, off the path of the work.
PROMPT_RELEASE = "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"
# Where keeping freed pages for a while no longer lifts the peak over 1.5x the input (1.43x at 503 MB).
PROMPT_RELEASE_BELOW_BYTES = 500 * 1000 * 1000
LARGE_INPUT = "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0"


def input_bytes(arguments: Sequence[str], value_options: Collection[str] = ()) -> int:
    """Bytes on disk of the arguments that name input files or folders.

    Options are not inputs, nor are the values of `value_options` (`--data DIR` names the data folder,
    whose runs must not count: a folder of earlier runs made every ingest look big); missing paths
    count 0.
    """
    total, skip_value, options_ended = 0, False, False
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
    """Ask for prompt release when polars is not loaded yet and the input is small (or unknown), for
    LARGE_INPUT when it is big; whether prompt release was asked."""
    if "polars" in sys.modules:
        return False
    if input_size is not None and input_size >= PROMPT_RELEASE_BELOW_BYTES:
        os.environ.setdefault(ALLOCATOR_ENV, LARGE_INPUT)
        return False
    os.environ.setdefault(ALLOCATOR_ENV, PROMPT_RELEASE)
    return True
