"""Inert stand-ins for the tinygrad objects a VIZ pickle holds: plain records, never tinygrad's classes.

How tinygrad 0.12-0.14 pickle them (docs: the tinygrad VIZ spec, section 2), and what each becomes:

- dataclasses (RewriteTrace, TrackedGraphRewrite, TracingKey, the Profile*Event classes, KernelInfo,
  ProgramInfo, Estimates, ParamArg, Opt, Target, Metadata, ...): NEWOBJ then BUILD with the field
  dict: a `Record` holding that dict (`record.get(field)`; a field an older release lacks is None);
- classes with their own `__reduce__` (UOp, DType, PtrDType, the renderers, CallInfo, InvalidType):
  REDUCE `cls(*args)`: a `Record` whose positional arguments get the field names of `POSITIONAL`
  (`_arg0`, `_arg1`, ... for a class not listed there);
- enums (Ops, AxisType, OptOps, AddrSpace): REDUCE `Enum(value)`: an `EnumValue(family, value)`;
  its name needs the release's table (`enums.py`), known only once the file is read;
- ConstFloat (a float subclass with a `bits` state): a `ConstFloat`, a float that ignores its state.

A record never runs code: it stores what it is given. Its `__setstate__` takes only a dict with
string keys (or `(None, dict)`, slots state) and copies it; it defines no `__eq__` / `__hash__`, so
hashing one never looks inside it.
"""

from __future__ import annotations

from typing import Any, ClassVar

# Field names of the classes pickled by REDUCE with positional arguments (tinygrad 0.12-0.14).
POSITIONAL: dict[str, tuple[str, ...]] = {
    "UOp": ("op", "dtype", "src", "arg", "tag", "metadata", "buffer"),
    # 0.14: (priority, bitsize, name, fmt); 0.12/0.13 add count and the scalar of a vector type.
    "DType": ("priority", "bitsize", "name", "fmt", "count", "scalar"),
    "PtrDType": ("priority", "bitsize", "name", "fmt", "count", "scalar", "base", "addrspace", "v", "size"),
    "ImageDType": ("priority", "bitsize", "name", "fmt", "count", "scalar", "base", "addrspace", "v", "size",
                   "shape"),
    "InvalidType": (),
}
# Renderers pickle as `Renderer(target)`. CallInfo is left positional: its layout changed between releases
# (0.14: None, name, precompile, ...; 0.13: None, metadata, name, ...); `values.call_name` reads either.
_RENDERER_FIELDS = ("target",)
# Enums pickled as `Enum(value)` whose names the release tables hold: (module, name) -> table name.
ENUM_FAMILIES: dict[tuple[str, str], str] = {
    ("tinygrad.uop", "Ops"): "Ops",
    ("tinygrad.uop.ops", "Ops"): "Ops",
    ("tinygrad.uop.ops", "AxisType"): "AxisType",
    ("tinygrad.codegen.opt", "OptOps"): "OptOps",
    ("tinygrad.codegen.opt.kernel", "OptOps"): "OptOps",
    ("tinygrad.dtype", "AddrSpace"): "AddrSpace",
}


class Record:
    """One pickled tinygrad object: its class name and its fields, nothing else."""

    __slots__ = ("fields",)
    module: ClassVar[str] = "tinygrad"
    name: ClassVar[str] = "Record"

    def __new__(cls, *args: Any) -> Record:  # NEWOBJ: dataclasses pass no arguments
        record = object.__new__(cls)
        record.fields = {f"_arg{i}": value for i, value in enumerate(args)}
        return record

    def __init__(self, *args: Any) -> None:  # REDUCE cls(*args)
        names = POSITIONAL.get(self.name) or (_RENDERER_FIELDS if self.name.endswith("Renderer") else ())
        self.fields = {names[i] if i < len(names) else f"_arg{i}": value for i, value in enumerate(args)}

    def __setstate__(self, state: Any) -> None:
        if type(state) is tuple and len(state) == 2 and state[0] is None:  # (None, slots state)
            state = state[1]
        if type(state) is not dict or not all(type(key) is str for key in state):
            raise ValueError("a record's state that is not a dict of field names")
        self.fields.update(state)

    def get(self, field: str, default: Any = None) -> Any:
        return self.fields.get(field, default)

    def __repr__(self) -> str:  # for debugging only: arguments are rendered by `values.render`
        return f"<{self.module}.{self.name} {sorted(self.fields)}>"


class EnumValue:
    """`Ops(33)`: the family and the number; the name comes from a release table."""

    __slots__ = ("family", "value")

    def __init__(self, family: str, value: Any) -> None:
        self.family, self.value = family, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnumValue) and (self.family, self.value) == (other.family, other.value)

    def __hash__(self) -> int:
        return hash((self.family, self.value if type(self.value) is int else id(self.value)))

    def __repr__(self) -> str:
        return f"{self.family}({self.value!r})"


class ConstFloat(float):
    """tinygrad's float CONST argument (it keeps the exact bits of NaNs in a state the value does not need)."""

    def __setstate__(self, state: Any) -> None:
        return None


class EnumFactory:
    """What `find_class` gives for an enum: REDUCE calls it with the member's value."""

    __slots__ = ("family",)

    def __init__(self, family: str) -> None:
        self.family = family

    def __call__(self, *args: Any) -> EnumValue:
        if len(args) != 1:
            raise ValueError("an enum member pickled with other than one value")
        return EnumValue(self.family, args[0])


def record_class(module: str, name: str) -> type[Record]:
    """A fresh Record subclass standing for `module.name` (one per name per file read)."""
    return type("Record", (Record,), {"__slots__": (), "module": module, "name": name})


def is_record(value: Any, *names: str) -> bool:
    """True for a record of one of the given class names (any record when none are given)."""
    return isinstance(value, Record) and (not names or value.name in names)
