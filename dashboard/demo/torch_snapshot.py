"""Realistic PyTorch allocator snapshots without a GPU: a small caching allocator that records its trace.

The output has the structure `torch.cuda.memory._snapshot()` returns (see
`torch/cuda/memory.py`, `torch/cuda/_memory_viz.py`): `segments` with their
address-ordered `blocks` (`size`, `requested_size`, `address`, `state`,
`frames`), and `device_traces` with `alloc` / `free_requested` /
`free_completed` / `segment_alloc` / `segment_free` entries (`addr`, `size`,
`stream`, `time_us`, `frames`). Like PyTorch's caching allocator it rounds
sizes to 512 bytes, serves requests below 1 MiB from 2 MiB segments and
larger ones from 20 MiB segments (or the size rounded to 2 MiB), splits and
merges blocks, and frees segments on `empty_cache`. Frame dicts are shared
between tracebacks as PyTorch's symbolizer shares them, so the pickle has the
same memo references a real one has.

    python -m dashboard.demo.torch_snapshot out.pickle --steps 20
"""

from __future__ import annotations

import argparse
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KIB, MIB = 1024, 1024 * 1024
SMALL_REQUEST, SMALL_SEGMENT, LARGE_SEGMENT = MIB, 2 * MIB, 20 * MIB


def round_size(size: int) -> int:
    return max(512, -(-size // 512) * 512)


def segment_size_for(size: int) -> int:
    if size <= SMALL_REQUEST:
        return SMALL_SEGMENT
    return LARGE_SEGMENT if size < 10 * MIB else -(-size // (2 * MIB)) * (2 * MIB)


@dataclass
class _Block:
    address: int
    size: int
    requested: int = 0
    allocated: bool = False
    frames: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Segment:
    address: int
    total_size: int
    stream: int
    blocks: list[_Block]

    @property
    def small(self) -> bool:
        return self.total_size == SMALL_SEGMENT


class SnapshotBuilder:
    """One device's caching allocator; every call appends the trace entries PyTorch would record."""

    def __init__(self, device: int = 0, start_us: int = 1_700_000_000_000_000) -> None:
        self.device = device
        self.segments: list[_Segment] = []
        self.trace: list[dict[str, Any]] = []
        self.time_us = start_us
        self.next_address = 0x7F00_0000_0000 + device * 0x10_0000_0000

    def _record(self, action: str, addr: int, size: int, stream: int, frames: list[dict[str, Any]]) -> None:
        self.time_us += 3
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": stream, "time_us": self.time_us,
                           "frames": frames})

    def alloc(self, requested: int, frames: list[dict[str, Any]], stream: int = 0) -> int:
        """Allocate like the caching allocator (best fit, else a new segment); the block's address."""
        size = round_size(requested)
        small = requested <= SMALL_REQUEST
        fits = [(block.size, segment.address, segment, index)
                for segment in self.segments if segment.small == small and segment.stream == stream
                for index, block in enumerate(segment.blocks) if not block.allocated and block.size >= size]
        if fits:
            _, _, segment, index = min(fits, key=lambda fit: fit[:2])
        else:
            total = segment_size_for(requested)
            segment = _Segment(self.next_address, total, stream, [_Block(self.next_address, total)])
            self.next_address += total + 2 * MIB
            self.segments.append(segment)
            self._record("segment_alloc", segment.address, total, stream, frames)
            index = 0
        block = segment.blocks[index]
        remainder = block.size - size
        if remainder >= (512 if small else MIB + 1):  # PyTorch splits small blocks always, large above 1 MiB
            segment.blocks.insert(index + 1, _Block(block.address + size, remainder))
            block.size = size
        block.allocated, block.requested, block.frames = True, requested, frames
        self._record("alloc", block.address, block.size, stream, frames)
        return block.address

    def free(self, address: int) -> None:
        """free_requested then free_completed, merging the block with free neighbours."""
        for segment in self.segments:
            for index, block in enumerate(segment.blocks):
                if block.address == address and block.allocated:
                    self._record("free_requested", address, block.size, segment.stream, block.frames)
                    self._record("free_completed", address, block.size, segment.stream, block.frames)
                    block.allocated, block.requested, block.frames = False, 0, []
                    self._merge(segment, index)
                    return
        raise KeyError(f"no live block at {address:#x}")

    @staticmethod
    def _merge(segment: _Segment, index: int) -> None:
        blocks = segment.blocks
        if index + 1 < len(blocks) and not blocks[index + 1].allocated:
            blocks[index].size += blocks.pop(index + 1).size
        if index > 0 and not blocks[index - 1].allocated:
            blocks[index - 1].size += blocks.pop(index).size

    def empty_cache(self) -> None:
        for segment in list(self.segments):
            if len(segment.blocks) == 1 and not segment.blocks[0].allocated:
                self._record("segment_free", segment.address, segment.total_size, segment.stream, [])
                self.segments.remove(segment)

    def segment_dicts(self) -> list[dict[str, Any]]:
        return [{
            "device": self.device, "address": s.address, "total_size": s.total_size, "stream": s.stream,
            "segment_type": "small" if s.small else "large", "segment_pool_id": (0, 0),
            "allocated_size": sum(b.size for b in s.blocks if b.allocated),
            "active_size": sum(b.size for b in s.blocks if b.allocated),
            "requested_size": sum(b.requested for b in s.blocks if b.allocated),
            "blocks": [{"address": b.address, "size": b.size, "requested_size": b.requested,
                        "state": "active_allocated" if b.allocated else "inactive", "frames": b.frames}
                       for b in s.blocks],
        } for s in self.segments]


def snapshot_of(builders: list[SnapshotBuilder]) -> dict[str, Any]:
    """The `_snapshot()` dict of one or more devices (device_traces indexed by device)."""
    traces: list[list[dict[str, Any]]] = [[] for _ in range(max(b.device for b in builders) + 1)]
    for builder in builders:
        traces[builder.device] = builder.trace
    return {"segments": [s for b in builders for s in b.segment_dicts()], "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1}}


def _frames(rng: random.Random, count: int) -> list[list[dict[str, Any]]]:
    """`count` tracebacks, innermost first: C++ allocator frames, then the Python frames of a model."""
    cpp = [{"filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 1000 + i, "name": f"c10::malloc{i}"}
           for i in range(4)]
    python = [{"filename": f"/home/user/model/{module}.py", "line": line, "name": name}
              for module, name in (("attention", "forward"), ("mlp", "forward"), ("embed", "forward"),
                                   ("train", "step"), ("optim", "adam_step")) for line in range(10, 200, 17)]
    train = {"filename": "/home/user/train.py", "line": 88, "name": "main"}
    return [[*cpp[: rng.randint(1, 4)], rng.choice(python), train] for _ in range(count)]


def training_builders(steps: int = 6, layers: int = 8, devices: int = 1, seed: int = 0) -> list[SnapshotBuilder]:
    """Weights, then per step activations that grow through the forward pass and die after backward."""
    rng = random.Random(seed)
    stacks = _frames(rng, 64)
    builders = []
    for device in range(devices):
        builder = SnapshotBuilder(device)
        for _ in range(layers):  # weights and optimizer state live for the whole run
            builder.alloc(rng.choice((4, 8, 16)) * MIB, rng.choice(stacks))
        for _ in range(steps):
            live = [builder.alloc(rng.choice((64 * KIB, 300 * KIB, 3 * MIB, 12 * MIB)), rng.choice(stacks))
                    for _ in range(layers * 3)]
            for address in reversed(live[layers:]):
                builder.free(address)
            for address in live[:layers]:
                builder.free(address)
        builder.empty_cache()
        builders.append(builder)
    return builders


def write(path: Path, steps: int = 6, layers: int = 8, devices: int = 1, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(snapshot_of(training_builders(steps, layers, devices, seed)), handle)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--devices", type=int, default=1)
    args = parser.parse_args()
    print(write(args.path, args.steps, args.layers, args.devices))


if __name__ == "__main__":
    main()
