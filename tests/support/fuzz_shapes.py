"""Fuzz seeds of the shapes issue 30 added: snapshots as a list and without history, Kineto memory of other
device types, tritonparse traces raw and parsed, archives, Tenstorrent program-level logs, and a real Triton
MLIR dump with function-anchored passes and pipeliner snapshots (tests/data/gpu).

Each is built here from the project's own generators and formats (no tritonparse, Triton or torch needed):
the tritonparse records follow tritonparse's writer (`structured_logging.py`) with the demo's generated IR.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import pickle
import tarfile
import zipfile
from pathlib import Path

from dashboard.demo import torch_snapshot
from dashboard.demo.triton_ir_text import generated_log
from dashboard.demo.tt_memory_sim import memory_line, runtime_line

GPU_DUMP = Path(__file__).resolve().parents[1] / "data" / "gpu" / "triton_mlir_dump.txt.gz"
_PID = 4242


def snapshot_shapes() -> dict[str, bytes]:
    """The list form `torch.cuda.memory_snapshot()` returns, and the dict without traces, of a 2-GPU snapshot."""
    builders = torch_snapshot.training_builders(steps=2, layers=3, devices=2)
    snapshot = torch_snapshot.snapshot_of(builders)
    bare = copy.deepcopy(snapshot)
    del bare["device_traces"]
    return {"list": pickle.dumps(snapshot["segments"], protocol=4), "no_history": pickle.dumps(bare, protocol=4)}


def kineto_devices() -> bytes:
    """A Kineto trace whose `[memory]` events are HIP (6), XPU (12), MTIA (19) and CPU (0) allocations."""
    events: list[dict] = [{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": _PID, "tid": 1, "ts": 10.0,
                           "dur": 500.0, "args": {"External id": 1}}]
    total = {6: 0, 12: 0, 19: 0, 0: 0}
    for index in range(120):
        device_type = (6, 12, 19, 0)[index % 4]
        size = (index % 7 + 1) * 4096 * (-1 if index % 5 == 4 else 1)
        total[device_type] = max(total[device_type] + size, 0)
        events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": _PID, "tid": 1,
                       "ts": 11.0 + index, "args": {"Device Type": device_type, "Device Id": 0 if device_type else -1,
                                                    "Addr": 0x7000 + index * 64, "Bytes": size,
                                                    "Total Allocated": total[device_type],
                                                    "Total Reserved": total[device_type] + 2 << 20}})
    document = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X",
                                                          "totalGlobalMem": 206_141_652_992}],
                "traceEvents": events}
    return json.dumps(document).encode()


def _ir_bodies() -> tuple[str, str]:
    """A TTIR and a TTGIR body of the demo's generated dump log."""
    text = generated_log(Path(torch_snapshot.__file__).with_name("triton_kernels_src.py"))
    bodies = [part.split("\n", 1)[1].split("\n\n", 1)[0] + "\n" for part in text.split("// -----// IR Dump")[1:]]
    ttgir = next(body for body in bodies if "ttg." in body)
    return bodies[0], ttgir


def tritonparse_records(mapped: bool = False) -> bytes:
    """Two compiles, launches and an autotune verdict in tritonparse's record layout (raw, or as its parser
    writes the `_mapped` form: launches kept, `launch_diff` / `ir_analysis` added, `autotune_analysis`)."""
    ttir, ttgir = _ir_bodies()
    lines: list[dict] = []
    for index, (warps, block) in enumerate(((4, 256), (8, 1024))):
        digest = f"{index:064x}"
        lines.append({"event_type": "compilation", "pid": _PID, "stack": [], "payload": {
            "metadata": {"hash": digest, "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
                         "num_warps": warps, "num_ctas": 1, "num_stages": 3, "shared": 0, "tmem_size": 0,
                         "name": "add_kernel", "triton_version": "3.9.0", "src_constants": {"(4,)": block}},
            "file_path": {"add_kernel.ttir": "/cache/add_kernel.ttir"},
            "file_content": {"add_kernel.ttir": ttir, "add_kernel.ttgir": ttgir},
            "python_source": {"file_path": "/work/kernels.py", "start_line": 3, "end_line": 8,
                              "code": "@triton.jit\ndef add_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"}}})
        for _launch in range(3 + index):
            lines.append({"event_type": "launch", "pid": _PID, "name": "add_kernel", "function": None,
                          "stream": 0, "grid": [4096 // block, 1, 1],
                          "compilation_metadata": {"hash": digest, "num_warps": warps},
                          "extracted_args": {"x_ptr": {"type": "tensor", "shape": [4096], "dtype": "torch.float32",
                                                       "device": "cuda:0"}, "n": {"type": "int", "value": 4096}}})
    timings = {"BLOCK: 256, num_warps: 4": [0.021], "BLOCK: 1024, num_warps: 8": [0.012]}
    if mapped:
        lines.append({"event_type": "launch_diff", "hash": f"{1:064x}", "name": "add_kernel", "total_launches": 4,
                      "diffs": {}, "sames": {}})
        lines.append({"event_type": "ir_analysis", "hash": f"{1:064x}", "ir_analysis": {}})
        lines.append({"event_type": "autotune_analysis", "session_id": "s0", "name": "add_kernel",
                      "winner_compilation_hash": f"{1:064x}",
                      "autotune_result": {"best_config": "BLOCK: 1024, num_warps: 8", "configs_timings": timings,
                                          "benchmark_duration": 0.4, "cache_hit": False}})
    else:
        lines.append({"event_type": "autotune", "pid": _PID, "kernel_name": "add_kernel", "cache_key": "k",
                      "best_config": "BLOCK: 1024, num_warps: 8", "configs_timings": timings, "duration": 0.4,
                      "cache_hit": False, "autotune_key": "(4096,)"})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def tt_program_log() -> bytes:
    """A tt-mlir runtime log with program-level memory states only (before / after each submit)."""
    lines = ["Loading model ..."]
    for submit, (before, after) in enumerate(((0.5, 10.0), (10.0, 210.0), (210.0, 12.0), (12.0, 12.0))):
        lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Starting execution of program: main_{submit}"))
        for moment, dram in (("before submit", before), ("after submit", after)):
            lines.append(runtime_line("Always", "INFO", f"Device memory state {moment}"))
            lines += [memory_line("DRAM", 12, 1000.0, dram, 1000.0 - dram, 1000.0 - dram),
                      memory_line("L1", 64, 1.25, 0.0, 1.25, 1.25),
                      memory_line("L1_SMALL", 64, 0.062, 0.0, 0.062, 0.062),
                      memory_line("TRACE", 12, 0.0, 0.0, 0.0, 0.0)]
        lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Finished execution of program: main_{submit}"))
    return ("\n".join(lines) + "\n").encode()


def mlir_function_dump(headers: int = 8) -> bytes:
    """The first dumps of the real H200 Triton 3.6 dump (function-anchored Canonicalizer runs on inlined
    helpers among them) and its two SoftwarePipeliner internal snapshots."""
    text = gzip.decompress(GPU_DUMP.read_bytes()).decode()
    parts = text.split("// -----// ")
    internal = [p for p in parts if p.startswith("SoftwarePipeliner internal")]
    kept = parts[1:headers + 1] + internal
    return "".join("// -----// " + part for part in kept).encode()


def pack(content: bytes, name: str, kind: str) -> bytes:
    """`content` as the one member `job/<name>` of a tar.gz or zip archive."""
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
            info = zipfile.ZipInfo(f"job/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            bundle.writestr(info, content)
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            info = tarfile.TarInfo(f"job/{name}")
            info.size, info.mtime = len(content), 0
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
