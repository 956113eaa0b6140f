"""Load a PyTorch allocator snapshot pickle without running any of its code.

A snapshot (`torch.cuda.memory._dump_snapshot`) is a pickle of plain data:
dicts, lists, tuples, str, int, float, bool and None. A pickle can also name
any importable callable and call it (`__reduce__`: `os.system`), so the
loader here refuses every global (`find_class`) and persistent id: such a
file stops with one line naming the callable, nothing of it runs.

Two loaders: `bounded.load_whole`, CPython's C unpickler under an address-space
cap, for snapshots up to STREAM_ABOVE_BYTES; and `load_streaming` here, the
pure-Python unpickler (~5x slower), for larger ones, for any snapshot the
capped loader runs out of room on, and where no cap can be set. Its memo
is a dict, so no memo index in a damaged file makes it allocate; its opcode
loop and the guards every restricted unpickler shares (no call it did not
allow, no bytearray, bounded hashing of keys) are `safe_pickle.SafeUnpickler`'s.

Two hooks bound memory for snapshots of any size: trace lists
(`device_traces`) are handed to `on_entries` at the first append past
`batch` entries (the pickler appends 1,000 items at a time) and emptied, and
the memo forgets the entries handed over (a pickle memoizes every dict, so
the memo alone would otherwise keep them all alive). Frame dicts stay in the
memo: there is one per distinct source line, shared by every traceback.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import Any, BinaryIO, ClassVar

from dashboard.collectors.safe_pickle import RefusedPickle, SafeUnpickler

__all__ = ["STREAM_ABOVE_BYTES", "OnEntries", "RefusedPickle", "load_streaming", "refuse_global", "refuse_persistent"]

# Snapshot objects take ~3.5x their pickled bytes in Python: above this the streaming loader is used.
STREAM_ABOVE_BYTES = 256 * 1024 * 1024
OnEntries = Callable[[int, list[dict[str, Any]]], None]  # (trace list number, entries)


def refuse_global(module: str, name: str) -> Any:
    raise RefusedPickle(f"the pickle asks to import `{module}.{name}` (it would run code); "
                        "an allocator snapshot holds only dicts, lists, strings and numbers, so it was not loaded")


def refuse_persistent(pid: Any) -> Any:
    raise RefusedPickle("the pickle refers to a persistent object (it would need code to resolve); "
                        "an allocator snapshot holds only plain data, so it was not loaded")


def is_trace_entry(item: Any) -> bool:
    return type(item) is dict and "action" in item


class _StreamingUnpickler(SafeUnpickler):
    """Pure-Python unpickler that drains trace lists in batches and forgets what it drained."""

    dispatch: ClassVar[dict[int, Any]] = dict(SafeUnpickler.dispatch)

    def __init__(self, handle: BinaryIO, on_entries: OnEntries, batch: int) -> None:
        super().__init__(handle)
        self._on_entries = on_entries
        self._batch = batch
        self._trace_lists: dict[int, int] = {}  # id(list) -> its number, in order of first entry
        self._keep_alive: list[list[Any]] = []  # so the ids above stay unique
        self._memo_next = 0  # the key MEMOIZE gives next (protocol 4+)
        self._scanned = 0  # MEMOIZE keys below this were looked at by `_forget`
        self._named: list[int] = []  # keys BINPUT / LONG_BINPUT gave (protocols 1-3) since the last `_forget`

    def find_class(self, module: str, name: str) -> Any:
        return refuse_global(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return refuse_persistent(pid)

    def trace_list_number(self, target: list[Any]) -> int | None:
        return self._trace_lists.get(id(target))

    def _memoize(self) -> None:
        # A counter rather than len(memo), so that forgotten keys are not reused.
        self.memo[self._memo_next] = self.stack[-1]
        self._memo_next += 1

    def _put(self, index: int) -> None:
        # Kept apart from `_memo_next`: a damaged index (up to 2^32) must cost one entry, not a scan up to it.
        self.memo[index] = self.stack[-1]
        self._named.append(index)

    def _load_binput(self) -> None:  # protocols 1-3 name their memo keys
        self._put(self.read(1)[0])

    def _load_long_binput(self) -> None:
        self._put(int.from_bytes(self.read(4), "little"))

    def _appended(self, target: Any, first: Any) -> None:
        if type(target) is not list:
            return
        number = self._trace_lists.get(id(target))
        if number is None and is_trace_entry(first):
            number = self._trace_lists[id(target)] = len(self._trace_lists)
            self._keep_alive.append(target)
        if number is not None and len(target) >= self._batch:
            self.drain(target, number)

    def drain(self, target: list[Any], number: int) -> None:
        entries = target[:]
        target.clear()
        self._on_entries(number, entries)
        del entries
        self._forget()

    def _forget(self) -> None:
        """Drop handed-over entries from the memo; a later reference to one fails loudly (KeyError)."""
        memo = self.memo
        for key in (*range(self._scanned, self._memo_next), *self._named):
            value = memo.get(key)
            if type(value) is dict and "action" in value:
                del memo[key]
        self._scanned = self._memo_next
        self._named.clear()

    def _load_append(self) -> None:
        value = self.stack.pop()
        target = self.stack[-1]
        target.append(value)
        self._appended(target, value)

    def _load_appends(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is list:
            target.extend(items)
        else:
            for item in items:
                target.append(item)
        if items:
            self._appended(target, items[0])

    dispatch[pickle.MEMOIZE[0]] = _memoize
    dispatch[pickle.BINPUT[0]] = _load_binput
    dispatch[pickle.LONG_BINPUT[0]] = _load_long_binput
    dispatch[pickle.APPEND[0]] = _load_append
    dispatch[pickle.APPENDS[0]] = _load_appends


def load_streaming(handle: BinaryIO, on_entries: OnEntries, batch: int = 100_000) -> tuple[Any, dict[int, int]]:
    """(the snapshot with its trace lists emptied, id(trace list) -> number); entries go to `on_entries`.

    What is left in each trace list at the end is handed over too, so every
    entry reaches `on_entries` exactly once, in order within its list.
    """
    unpickler = _StreamingUnpickler(io.BufferedReader(handle, 1 << 20) if not hasattr(handle, "peek") else handle,
                                    on_entries, batch)
    snapshot = unpickler.load()
    for target in unpickler._keep_alive:
        if target:
            unpickler.drain(target, unpickler._trace_lists[id(target)])
    numbers = dict(unpickler._trace_lists)
    return snapshot, numbers
