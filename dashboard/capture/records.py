"""Turn CUPTI activity records into plain column rows, cheaply, on CUPTI's thread.

cupti-python hands the buffer-completed callback a list of record objects whose
classes change between releases (ActivityKernel9 ... 13, ActivityMemcpy5 ... 7).
So records are dispatched on their integer `kind`, never on the class, and
read by attribute name. Per (kind, class) the attributes that class really has
are looked up once and read with one `attrgetter`, so the per-record cost is
one tuple; record objects are never kept past the callback (their memory
belongs to CUPTI's buffer).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

import polars as pl

# `cupti.ActivityKind` values: fixed by the C enum (cupti_activity.h), so they
# are spelled out here and the adapter never needs `cupti` to be importable.
MEMCPY = 1
MEMSET = 2
DRIVER = 4
RUNTIME = 5
CONCURRENT_KERNEL = 10
MARKER = 12
MEMCPY2 = 22  # peer-to-peer copies
EXTERNAL_CORRELATION = 39

KIND_NAMES: dict[int, str] = {
    MEMCPY: "MEMCPY",
    MEMSET: "MEMSET",
    DRIVER: "DRIVER",
    RUNTIME: "RUNTIME",
    CONCURRENT_KERNEL: "CONCURRENT_KERNEL",
    MARKER: "MARKER",
    MEMCPY2: "MEMCPY2",
    EXTERNAL_CORRELATION: "EXTERNAL_CORRELATION",
}

# Runtime calls left out of the capture (`cupti.runtime_api_trace_cbid` values, fixed by
# cupti_runtime_cbid.h): host-side queries that launch, copy and wait for nothing, yet make ~90% of a
# PyTorch loop's runtime calls (5,200 cudaGetDevice a step on the device check's GPT). PyTorch's
# profiler drops the same three from its traces; the capture asks CUPTI not to record them at all
# (`activity_enable_runtime_api(cbid, 0)`), which also spares their external-correlation records and
# their Python cost in the buffer callback, and drops any that still arrive when building the tables.
SKIPPED_RUNTIME_APIS: dict[int, str] = {10: "cudaGetLastError", 16: "cudaSetDevice", 17: "cudaGetDevice"}

# `cupti.ExternalCorrelationKind.CUSTOM0`: the id kind the layer hooks push.
EXTERNAL_KIND_CUSTOM0 = 3
# CUpti_ActivityFlag bits of a MARKER record; the Python enum lacks MARKER_END.
MARKER_FLAG_START = 1 << 1
MARKER_FLAG_END = 1 << 2

# The fields read per kind (Python attribute names of cupti-python 12.8 / 13.x).
# A class lacking a field yields a null column for it.
_INT = pl.Int64
_STR = pl.String
FIELDS: dict[int, dict[str, pl.DataType]] = {
    CONCURRENT_KERNEL: {
        "device_id": _INT,
        "stream_id": _INT,
        "correlation_id": _INT,
        "name": _STR,
        "start": _INT,
        "end": _INT,
        "grid_x": _INT,
        "grid_y": _INT,
        "grid_z": _INT,
        "block_x": _INT,
        "block_y": _INT,
        "block_z": _INT,
        "registers_per_thread": _INT,
        "static_shared_memory": _INT,
        "dynamic_shared_memory": _INT,
    },
    MEMCPY: {
        "device_id": _INT,
        "stream_id": _INT,
        "correlation_id": _INT,
        "copy_kind": _INT,
        "src_kind": _INT,
        "dst_kind": _INT,
        "bytes": _INT,
        "start": _INT,
        "end": _INT,
    },
    MEMSET: {
        "device_id": _INT,
        "stream_id": _INT,
        "correlation_id": _INT,
        "memory_kind": _INT,
        "bytes": _INT,
        "start": _INT,
        "end": _INT,
    },
    RUNTIME: {"cbid": _INT, "thread_id": _INT, "correlation_id": _INT, "start": _INT, "end": _INT},
    DRIVER: {"cbid": _INT, "thread_id": _INT, "correlation_id": _INT, "start": _INT, "end": _INT},
    MARKER: {"id": _INT, "name": _STR, "timestamp": _INT, "flags_": _INT, "domain": _STR},
    EXTERNAL_CORRELATION: {"correlation_id": _INT, "external_kind": _INT, "external_id": _INT},
}
# Peer-to-peer copies carry the same fields we read as plain copies.
FIELDS[MEMCPY2] = FIELDS[MEMCPY]

# NVIDIA's samples use 8 MB buffers; smaller ones make CUPTI call back often.
BUFFER_BYTES = 8 * 1024 * 1024


def _text(value: Any) -> Any:
    # Names arrive as str in current releases; tolerate bytes from older ones.
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


class _Reader:
    """Reads one (kind, class) of record into a tuple of the fields it has."""

    def __init__(self, kind: int, sample: Any) -> None:
        wanted = FIELDS[kind]
        self.fields = tuple(name for name in wanted if hasattr(sample, name))
        self.schema = {name: wanted[name] for name in self.fields}
        self.texts = tuple(i for i, name in enumerate(self.fields) if wanted[name] == _STR)
        if len(self.fields) == 1:
            getter = attrgetter(self.fields[0])
            self.read = lambda record: (getter(record),)
        elif self.fields:
            self.read = attrgetter(*self.fields)
        else:
            self.read = lambda record: ()


class RecordSink:
    """The target of CUPTI's buffer callbacks: rows per kind, built into frames later.

    `buffer_requested` and `buffer_completed` have exactly the signatures
    cupti-python calls (no arguments -> (size, max_records); list of records).
    `buffer_completed` runs on a CUPTI worker thread and on the flushing
    thread, so rows are grouped locally and appended under a lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers: dict[tuple[int, type], _Reader] = {}
        self._rows: dict[tuple[int, type], list[tuple]] = {}
        self.buffers_requested = 0
        self.buffers_completed = 0
        self.records = 0
        self.ignored_kinds: Counter[int] = Counter()

    def buffer_requested(self) -> tuple[int, int]:
        self.buffers_requested += 1
        return BUFFER_BYTES, 0  # 0 = no limit on records per buffer

    def buffer_completed(self, activities: Iterable[Any]) -> None:
        local: dict[tuple[int, type], list[tuple]] = {}
        ignored: Counter[int] = Counter()
        count = 0
        for record in activities:
            count += 1
            kind = int(record.kind)
            if kind not in FIELDS:
                ignored[kind] += 1
                continue
            key = (kind, type(record))
            reader = self._readers.get(key)
            if reader is None:
                reader = self._readers.setdefault(key, _Reader(kind, record))
            rows = local.get(key)
            if rows is None:
                rows = local[key] = []
            rows.append(reader.read(record))
        with self._lock:
            for key, rows in local.items():
                self._rows.setdefault(key, []).extend(rows)
            self.ignored_kinds.update(ignored)
            self.buffers_completed += 1
            self.records += count

    def frames(self) -> dict[int, pl.DataFrame]:
        """One frame per activity kind, columns named after the record fields."""
        with self._lock:
            groups = {key: list(rows) for key, rows in self._rows.items()}
        per_kind: dict[int, list[pl.DataFrame]] = {}
        for (kind, _cls), rows in groups.items():
            reader = self._readers[(kind, _cls)]
            try:
                frame = pl.DataFrame(rows, schema=reader.schema, orient="row")
            except (TypeError, pl.exceptions.PolarsError):
                # Older releases may hand names over as bytes: decode, then retry.
                texts = reader.texts
                decoded = [tuple(_text(v) if i in texts else v for i, v in enumerate(row)) for row in rows]
                frame = pl.DataFrame(decoded, schema=reader.schema, orient="row")
            per_kind.setdefault(kind, []).append(frame)
        result: dict[int, pl.DataFrame] = {}
        for kind, frames in per_kind.items():
            full = pl.DataFrame(schema=FIELDS[kind])
            result[kind] = pl.concat([full, *frames], how="diagonal_relaxed").select(list(FIELDS[kind]))
        return result
