"""The msgspec types a Kineto trace's events decode into: strict, fast ones first (`FAST`), lenient ones
(`LENIENT`, any JSON value) for a chunk whose values have other types; `decode.py` picks between them."""

from __future__ import annotations

from typing import Any

import msgspec

EMPTY_RAW = msgspec.Raw(b"")


class Top(msgspec.Struct):
    """The top level; `traceEvents` stays raw bytes until it is chunked."""

    traceEvents: msgspec.Raw = EMPTY_RAW
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None


class Dim3(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """`grid` / `block` [x, y, z], read as a struct so columns come out at C speed."""

    x: int | None = None
    y: int | None = None
    z: int | None = None


NO_DIM3 = Dim3()


class FastArgs(msgspec.Struct, frozen=True, gc=False):
    external_id: int | None = msgspec.field(default=None, name="External id")
    external_id_legacy: int | None = msgspec.field(default=None, name="external id")
    correlation: int | None = None
    grid: Dim3 = NO_DIM3
    block: Dim3 = NO_DIM3
    registers: int | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: int | None = msgspec.field(default=None, name="shared memory")
    bytes: int | None = None
    sequence: int | None = msgspec.field(default=None, name="Sequence number")
    fwd_thread: int | None = msgspec.field(default=None, name="Fwd thread id")
    python_id: int | None = msgspec.field(default=None, name="Python id")
    # Kept as raw JSON (a span of the input, no Python list per shape): `columns` turns every op's into text.
    input_dims: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input type")
    concrete_inputs: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Concrete Inputs")
    module_hierarchy: str | None = msgspec.field(default=None, name="Module Hierarchy")
    flops: float | None = None
    # `[memory]` instants (profile_memory=True); `Bytes` is not the copies' `bytes`.
    device_type: int | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")
    addr: int | None = msgspec.field(default=None, name="Addr")
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")
    total_allocated: int | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | None = msgspec.field(default=None, name="Total Reserved")


class FastEvent(msgspec.Struct, gc=False):
    # str alternatives cost nothing to decode and cover legacy string tids
    # ("stream 7") and numbers written as strings without the lenient path.
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | str | None = None
    dur: float | str | None = None
    id: int | str | None = None
    args: FastArgs = FastArgs()


class LenientArgs(msgspec.Struct, frozen=True, gc=False):
    external_id: Any = msgspec.field(default=None, name="External id")
    external_id_legacy: Any = msgspec.field(default=None, name="external id")
    correlation: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    bytes: Any = None
    sequence: Any = msgspec.field(default=None, name="Sequence number")
    fwd_thread: Any = msgspec.field(default=None, name="Fwd thread id")
    python_id: Any = msgspec.field(default=None, name="Python id")
    input_dims: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input type")
    concrete_inputs: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Concrete Inputs")
    module_hierarchy: Any = msgspec.field(default=None, name="Module Hierarchy")
    flops: Any = None
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")
    addr: Any = msgspec.field(default=None, name="Addr")
    mem_bytes: Any = msgspec.field(default=None, name="Bytes")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")


class LenientEvent(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: LenientArgs | None = LenientArgs()


FAST = msgspec.json.Decoder(list[FastEvent])
LENIENT = msgspec.json.Decoder(list[LenientEvent])
ONE_LENIENT = msgspec.json.Decoder(LenientEvent)
RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
TOP_DECODER = msgspec.json.Decoder(Top)
LENIENT_DEFAULT_ARGS = LenientArgs()
