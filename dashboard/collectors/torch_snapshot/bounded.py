"""CPython's C unpickler, 3-5x faster than the pure-Python one, with its memory bounded by the address space.

The C unpickler cannot be bounded from Python by inspection: a LONG_BINPUT
opcode's 4-byte memo index makes it grow its memo array to twice that index
and zero it (a 6 KB file naming index 7.8 x 10^8 costs 12 GB and 10-30 s
inside C, where no alarm reaches; 9 of 10,000 fuzzed snapshots did that),
and which bytes are opcodes is only known by parsing. So the process's
address space is capped (RLIMIT_AS) while it runs: at what it uses now plus
WHOLE_ROOM_PER_BYTE x the snapshot's size plus WHOLE_ROOM_BYTES, far above
what a real snapshot's objects need (~3.5 x its bytes). An allocation past
the cap fails at once (MemoryError) instead of being zeroed page by page;
the caller then reads the file with the streaming loader, whose memo is a
dict (an index costs one entry), so a real snapshot that needed more room
still loads.

Measured on a shared 2-core machine (ranges over its load): a 100 MB
snapshot with 30-frame tracebacks (the ingest benchmark's) 6-10 s here,
15-34 s streaming; a 26 MB demo snapshot 2.2-3.2 s against 3.4-8 s. A
damaged 6 KB file naming memo index 6.5 x 10^7 took 2-6 s under a 1 GB room,
hence the small fixed room. Where the cap cannot be set (no RLIMIT_AS or no
/proc/self/statm to measure the current size: macOS, Windows), `can_bound`
is False and every snapshot is streamed.

The cap is process-wide, so it is only set in a process whose only Python
thread is the one loading (the server's budgeted ingest child, the CLI);
anywhere else (a server thread) the snapshot is streamed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dashboard.collectors.torch_snapshot.unpickle import refuse_global, refuse_persistent

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

WHOLE_ROOM_PER_BYTE = 8
WHOLE_ROOM_BYTES = 64 << 20  # a memo grown past the cap is never zeroed: small files cost ~0.1 s at most
_STATM = Path("/proc/self/statm")


class _WholeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return refuse_global(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return refuse_persistent(pid)


def can_bound() -> bool:
    """Whether `bounded_address_space` may cap the process: Linux, and no other Python thread to starve."""
    return (resource is not None and hasattr(resource, "RLIMIT_AS") and _STATM.is_file()
            and threading.active_count() == 1)


def _address_space_bytes() -> int:
    return int(_STATM.read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def bounded_address_space(room: int) -> Iterator[int]:
    """Cap the process's address space at its current size + `room` bytes (lower caps kept); yields the cap."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space_bytes() + room
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield cap
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def load_whole(handle: BinaryIO, size: int) -> Any:
    """The snapshot as Python objects, by the C unpickler with every global refused and the address space
    capped for a pickle of `size` bytes (uncompressed); MemoryError when it asks for more."""
    with bounded_address_space(WHOLE_ROOM_PER_BYTE * size + WHOLE_ROOM_BYTES):
        return _WholeUnpickler(handle).load()
