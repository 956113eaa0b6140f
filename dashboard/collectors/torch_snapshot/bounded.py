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

Nor can the C unpickler be kept from hashing: a dict key or set member is hashed as it is inserted,
and hashing a tuple recurses in C without a depth check, so a key nested ~150,000 tuples deep
(a 150 KB file) overflows the C stack and kills the process (a segmentation fault, on 3.11), and
one built as `t = (t, t)` sixty times hashes for ever. A snapshot holds (next to) no tuples, so
before the C unpickler runs, `hash_risk` walks the opcodes exactly (runs of fixed-length opcodes
and short length-prefixed ones by a regular expression, at C speed; the rest in Python) and counts
the tuple and frozenset builders: with at most MAX_SMALL_TUPLES of TUPLE1-3 and no other, no hash
can nest deeper or visit more than 4^12 items; anything else is read by the streaming loader,
whose every key is checked before it is hashed (`safe_pickle.hash_is_bounded`).
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import re
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
MAX_SMALL_TUPLES = 12  # TUPLE1-3 builders a file may execute and still be hashed by the C unpickler
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


class StreamInstead(MemoryError):
    """The file is one the C unpickler must not read (its keys could make hashing recurse without bound):
    a MemoryError, so the caller's fall-back to the streaming loader takes it, which checks every key."""


# Opcodes with a fixed-length argument (or none) that build no tuple or frozenset and are no STOP, by the
# length of their argument (the commonest in a snapshot first: BINGET, LONG_BINGET): skipped in runs, each
# run one possessive regular-expression match (4x a Python loop; ~2.5 s per 100 MB against ~20 s to load).
_FIXED = {1: b"Khq\x82\x80", 4: b"Jjr\x84", 0: b"N\x88\x89]ael)}dsu\x8f\x90021(\x94\x93Rbo\x81\x92Q\x97\x98",
          2: b"M\x83", 8: b"G\x95"}
# Short length-prefixed arguments (ints past 2^31, short strings: most of a snapshot's others) as well.
_SHORT = b"\x8a\x8cUC"  # LONG1, SHORT_BINUNICODE, SHORT_BINSTRING, SHORT_BINBYTES
_SHORT_MAX = 48
_FIXED_RUN = re.compile(
    b"(?:" + b"|".join(b"[" + re.escape(codes) + b"]" + b"." * n for n, codes in _FIXED.items())
    + b"|[" + re.escape(_SHORT) + b"](?:" + b"|".join(re.escape(bytes([n])) + b"." * n
                                                        for n in range(_SHORT_MAX + 1)) + b"))*+", re.DOTALL)
_SMALL_TUPLES = frozenset(b"\x85\x86\x87")  # TUPLE1, TUPLE2, TUPLE3
_OTHER_HASHED = frozenset(b"t\x91")  # TUPLE (to MARK) and FROZENSET: any number of items
# Length-prefixed arguments: opcode -> bytes of the length (LONG1, SHORT_BINSTRING, SHORT_BINBYTES,
# SHORT_BINUNICODE; LONG4, BINSTRING, BINBYTES, BINUNICODE; BINBYTES8, BYTEARRAY8, BINUNICODE8).
_LENGTH_BYTES = {0x8A: 1, 0x55: 1, 0x43: 1, 0x8C: 1, 0x8B: 4, 0x54: 4, 0x42: 4, 0x58: 4, 0x8E: 8, 0x96: 8, 0x8D: 8}
# Protocol 0's newline-ended arguments: opcode -> lines (INT LONG STRING UNICODE FLOAT GET PUT PERSID; GLOBAL INST).
_LINES = {0x49: 1, 0x4C: 1, 0x53: 1, 0x56: 1, 0x46: 1, 0x67: 1, 0x70: 1, 0x50: 1, 0x63: 2, 0x69: 2}


def hash_risk(data: bytes) -> str | None:
    """Why the C unpickler must not read `data` (a key whose hash could recurse or fan out without bound),
    None when it may. Walks the opcodes as the unpickler will, up to STOP, a damaged opcode or the end."""
    position = 2 if data[:1] == pickle.PROTO else 0
    small = 0
    end = len(data)
    while position < end:
        position = _FIXED_RUN.match(data, position).end()  # type: ignore[union-attr]
        if position >= end:
            break
        code = data[position]
        if code in _SMALL_TUPLES:
            small += 1
            if small > MAX_SMALL_TUPLES:
                return f"more than {MAX_SMALL_TUPLES} tuples"
            position += 1
        elif code in _OTHER_HASHED:
            return "a tuple or frozenset of any length"
        elif code in _LENGTH_BYTES:
            width = _LENGTH_BYTES[code]
            position += 1 + width + int.from_bytes(data[position + 1:position + 1 + width], "little")
        elif code in _LINES:
            for _ in range(_LINES[code]):
                found = data.find(b"\n", position + 1)
                if found < 0:
                    return None  # cut short: the unpickler stops there
                position = found
            position += 1
        else:  # STOP, or a byte that is no opcode (the unpickler stops there)
            return None
    return None


def load_whole(handle: BinaryIO, size: int) -> Any:
    """The snapshot as Python objects, by the C unpickler with every global refused and the address space
    capped for a pickle of `size` bytes (uncompressed); MemoryError when it asks for more, StreamInstead
    (a MemoryError) when its keys could make hashing recurse (`hash_risk`)."""
    data = handle.read()
    if hash_risk(data) is not None:
        raise StreamInstead("dict keys the C unpickler cannot hash safely")
    with bounded_address_space(WHOLE_ROOM_PER_BYTE * size + WHOLE_ROOM_BYTES):
        return _WholeUnpickler(io.BytesIO(data)).load()
