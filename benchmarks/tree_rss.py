"""Peak resident memory of a process tree, for the ingest benchmarks.

Sampled over the whole tree (the Kineto collector decodes big files in worker
processes), summing every process's resident set: an upper bound, since pages
shared between processes (the mapped trace) count twice.
"""

from __future__ import annotations

import inspect
import os


def tree_rss_kb(root: int) -> int:
    """Resident memory of a process and all its descendants, summed, in KiB."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/status") as status:
                total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as children:
                    stack += [int(child) for child in children.read().split()]
        except (OSError, StopIteration):
            pass
    return total


# The same sampler as source for a `python -c` child that measures itself: `peak_kb[0]` holds the peak.
SELF_SAMPLER = "import os, threading, time\n" + inspect.getsource(tree_rss_kb) + """
peak_kb = [0]
def _sample():
    while True:
        peak_kb[0] = max(peak_kb[0], tree_rss_kb(os.getpid()))
        time.sleep(0.02)
threading.Thread(target=_sample, daemon=True).start()
"""
