"""A small, realistic Nsight Systems SQLite export, written with the stdlib sqlite3.

It mimics `nsys profile --trace=cuda,nvtx` of a data-parallel training loop
(one file per rank): NVTX push/pop ranges step > forward/backward > layer,
an epoch start/end range, an NCCL-domain all-reduce range named by a
registered string, GEMM / elementwise / NCCL / optimizer kernels on two
streams, HtoD / DtoH copies and a memset, CUDA runtime calls with duplicated
backtrace rows (event class 67) and one driver call. `ExportTruth` counts what
was written, as it is written, so tests compare a parser against it.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

_INT, _TEXT = "INTEGER", "TEXT"
_GPU_COLUMNS = "start end deviceId contextId streamId correlationId globalPid"
TABLES: dict[str, str] = {
    "StringIds": "id:PK value:TEXT",
    "CUPTI_ACTIVITY_KIND_KERNEL": f"{_GPU_COLUMNS} demangledName shortName mangledName launchType "
    "cacheConfig registersPerThread gridX gridY gridZ blockX blockY blockZ staticSharedMemory "
    "dynamicSharedMemory localMemoryPerThread localMemoryTotal gridId sharedMemoryExecuted graphNodeId",
    "CUPTI_ACTIVITY_KIND_MEMCPY": f"{_GPU_COLUMNS} bytes copyKind deprecatedSrcId srcKind dstKind "
    "srcDeviceId srcContextId dstDeviceId dstContextId migrationCause graphNodeId virtualAddress",
    "CUPTI_ACTIVITY_KIND_MEMSET": f"{_GPU_COLUMNS} value bytes graphNodeId memKind",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start end eventClass globalTid correlationId nameId returnValue callchainId",
    "NVTX_EVENTS": "start end eventType rangeId category color text:TEXT globalTid endGlobalTid textId domainId",
    "TARGET_INFO_GPU": "vmId id name:TEXT busLocation:TEXT totalMemory smCount computeMajor computeMinor",
    "TARGET_INFO_SESSION_START_TIME": "utcEpochNs utcTime:TEXT localTime:TEXT",
    "TARGET_INFO_SYSTEM_ENV": "globalVid devStateName:TEXT name:TEXT nameEnum value:TEXT",
    "PROCESSES": "globalPid pid name:TEXT",
    "ThreadNames": "nameId priority globalTid",
}
ENUMS: dict[str, list[tuple[int, str, str]]] = {
    "ENUM_CUDA_MEMCPY_OPER": [
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
        (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
        (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    ],
    "ENUM_CUDA_MEM_KIND": [
        (i, f"CUDA_MEMOPR_MEMORY_KIND_{n.upper()}", n)
        for i, n in enumerate(["Pageable", "Pinned", "Device", "Array", "Managed", "Device Static"])
    ],
    "ENUM_NSYS_EVENT_CLASS": [
        (0, "CUDA_RUNTIME", "CUDA runtime"),
        (1, "CUDA_DRIVER", "CUDA driver"),
        (67, "CUDA_BACKTRACE", "CUDA backtrace"),
    ],
    "ENUM_NSYS_EVENT_TYPE": [
        (34, "NvtxMark", "NVTX mark"),
        (39, "NvtxThread", "NVTX thread"),
        (59, "NvtxPushPopRange", "NVTX push-pop range"),
        (60, "NvtxStartEndRange", "NVTX start-end range"),
        (75, "NvtxDomainCreate", "NVTX domain create"),
    ],
}
# Kernel names as nsys stores them: (demangled, short, mangled or None).
KERNEL_NAMES = {
    "gemm": ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
    "gelu": (
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl, "
        "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl, at::detail::Array<char*, 2>)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_18GeluCUDAKernelImplENS_6detail5ArrayIPcLi2EEEEEviT0_T1_",
    ),
    "allreduce": (
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLP11ncclDevCommmP8ncclWork",
    ),
    "adam": (
        "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor<float, 4> >"
        "(at::native::TensorListMetadata<4>, at::native::FusedAdamMathFunctor<float, 4>)",
        "multi_tensor_apply_kernel",
        None,
    ),
}
# (grid, block, registers, static shared bytes, dynamic shared bytes, mean duration ns)
KERNEL_SHAPES = {
    "gemm": ((64, 4, 1), (128, 1, 1), 122, 32768, 0, 90_000),
    "gelu": ((1024, 1, 1), (128, 1, 1), 28, 0, 0, 12_000),
    "allreduce": ((4, 1, 1), (640, 1, 1), 96, 0, 4352, 150_000),
    "adam": ((320, 1, 1), (512, 1, 1), 64, 0, 0, 40_000),
}
_KERNEL_FIELDS = ("demangledName", "shortName", "mangledName", "gridX", "gridY", "gridZ")
_KERNEL_FIELDS += ("blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")
COMPUTE_STREAM, NCCL_STREAM = 7, 13
PUSH_POP, START_END, MARK, THREAD_NAME, DOMAIN_CREATE = 59, 60, 34, 39, 75
BAD_UTF8_TEXT = b"data\xffload"  # a non-UTF-8 NVTX string, as real exports sometimes hold
BAD_UTF8_DECODED = BAD_UTF8_TEXT.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ExportOptions:
    rank: int = 0
    steps: int = 3
    layers: int = 3
    legacy: bool = False  # schema 2.x: EXPORT_META_DATA, no ENUM tables, every table created even if empty
    nvtx: bool = True
    memset: bool = True
    rank_thread_name: bool = True  # NVTX thread name "MPI Rank <n>"
    rank_env: bool = False  # OMPI_COMM_WORLD_RANK in TARGET_INFO_SYSTEM_ENV
    seed: int = 0


@dataclass
class ExportTruth:
    """What the generator wrote, counted while writing."""

    kernels: int = 0
    kernel_ns: int = 0
    copies: int = 0  # memcpy rows
    copy_bytes: int = 0
    memsets: int = 0
    api_calls: int = 0  # runtime (class 0) + driver (class 1); backtrace duplicates excluded
    nvtx_ranges: int = 0  # push/pop + start/end
    max_depth: int = 0
    kernels_by_op: Counter[str] = field(default_factory=Counter)
    copies_by_kind: Counter[str] = field(default_factory=Counter)
    copies_by_op: Counter[str] = field(default_factory=Counter)


class _Trace:
    """Row buffers plus the CPU clock, per-stream GPU clocks and the NVTX stack."""

    def __init__(self, options: ExportOptions) -> None:
        self.options = options
        self.random = random.Random(options.seed * 1000 + options.rank)
        self.rows: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.strings: dict[str, int] = {}
        self.pid = 41000 + options.rank
        self.global_pid = (1 << 48) | (self.pid << 24)
        self.global_tid = self.global_pid | self.pid
        self.device = options.rank % 2
        self.now = 310_000_000  # capture-relative ns, as nsys writes them
        self.stream_free = {COMPUTE_STREAM: 0, NCCL_STREAM: 0}
        self.correlation = 100
        self.stack: list[tuple[str, int, object, int | None, int]] = []
        self.truth = ExportTruth()

    def string(self, value: str) -> int:
        if value not in self.strings:
            self.strings[value] = len(self.strings) + 1
            self.rows["StringIds"].append({"id": self.strings[value], "value": value})
        return self.strings[value]

    def advance(self, low: int, high: int) -> int:
        self.now += self.random.randint(low, high)
        return self.now

    def op(self) -> str | None:
        return self.stack[-1][0] if self.stack else None

    def push(self, name: str | bytes, domain: int | None = None) -> None:
        shown = name.decode("utf-8", errors="replace") if isinstance(name, bytes) else name
        self.stack.append((shown, self.advance(500, 2_000), name, domain, PUSH_POP))
        self.truth.max_depth = max(self.truth.max_depth, len(self.stack) - 1)

    def pop(self) -> None:
        _, start, raw, domain, kind = self.stack.pop()
        # Ranges in a named domain use registered strings (textId), like NCCL's and MPI's wrappers.
        self.nvtx(start, self.advance(500, 2_000), kind, raw, domain, registered=domain is not None)

    def nvtx(
        self, start: int, end: int | None, kind: int, text: str | bytes, domain: int | None, registered: bool = False
    ) -> None:
        registered = registered and isinstance(text, str)
        self.rows["NVTX_EVENTS"].append(
            {
                "start": start,
                "end": end,
                "eventType": kind,
                "globalTid": self.global_tid,
                "text": None if registered else text,
                "textId": self.string(text) if registered else None,
                "domainId": domain or 0,
            }
        )
        self.truth.nvtx_ranges += kind in (PUSH_POP, START_END)

    def api(self, name: str, low: int, high: int, event_class: int = 0, backtrace: bool = False) -> tuple[int, int]:
        self.correlation += 1
        start = self.advance(1_000, 3_000)
        end = self.advance(low, high)
        row = {
            "start": start,
            "end": end,
            "eventClass": event_class,
            "globalTid": self.global_tid,
            "correlationId": self.correlation,
            "nameId": self.string(name),
            "returnValue": 0,
        }
        self.rows["CUPTI_ACTIVITY_KIND_RUNTIME"].append(row)
        if backtrace:  # nsys repeats a backtraced call as class 67 under its unversioned name
            duplicate = row | {"eventClass": 67, "nameId": self.string(name.rsplit("_v", 1)[0]), "callchainId": 1}
            self.rows["CUPTI_ACTIVITY_KIND_RUNTIME"].append(duplicate | {"start": start - 200, "end": end + 150})
        self.truth.api_calls += 1
        return start, end

    def gpu_slot(self, stream: int, call_start: int, duration: int) -> tuple[int, int]:
        begin = max(self.stream_free[stream], call_start + self.random.randint(2_000, 6_000))
        self.stream_free[stream] = begin + duration
        return begin, begin + duration

    def gpu_row(self, stream: int, start: int, end: int) -> dict:
        return {
            "start": start,
            "end": end,
            "deviceId": self.device,
            "contextId": 1,
            "streamId": stream,
            "correlationId": self.correlation,
            "globalPid": self.global_pid,
        }

    def launch(self, kind: str, stream: int = COMPUTE_STREAM) -> None:
        grid, block, registers, static, dynamic, mean = KERNEL_SHAPES[kind]
        names = [self.string(name) if name else None for name in KERNEL_NAMES[kind]]
        call_start, _ = self.api("cudaLaunchKernel_v7000", 3_000, 9_000)
        start, end = self.gpu_slot(stream, call_start, int(mean * self.random.uniform(0.8, 1.25)))
        values = [*names, *grid, *block, registers, static, dynamic]
        row = self.gpu_row(stream, start, end) | dict(zip(_KERNEL_FIELDS, values, strict=True))
        gpu_id = len(self.rows["CUPTI_ACTIVITY_KIND_KERNEL"]) + 1
        self.rows["CUPTI_ACTIVITY_KIND_KERNEL"].append(row | {"launchType": 0, "cacheConfig": 0, "gridId": gpu_id})
        self.truth.kernels += 1
        self.truth.kernel_ns += end - start
        self.truth.kernels_by_op[self.op() or ""] += 1

    def copy(self, kind: int, shown: str, nbytes: int, src: int, dst: int) -> None:
        call_start, _ = self.api("cudaMemcpyAsync_v3020", 4_000, 12_000)
        start, end = self.gpu_slot(COMPUTE_STREAM, call_start, 2_000 + nbytes // 20)  # ~20 GB/s
        self.rows["CUPTI_ACTIVITY_KIND_MEMCPY"].append(
            self.gpu_row(COMPUTE_STREAM, start, end)
            | {"bytes": nbytes, "copyKind": kind, "srcKind": src, "dstKind": dst, "migrationCause": 0}
        )
        self.truth.copies += 1
        self.truth.copy_bytes += nbytes
        self.truth.copies_by_kind[shown] += 1
        self.truth.copies_by_op[self.op() or ""] += 1

    def memset(self, nbytes: int) -> None:
        call_start, _ = self.api("cudaMemsetAsync_v3020", 3_000, 8_000)
        start, end = self.gpu_slot(COMPUTE_STREAM, call_start, 1_500 + nbytes // 400)
        self.rows["CUPTI_ACTIVITY_KIND_MEMSET"].append(
            self.gpu_row(COMPUTE_STREAM, start, end) | {"value": 0, "bytes": nbytes, "memKind": 2}
        )
        self.truth.memsets += 1

    def synchronize(self) -> None:
        self.api("cudaStreamSynchronize_v3020", 1_000, 2_000)
        self.now = max(self.now, *self.stream_free.values()) + self.random.randint(2_000, 5_000)
        self.rows["CUPTI_ACTIVITY_KIND_RUNTIME"][-1]["end"] = self.now


def _training_loop(trace: _Trace) -> None:
    options = trace.options
    trace.api("cuModuleGetLoadingMode", 500, 1_500, event_class=1)
    for _ in range(3):
        trace.api("cudaMalloc_v3020", 150_000, 400_000, backtrace=True)
    if options.rank_thread_name:
        trace.nvtx(trace.advance(100, 200), None, THREAD_NAME, f"MPI Rank {options.rank}", None)
    trace.nvtx(trace.advance(100, 200), None, DOMAIN_CREATE, "NCCL", 2)
    epoch_start = trace.advance(1_000, 2_000)
    trace.stack.append(("epoch 0", epoch_start, "epoch 0", None, START_END))
    for step in range(options.steps):
        trace.push(f"step {step}")
        trace.push(BAD_UTF8_TEXT)
        trace.copy(1, "HtoD", 4 << 20, 1, 2)  # pinned batch -> device
        trace.pop()
        trace.push("forward")
        for layer in range(options.layers):
            trace.push(f"layer{layer}")
            trace.launch("gemm")
            trace.launch("gelu")
            trace.pop()
        trace.pop()
        trace.push("backward")
        for layer in reversed(range(options.layers)):
            trace.push(f"layer{layer} backward")
            trace.launch("gemm")
            trace.launch("gemm")
            trace.pop()
        trace.pop()
        trace.push("ncclAllReduce", domain=2)
        trace.launch("allreduce", NCCL_STREAM)
        trace.pop()
        trace.push("optimizer")
        if options.memset:
            trace.memset(1 << 20)
        trace.launch("adam")
        trace.pop()
        trace.copy(2, "DtoH", 4, 2, 1)  # the loss, back to pinned host memory
        trace.synchronize()
        trace.pop()
        trace.nvtx(trace.advance(100, 300), None, MARK, f"checkpoint {step}", None)
    trace.stack.pop()
    trace.nvtx(epoch_start, trace.advance(1_000, 2_000), START_END, "epoch 0", None)


def _metadata_rows(trace: _Trace) -> None:
    options = trace.options
    trace.rows["TARGET_INFO_GPU"] = [
        {
            "vmId": 0,
            "id": i,
            "name": "NVIDIA H100 80GB HBM3",
            "busLocation": f"0000:{0x18 + i:02x}:00.0",
            "totalMemory": 85_031_714_816,
            "smCount": 132,
            "computeMajor": 9,
            "computeMinor": 0,
        }
        for i in range(2)
    ]
    trace.rows["TARGET_INFO_SESSION_START_TIME"] = [
        {"utcEpochNs": 1_718_000_000_000_000_000, "utcTime": "2024-06-10T06:13:20", "localTime": "2024-06-10T08:13:20"}
    ]
    trace.rows["PROCESSES"] = [
        {"globalPid": trace.global_pid, "pid": trace.pid, "name": "python train.py"},
        {"globalPid": (1 << 48) | (812 << 24), "pid": 812, "name": "/usr/sbin/sshd"},
    ]
    env = [("HOSTNAME", "gpu-node-07"), ("LANG", b"caf\xe9")]  # a Latin-1 value, as in real exports
    if options.rank_env:
        env.append(("OMPI_COMM_WORLD_RANK", str(options.rank)))
    trace.rows["TARGET_INFO_SYSTEM_ENV"] = [{"globalVid": 1, "name": n, "value": v} for n, v in env]
    trace.rows["ThreadNames"] = [{"nameId": trace.string("python"), "priority": 10, "globalTid": trace.global_tid}]


def _create(conn: sqlite3.Connection, table: str, spec: str, rows: list[dict]) -> None:
    columns = [(c.split(":")[0], c.split(":")[1] if ":" in c else _INT) for c in spec.split()]
    declared = ", ".join(f'"{name}" {"INTEGER PRIMARY KEY" if kind == "PK" else kind}' for name, kind in columns)
    conn.execute(f"CREATE TABLE {table} ({declared})")
    # CAST keeps non-UTF-8 bytes as TEXT (not BLOB), the way nsys stores them.
    values = ", ".join("CAST(? AS TEXT)" if t == _TEXT else "?" for _, t in columns)
    conn.executemany(f"INSERT INTO {table} VALUES ({values})", [[r.get(n) for n, _ in columns] for r in rows])


def write_export(path: Path, options: ExportOptions = ExportOptions()) -> ExportTruth:
    """Write one export to `path` (replacing it) and return what it holds."""
    trace = _Trace(options)
    _training_loop(trace)
    _metadata_rows(trace)
    if not options.nvtx:
        trace.rows["NVTX_EVENTS"] = []
        trace.truth.nvtx_ranges = trace.truth.max_depth = 0
        trace.truth.kernels_by_op = Counter({"": trace.truth.kernels})
        trace.truth.copies_by_op = Counter({"": trace.truth.copies})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        for table, spec in TABLES.items():
            if options.legacy and table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME"):
                spec += " name:TEXT"  # the all-NULL extra column the shipped 2.9.1 sample carries
            # 3.x creates a table only when it has rows; 2.x creates them all.
            if trace.rows[table] or options.legacy:
                _create(conn, table, spec, trace.rows[table])
        meta_table = "EXPORT_META_DATA" if options.legacy else "META_DATA_EXPORT"
        version = ("2022.2.1.31", "2.9.1") if options.legacy else ("2024.5.1.113", "3.13.2")
        _create(
            conn,
            meta_table,
            "name:TEXT value:TEXT",
            [
                {"name": "EXPORT_PRODUCT_NAME", "value": "NVIDIA Nsight Systems"},
                {"name": "EXPORT_PRODUCT_VERSION", "value": version[0]},
                {"name": "EXPORT_SCHEMA_VERSION", "value": version[1]},
            ],
        )
        if not options.legacy:
            for table, rows in ENUMS.items():
                _create(
                    conn,
                    table,
                    "id:PK name:TEXT label:TEXT",
                    [{"id": i, "name": n, "label": lab} for i, n, lab in rows],
                )
        conn.commit()
    finally:
        conn.close()
    return trace.truth


def write(folder: Path) -> list[Path]:
    """Two ranks of a small data-parallel training run, one export per rank."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"train_nsys_rank{rank}.sqlite" for rank in range(2)]
    for rank, path in enumerate(paths):
        write_export(path, ExportOptions(rank=rank, steps=8, layers=4, seed=7))
    return paths
