"""Simulation primitives for the demo Tenstorrent memory-profiler run (see tt_memory_log.py).

A TTNN tensor type as the runtime prints it, a first-fit allocator per buffer
type (sizes per bank; all banks move in lockstep), the runtime's log lines and
a `Program` that logs each op with the memory snapshot taken *before* it and
records the entries the profiler's v0 parser would write to its JSON files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

MIB = 1024 * 1024
# (banks, MiB per bank) of a Wormhole n150-like device; TRACE has no region.
DEVICE = {"DRAM": (12, 1023.418), "L1": (64, 1.270), "L1_SMALL": (64, 0.062), "TRACE": (12, 0.0)}
_SIZE_OF = {"f32": 4, "bf16": 2}
_ANSI_LEVEL = {"DEBUG": "\x1b[1m\x1b[38;5;240m", "INFO": "\x1b[1m\x1b[38;5;69m"}


@dataclass
class Tensor:
    shape: tuple[int, ...]
    buffer: str = "dram"  # dram / l1 / system_memory
    tiled: bool = True
    dtype: str = "f32"
    mem_layout: str = "interleaved"
    ssa: str = ""
    address: int = -1

    def padded_shape(self) -> list[int]:
        dims = list(self.shape)
        if self.tiled and len(dims) >= 2:
            dims[-2] = -(-dims[-2] // 32) * 32
        return dims

    def nbytes(self) -> int:
        dims = self.padded_shape()
        rows, cols = math.prod(dims[:-1]), dims[-1]
        if self.tiled:
            rows, cols = -(-rows // 32) * 32, -(-cols // 32) * 32
        return rows * cols * _SIZE_OF[self.dtype]

    @cached_property
    def type_text(self) -> str:
        dims = self.padded_shape()
        names = [f"d{i}" for i in range(len(dims))]
        terms = []
        for i in range(len(dims) - 1):
            stride = math.prod(dims[i + 1 : -1])
            terms.append(names[i] if stride == 1 else f"{names[i]} * {stride}")
        row_expr = " + ".join(terms) if terms else "0"
        rows, cols = math.prod(dims[:-1]), dims[-1]
        if self.tiled:
            memref = f"{-(-rows // 32)}x{-(-cols // 32)}x!ttcore.tile<32x32, {self.dtype}>"
        else:
            memref = f"{rows}x{cols}x{self.dtype}"
        suffix = "" if self.buffer == "system_memory" else f", <{self.mem_layout}>"
        shape = "x".join(map(str, self.shape))
        return (
            f"tensor<{shape}x{self.dtype}, #ttnn.ttnn_layout<({', '.join(names)}) -> ({row_expr}, "
            f"{names[-1]}), <1x1>, memref<{memref}, #ttnn.buffer_type<{self.buffer}>>{suffix}>>"
        )


class Heap:
    """First-fit allocator over one bank's address range (all banks move in lockstep)."""

    def __init__(self, capacity: int, reserved: int = 0) -> None:
        self.capacity = capacity
        self.blocks: dict[int, int] = {0: reserved} if reserved else {}

    def allocate(self, size: int) -> int:
        cursor = 0
        for start in sorted(self.blocks):
            if start - cursor >= size:
                break
            cursor = start + self.blocks[start]
        if cursor + size > self.capacity:
            raise MemoryError(f"demo program does not fit: {size} B per bank")
        self.blocks[cursor] = size
        return cursor

    def free(self, address: int) -> None:
        del self.blocks[address]

    def state(self) -> tuple[int, int, int]:
        """(allocated, free, largest contiguous free) in bytes per bank."""
        gaps, cursor = [], 0
        for start in sorted(self.blocks):
            gaps.append(start - cursor)
            cursor = start + self.blocks[start]
        gaps.append(self.capacity - cursor)
        allocated = sum(self.blocks.values())
        return allocated, self.capacity - allocated, max(gaps)


def runtime_line(kind: str, level: str, message: str) -> str:
    """One tt-mlir runtime log line, coloured like the real logger."""
    return f"\x1b[32m{kind:>23}\x1b[0m | {_ANSI_LEVEL.get(level, '')}{level:>8}\x1b[0m | {message}"


def memory_line(buffer_type: str, banks: int, total: float, allocated: float, free: float,
                largest: float) -> str:
    """One `Device <type> memory state: MemoryView{...}` line; values in MiB per bank."""
    view = (
        f"MemoryView{{numBanks: {banks}, totalBytesPerBank: {total:.3f} MB, totalBytesAllocatedPerBank: "
        f"{allocated:.3f} MB, totalBytesFreePerBank: {free:.3f} MB, largestContiguousBytesFreePerBank: "
        f"{largest:.3f} MB}}"
    )
    return runtime_line("Always", "INFO", f"Device {buffer_type} memory state: {view}")


class Program:
    """Runs the simulated program and records the log lines and the v0 JSON records."""

    def __init__(self, record_json: bool = True) -> None:
        self.record_json = record_json
        self.lines: list[str] = []
        self.memory: list[dict] = []
        self.operations: list[dict] = []
        self.heaps = {
            bt: Heap(round(mib * MIB), reserved=round(0.549 * MIB) if bt == "DRAM" else 0)
            for bt, (_, mib) in DEVICE.items()
        }
        self.stack: list[str] = []
        self.args: list[tuple[str, Tensor]] = []
        self.next_ssa = 0
        self.clock_ms = 0

    # -- producers other than the runtime -------------------------------------------------
    def metal(self, level: str, category: str, message: str) -> None:
        self.clock_ms += 7
        stamp = f"2026-03-01 10:15:{10 + self.clock_ms // 1000 % 50:02d}.{self.clock_ms % 1000:03d}"
        self.lines.append(f"{stamp} | {level:<8} | {category:>15} | {message}")

    def pjrt(self, where: str, message: str) -> None:
        self.clock_ms += 3
        uptime = f"{self.clock_ms / 1000:8.3f}s"
        self.lines.append(f"2026-03-01 10:15:10.{self.clock_ms % 1000:03d} ({uptime}) [        7F3A2C1D5740]"
                          f"{where:>25}      1| {message}")

    # -- the runtime ----------------------------------------------------------------------
    def ssa(self) -> str:
        self.next_ssa += 1
        return f"%{self.next_ssa - 1}"

    def snapshot(self) -> dict[str, dict]:
        views = {}
        for bt, (banks, mib) in DEVICE.items():
            allocated, free, largest = self.heaps[bt].state()
            views[bt] = {"numBanks": banks, "totalBytesPerBank_MB": round(mib, 3),
                         "totalBytesAllocatedPerBank_MB": round(allocated / MIB, 3),
                         "totalBytesFreePerBank_MB": round(free / MIB, 3),
                         "largestContiguousBytesFreePerBank_MB": round(largest / MIB, 3)}
        return views

    def op(self, name: str, op_type: str, inputs: list[Tensor], outputs: list[Tensor],
           attrs: str | None = None, loc: str | None = None, operand_text: str | None = None,
           result: str | None = None, allocate: bool = True) -> list[Tensor]:
        """Log and run one op: the snapshot is taken before it, its outputs are allocated after."""
        for tensor in outputs:
            tensor.ssa = tensor.ssa or self.ssa()
        if result is None and outputs:
            result = outputs[0].ssa if len(outputs) == 1 else f"{outputs[0].ssa}:{len(outputs)}"
        # Ops that create device tensors take the device as their last operand type.
        device = ["!ttnn.device"] if op_type.startswith(("Prepare", "ToDevice")) else []
        in_types = ", ".join([t.type_text for t in inputs] + device)
        out_types = ", ".join(t.type_text for t in outputs)
        if name == "ttnn.get_device":
            out_types = "!ttnn.device"
        elif len(outputs) != 1:
            out_types = f"({out_types})"
        operands = operand_text if operand_text is not None else ", ".join(t.ssa for t in inputs)
        quoted = name if name.startswith("ttcore.") else f'"{name}"'
        text = f"{result} = {quoted}({operands})" if result else f"{quoted}({operands})"
        if attrs:
            text += f" <{{{attrs}}}>"
        loc_text = f'loc("{loc}")' if loc else "loc(unknown)"
        text += f" : ({in_types}) -> {out_types} {loc_text}"
        self.lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Executing operation: {text}"))
        self.lines.append(runtime_line("Always", "INFO", f"Device memory state before operation {op_type}"))
        views = self.snapshot()
        for bt, (banks, _) in DEVICE.items():
            v = views[bt]
            self.lines.append(memory_line(bt, banks, v["totalBytesPerBank_MB"], v["totalBytesAllocatedPerBank_MB"],
                                          v["totalBytesFreePerBank_MB"], v["largestContiguousBytesFreePerBank_MB"]))
        if self.record_json and name not in ("ttnn.deallocate", "ttnn.get_device"):
            self._record(name, op_type, views, inputs, outputs, attrs, loc, in_types, operand_text, result)
        for tensor in outputs if allocate else ():
            if tensor.buffer != "system_memory" and tensor.address < 0:
                tensor.address = self.heaps[tensor.buffer.upper()].allocate(per_bank(tensor))
        return outputs

    def _record(self, name: str, op_type: str, views: dict, inputs: list[Tensor], outputs: list[Tensor],
                attrs: str | None, loc: str | None, in_types: str, operand_text: str | None,
                result: str | None) -> None:
        """The memory.json and operations.json entries the v0 parser would write for this op."""
        graph = next((p for p in reversed(self.stack) if "const_eval" in p), None)
        index = len(self.memory)
        self.memory.append({"op_type": op_type, "memory": views, "index": index, "mlir_op": name, "loc": loc,
                            "const_eval_graph": graph, "const_eval_cache_miss": graph is not None,
                            "is_weight_op": graph is not None})
        multi = result is not None and ":" in result
        self.operations.append({
            "result": None if multi else result, "mlir_op": name,
            "inputs": (operand_text or ", ".join(t.ssa for t in inputs)).split(", ") if inputs else [],
            "attributes": attrs,
            "input_types": in_types or None,
            "output_type": ", ".join(t.type_text for t in outputs) or None,
            "input_shapes": ["x".join(map(str, t.shape)) for t in inputs],
            "input_dtypes": [t.dtype for t in inputs],
            "output_shapes": ["x".join(map(str, t.shape)) for t in outputs],
            "output_dtypes": [t.dtype for t in outputs],
            "loc": loc, "index": index, "const_eval_graph": graph, "const_eval_cache_miss": graph is not None,
            "is_weight_op": graph is not None or name == "ttcore.load_cached", "weights": []})

    def dealloc(self, tensor: Tensor, loc: str | None = None) -> None:
        self.op("ttnn.deallocate", "DeallocateOp", [tensor], [], attrs="force = false", loc=loc)
        self.heaps[tensor.buffer.upper()].free(tensor.address)
        tensor.address = -1

    def get_device(self) -> None:
        self.op("ttnn.get_device", "GetDeviceOp", [], [], loc=None, result=self.ssa(),
                attrs="mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>")

    def start(self, program: str) -> None:
        self.stack.append(program)
        self.lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Starting execution of program: {program}"))

    def finish(self) -> None:
        program = self.stack.pop()
        self.lines.append(runtime_line("RuntimeTTNN", "DEBUG", f"Finished execution of program: {program}"))


def per_bank(tensor: Tensor) -> int:
    banks = DEVICE[tensor.buffer.upper()][0]
    return -(-tensor.nbytes() // banks // 32) * 32
