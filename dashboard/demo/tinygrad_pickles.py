"""Pickles shaped as tinygrad writes them, written without tinygrad: the generated demo's and tests' files.

tinygrad pickles its dataclasses by NEWOBJ + BUILD (the field dict), UOp / DType / CallInfo /
renderers by REDUCE `cls(*args)`, enum members by REDUCE `Enum(value)` (memoized: one REDUCE per
member), ConstFloat as a float subclass with a slots state, and timestamps as `decimal.Decimal`.
The stand-ins here pickle the same way under the same global names (`tinygrad.uop.ops.UOp`), so a
reader cannot tell them from tinygrad's own files by structure; only their content is made up.

pickle's own Pickler looks each global up by importing its module, which would need tinygrad:
`VizPickler.save_global` writes a stand-in's module and name as they are instead.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import struct
from typing import Any, ClassVar

_CLASSES: dict[tuple[str, str], type] = {}


class _Standin:
    viz_global: tuple[str, str] = ("tinygrad", "Standin")


class Dataclass(_Standin):
    """A tinygrad dataclass: pickled as NEWOBJ(cls) + BUILD(fields)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return copyreg.__newobj__, (type(self),), self.fields


class Reduced(_Standin):
    """A tinygrad class with its own `__reduce__`: pickled as REDUCE cls(*args)."""

    def __init__(self, *args: Any) -> None:
        self.args = args

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return type(self), self.args


class ConstFloatBase(float):
    viz_global: tuple[str, str] = ("tinygrad.dtype", "ConstFloat")

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        bits = struct.unpack("<Q", struct.pack("<d", float(self)))[0]
        return copyreg.__newobj__, (type(self), float(self)), (None, {"bits": bits})


def standin(module: str, name: str, base: type = Dataclass) -> type:
    """The stand-in class pickled as `module.name` (one per name, so the pickler memoizes its global)."""
    key = (module, name)
    if key not in _CLASSES:
        _CLASSES[key] = type(name, (base,), {"viz_global": key, "__module__": __name__})
    return _CLASSES[key]


def record(module: str, cls: str, **fields: Any) -> Dataclass:
    return standin(module, cls)(fields)  # type: ignore[no-any-return]


def reduced(module: str, cls: str, *args: Any) -> Reduced:
    return standin(module, cls, Reduced)(*args)  # type: ignore[no-any-return]


def const_float(value: float) -> float:
    return standin("tinygrad.dtype", "ConstFloat", ConstFloatBase)(value)  # type: ignore[no-any-return]


class EnumMembers:
    """Enum members of one family, one object per value (so the pickle memoizes each, as tinygrad's do)."""

    def __init__(self, module: str, name: str, names: dict[int, str]) -> None:
        self.module, self.name = module, name
        self.values = {member: value for value, member in names.items()}
        self._members: dict[int, Reduced] = {}

    def __getitem__(self, member: str) -> Reduced:
        value = self.values[member]
        if value not in self._members:
            self._members[value] = reduced(self.module, self.name, value)
        return self._members[value]


class VizPickler(pickle._Pickler):  # type: ignore[name-defined,misc]
    """The pure-Python pickler, writing a stand-in class's global name without importing its module."""

    def save_global(self, obj: Any, name: str | None = None) -> None:
        viz_global = getattr(obj, "viz_global", None) if isinstance(obj, type) else None
        if viz_global is None:
            super().save_global(obj, name)
            return
        module, qualname = viz_global
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    dispatch: ClassVar[dict[type, Any]] = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]
    dispatch[type] = save_global


def dumps(value: Any, protocol: int = 4) -> bytes:
    """`value` pickled as tinygrad writes its files: protocol 4 is Python 3.8-3.13's default."""
    buffer = io.BytesIO()
    VizPickler(buffer, protocol=protocol).dump(value)
    return buffer.getvalue()
