"""Read a tinygrad VIZ pickle without tinygrad and without running any of it.

`find_class` is the whole policy: `decimal.Decimal` (every timestamp) is allowed; a `tinygrad.*`
name becomes an inert stand-in (`records.py`: a record, an enum value, a ConstFloat), whether the
spec lists it or not (other backends' renderers, a release's new event classes), and nothing named
is imported; every other global (`os.system`, `builtins.eval`, `collections.OrderedDict`) stops
the read with one line naming it. The rest (only stand-ins are ever called, no persistent ids,
bounded hashing, no bytearray) is `safe_pickle.SafeUnpickler`'s.

The pure-Python unpickler runs ~5x slower than CPython's C one (1.0 s against 0.2 s for a 5 MB
rewrites.pkl on this machine) but is the only one whose every opcode can be checked: the C one
would hash a dict key nested a million tuples deep and crash the process.
"""

from __future__ import annotations

import io
import pickle
import struct
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, ClassVar

from dashboard.collectors.base import IngestError, read_source_bytes
from dashboard.collectors.safe_pickle import RefusedPickle, SafeUnpickler
from dashboard.collectors.tinygrad.records import ENUM_FAMILIES, ConstFloat, EnumFactory, is_record, record_class

# Larger (uncompressed) files are refused: a 2-step MLP writes 5 MB, a large model's compile a few hundred.
MAX_BYTES = 2 << 30
REWRITES, PROFILE = "rewrites", "profile"


def _is_tinygrad_name(module: str, name: str) -> bool:
    parts = module.split(".")
    return parts[0] == "tinygrad" and all(part.isidentifier() for part in parts) and name.isidentifier()


class DenseMemo:
    """pickle's memo as a list for the keys protocol 4 gives in order (MEMOIZE: 0, 1, 2, ...) and a dict for
    any other key (BINPUT / PUT of a damaged or older file), with a dict's meaning throughout.

    A rewrites.pkl memoizes every tuple: 2.5 million keys for a 41 MB file, ~190 MB as a dict of int keys
    against 20 MB as a list. A key far past the end still costs one dict entry, never a longer list."""

    __slots__ = ("dense", "sparse")

    def __init__(self) -> None:
        self.dense: list[Any] = []
        self.sparse: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.dense) + len(self.sparse)

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int and 0 <= key < len(self.dense):
            return self.dense[key]
        return self.sparse[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        dense = self.dense
        if type(key) is int and 0 <= key < len(dense):
            dense[key] = value
        elif key == len(dense):
            self.sparse.pop(key, None)
            dense.append(value)
        else:
            self.sparse[key] = value


class TinygradUnpickler(SafeUnpickler):
    dispatch: ClassVar[dict[int, Any]] = dict(SafeUnpickler.dispatch)

    def __init__(self, handle: io.BytesIO) -> None:
        super().__init__(handle)
        self.memo = DenseMemo()
        self._given: dict[tuple[str, str], Any] = {}
        self._callable_ids: set[int] = set()  # ids of what `_given` holds (and keeps alive)

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in self._given:
            return self._given[key]
        if key == ("decimal", "Decimal"):
            given: Any = Decimal
        elif not _is_tinygrad_name(module, name):
            raise RefusedPickle(f"the pickle asks to import `{module}.{name}` (it would run code); a tinygrad VIZ "
                                "file holds only tinygrad records, decimals and plain data, so it was not loaded")
        elif key in ENUM_FAMILIES:
            given = EnumFactory(ENUM_FAMILIES[key])
        elif name == "ConstFloat":
            given = ConstFloat
        else:
            given = record_class(module, name)
        self._given[key] = given
        self._callable_ids.add(id(given))
        return given

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickle("the pickle refers to a persistent object (it would need code to resolve); a tinygrad "
                            "VIZ file holds only plain data, so it was not loaded")

    def allowed_callable(self, func: Any) -> bool:
        return id(func) in self._callable_ids


def kind_of(value: Any) -> str | None:
    """`rewrites` for a RewriteTrace, `profile` for a list of Profile*Event records, else None."""
    if is_record(value, "RewriteTrace"):
        return REWRITES
    if type(value) is list and all(is_record(event) and event.name.startswith("Profile") for event in value):
        return PROFILE
    return None


def load(path: Path) -> tuple[str, Any]:
    """(`rewrites` or `profile`, the file's object), or one IngestError line saying why not."""
    data = read_source_bytes(path)
    if len(data) > MAX_BYTES:
        raise IngestError(path, f"too large: {len(data):,} bytes uncompressed, more than the {MAX_BYTES:,} a tinygrad "
                                "VIZ file is read up to")
    stream = io.BytesIO(data)
    try:
        value = TinygradUnpickler(stream).load()
    except RefusedPickle as exc:
        raise IngestError(path, str(exc)) from None
    except (EOFError, struct.error):  # struct.error: an opcode's argument cut short by the file's end
        raise IngestError(path, "truncated pickle: the file ends before the tinygrad data does") from None
    except MemoryError:
        raise IngestError(path, "corrupt pickle: a length in it exceeds the memory of this machine") from None
    except RecursionError:
        raise IngestError(path, "corrupt pickle: nested too deeply to read") from None
    except (pickle.UnpicklingError, ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError,
            InvalidOperation, UnicodeDecodeError, ArithmeticError) as exc:
        # Every byte read and no STOP: the file ends early, whichever opcode found its argument missing
        # (a BINGET cut after its opcode fails as an IndexError).
        if "truncated" in str(exc) or "exhausted" in str(exc) or stream.tell() >= len(data):
            raise IngestError(path, "truncated pickle: the file ends before the tinygrad data does") from None
        # The exception's text is the unpickler's (issue 14: no library text reaches the user).
        what = "a value of the wrong type" if isinstance(exc, TypeError | AttributeError) else "damaged data"
        raise IngestError(path, f"corrupt pickle: its bytes do not decode as tinygrad VIZ data ({what})") from None
    kind = kind_of(value)
    if kind is None:
        shown = getattr(value, "name", type(value).__name__)
        raise IngestError(path, f"not a tinygrad VIZ file: a pickled {shown}, neither a RewriteTrace (rewrites.pkl) "
                                "nor a list of profile events (profile.pkl)")
    return kind, value
