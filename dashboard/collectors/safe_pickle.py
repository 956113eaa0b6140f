"""What every restricted unpickler here shares: a pure-Python unpickler that runs no code and stays bounded.

A pickle can name any importable callable and call it (`__reduce__`: `os.system`). Each format's
loader subclasses `SafeUnpickler` and decides, in `find_class`, what a global becomes: the
PyTorch allocator snapshot refuses them all, the tinygrad VIZ files map `tinygrad.*` names to
inert records. Whatever it decides, this base keeps three promises of its own:

- nothing is called that `find_class` did not hand out (`allowed_callable`): REDUCE, NEWOBJ and
  the protocol-0 instance opcodes check the callable before calling it, and a persistent id
  (which only code could resolve) is refused;
- no size in the file makes it allocate before reading (its memo is a dict, so a memo index of
  2^32 costs one entry; a BYTEARRAY8 of 2^40 bytes is refused before `bytearray(n)` zeroes it);
- no dict key or set member makes CPython's hash recurse without bound: hashing a tuple recurses
  in C with no depth check, so a key nested a million tuples deep crashes the interpreter (a
  segmentation fault, measured on 3.11), and one built as `t = (t, t)` sixty times never ends. Keys
  and members are checked (`hash_is_bounded`) before they are inserted.

The opcode loop reads the file directly, without pickle's frame buffer (a Python call per read,
~30% of the time); frames are checked to end inside the file at the end, as the C unpickler
checks them up front.
"""

from __future__ import annotations

import pickle
from decimal import Decimal
from typing import Any, BinaryIO, ClassVar

# How many tuple / frozenset items (counted with repetition, as hashing visits them) a key may hold.
HASH_BUDGET = 10_000
# Values whose hash never recurses: checked by exact type, the common case, before anything else.
_FLAT = frozenset({str, int, float, bool, bytes, type(None), Decimal, complex})


def starts_a_pickle(head: bytes) -> bool:
    """Whether a file's first bytes open a pickle of protocol 2 to 5 (PROTO then its number)."""
    return len(head) >= 2 and head[0] == pickle.PROTO[0] and 2 <= head[1] <= 5


class RefusedPickle(Exception):
    """The pickle asks for something its format never holds (a global, a persistent id): it was not run."""


def hash_is_bounded(value: Any, budget: int = HASH_BUDGET) -> bool:
    """True when hashing `value` visits at most `budget` nested tuple / frozenset items."""
    if type(value) in _FLAT:
        return True
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) in (tuple, frozenset):
            budget -= len(item)
            if budget < 0:
                return False
            pending.extend(child for child in item if type(child) not in _FLAT)
        elif isinstance(item, tuple | frozenset):  # a subclass (namedtuple) hashes its items the same way
            budget -= len(item)
            if budget < 0:
                return False
            pending.extend(item)
    return True


class SafeUnpickler(pickle._Unpickler):  # type: ignore[name-defined,misc]
    """pickle's pure-Python unpickler with the guards above; subclasses decide what globals become."""

    dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, handle: BinaryIO) -> None:
        super().__init__(handle)
        self._tell = handle.tell
        self._frames_end = 0  # where the furthest frame announced so far ends

    # --- what a subclass decides -------------------------------------------------------------------

    def find_class(self, module: str, name: str) -> Any:
        raise RefusedPickle(f"the pickle asks to import `{module}.{name}` (it would run code), so it was not loaded")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickle("the pickle refers to a persistent object (it would need code to resolve), "
                            "so it was not loaded")

    def allowed_callable(self, func: Any) -> bool:
        """Whether REDUCE / NEWOBJ may call `func`: only what `find_class` handed out, never anything else."""
        return False

    def refuse_call(self, func: Any) -> None:
        raise RefusedPickle(f"the pickle calls a `{type(func).__name__}` that no allowed global gave, "
                            "so it was not loaded")

    def _check_call(self, func: Any, of_class: bool = False) -> None:
        """Refuse calling `func` unless `find_class` handed it out (NEWOBJ: and it is a class)."""
        if self.allowed_callable(func):
            if of_class and not isinstance(func, type):
                raise pickle.UnpicklingError("NEWOBJ of something that is not a class")
            return
        if not callable(func):  # a call of a string or a number: damaged bytes, not a request to run anything
            raise pickle.UnpicklingError("a call of a value that is not callable")
        self.refuse_call(func)

    # --- the loop ----------------------------------------------------------------------------------

    def load(self) -> Any:
        """pickle._Unpickler.load, reading the file directly: its frame buffer costs a Python call per read."""
        self.read, self.readline = self._file_read, self._file_readline
        self.metastack, self.stack = [], []
        self.append = self.stack.append
        self.proto = 0
        read, dispatch = self.read, self.dispatch
        try:
            while True:
                key = read(1)
                if not key:
                    raise EOFError
                dispatch[key[0]](self)
        except pickle._Stop as stop:  # type: ignore[attr-defined]
            if self._frames_end > self._tell():  # as the C unpickler, which reads each whole frame first
                raise pickle.UnpicklingError("a frame runs past the end of the pickle") from None
            return stop.value

    def _load_frame(self) -> None:
        # A frame only announces how many bytes follow (for buffering): they are read opcode by opcode anyway,
        # and that they all exist is checked at the end.
        size = self.read(8)
        if len(size) < 8:
            raise EOFError
        self._frames_end = max(self._frames_end, self._tell() + int.from_bytes(size, "little"))

    def _load_bytearray(self) -> None:
        # bytearray(n) zeroes n bytes before reading them (n from the file: up to 2^63); no format here holds one.
        raise pickle.UnpicklingError("a bytearray, which none of the pickled formats read here holds")

    # --- calls: only what find_class gave -----------------------------------------------------------

    def _load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        self._check_call(func)
        if type(args) is not tuple:
            raise pickle.UnpicklingError("REDUCE arguments that are not a tuple")
        self.stack[-1] = func(*args)

    def _load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self._check_call(cls, of_class=True)
        if type(args) is not tuple:
            raise pickle.UnpicklingError("NEWOBJ arguments that are not a tuple")
        self.append(cls.__new__(cls, *args))

    def _load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self._check_call(cls, of_class=True)
        if type(args) is not tuple or type(kwargs) is not dict:
            raise pickle.UnpicklingError("NEWOBJ_EX arguments of the wrong type")
        self.append(cls.__new__(cls, *args, **kwargs))

    def _instantiate(self, klass: Any, args: Any) -> None:  # INST / OBJ (protocols 0-1)
        self._check_call(klass)
        super()._instantiate(klass, args)

    def _load_build(self) -> None:
        # Only an object that takes its state (`__setstate__`) is built: the default would set attributes on
        # anything on the stack, a class handed out by `find_class` included.
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, type) or getattr(inst, "__setstate__", None) is None:
            raise pickle.UnpicklingError("state for an object that takes none")
        inst.__setstate__(state)

    # --- keys: bounded hashing -----------------------------------------------------------------------

    def _key(self, key: Any) -> Any:
        if type(key) not in _FLAT and not hash_is_bounded(key):
            raise pickle.UnpicklingError("a dict key or set member nested too deeply to hash")
        return key

    def _load_setitem(self) -> None:
        value = self.stack.pop()
        key = self._key(self.stack.pop())
        self.stack[-1][key] = value

    def _load_setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        check = self._key
        for index in range(0, len(items), 2):
            target[check(items[index])] = items[index + 1]

    def _load_dict(self) -> None:  # DICT (protocols 0-1)
        items = self.pop_mark()
        check = self._key
        self.append({check(items[i]): items[i + 1] for i in range(0, len(items), 2)})

    def _load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        for item in items:
            self._key(item)
        if isinstance(target, set):
            target.update(items)
        else:
            for item in items:
                target.add(item)

    def _load_frozenset(self) -> None:
        items = self.pop_mark()
        for item in items:
            self._key(item)
        self.append(frozenset(items))

    dispatch[pickle.FRAME[0]] = _load_frame
    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray
    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.NEWOBJ[0]] = _load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = _load_newobj_ex
    dispatch[pickle.BUILD[0]] = _load_build
    dispatch[pickle.SETITEM[0]] = _load_setitem
    dispatch[pickle.SETITEMS[0]] = _load_setitems
    dispatch[pickle.DICT[0]] = _load_dict
    dispatch[pickle.ADDITEMS[0]] = _load_additems
    dispatch[pickle.FROZENSET[0]] = _load_frozenset
