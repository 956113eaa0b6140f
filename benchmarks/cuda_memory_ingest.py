"""Benchmark: CUDA memory ingest at size: a generated allocator snapshot and a trace of `[memory]` events.

    python benchmarks/cuda_memory_ingest.py --snapshot-gb 2 --memory-events 10000000
    python benchmarks/cuda_memory_ingest.py --snapshot-gb 0.1 --memory-events 500000   # quick

Generates (and caches) both inputs, then ingests each with its collector in a
fresh subprocess and prints wall seconds and peak RSS (summed over the
process tree, sampled every 20 ms, as in `kineto_ingest.py`).

The snapshot is written by hand, opcode by opcode (pickle protocol 2), a
batch at a time, so that generating 2 GB does not need 2 GB of Python
objects: it has the structure of `torch.cuda.memory._snapshot()` with
tracebacks of 30 frames (C++ allocator frames, then Python frames) whose
frame dicts are shared through the memo, as PyTorch's symbolizer shares
them. The trace holds `--memory-events` `[memory]` instants with allocator
totals, one CPU op per 64 of them, in Kineto's JSON shapes.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kineto_ingest import _TREE_RSS, machine_check

_INGEST = _TREE_RSS + """
import importlib, json, resource, sys, time
from pathlib import Path
collector = importlib.import_module(sys.argv[2]).COLLECTOR
wall = time.perf_counter()
result = collector.collect([Path(sys.argv[1])], lambda fraction, message: None)
wall = time.perf_counter() - wall
rss_kb = max(peak_kb[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(json.dumps({"wall": wall, "rss_mb": rss_kb / 1024, "warnings": result.warnings[:3],
                  "rows": {name: frame.height for name, frame in result.tables.items()}}))
"""

MIB = 1024 * 1024
FRAMES_PER_TRACEBACK = 30


class _Writer:
    """Pickle protocol 2 opcodes with a memo for the strings and frame dicts that repeat."""

    def __init__(self, first_index: int) -> None:
        self.memo: dict[object, int] = {}
        self.next_index = first_index

    def _put(self) -> bytes:
        index, self.next_index = self.next_index, self.next_index + 1
        return b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)

    def _ref(self, key: object) -> bytes | None:
        index = self.memo.get(key)
        if index is None:
            return None
        return b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)

    def text(self, value: str) -> bytes:
        found = self._ref(("s", value))
        if found is not None:
            return found
        data = value.encode()
        self.memo[("s", value)] = self.next_index
        return b"X" + struct.pack("<I", len(data)) + data + self._put()

    @staticmethod
    def integer(value: int) -> bytes:
        if 0 <= value < 256:
            return b"K" + bytes([value])
        if 0 <= value < 65536:
            return b"M" + struct.pack("<H", value)
        if -(2**31) <= value < 2**31:
            return b"J" + struct.pack("<i", value)
        data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return b"\x8a" + bytes([len(data)]) + data

    def frame(self, filename: str, line: int, name: str) -> bytes:
        found = self._ref(("f", filename, line, name))
        if found is not None:
            return found
        self.memo[("f", filename, line, name)] = self.next_index
        put = self._put()
        body = (self.text("filename") + self.text(filename) + self.text("line") + self.integer(line)
                + self.text("name") + self.text(name))
        return b"}" + put + b"(" + body + b"u"

    def entry(self, action: str, addr: int, size: int, time_us: int, frames: bytes) -> bytes:
        return (b"}(" + self.text("action") + self.text(action) + self.text("addr") + self.integer(addr)
                + self.text("size") + self.integer(size) + self.text("stream") + b"K\x00"
                + self.text("time_us") + self.integer(time_us) + self.text("frames") + b"](" + frames + b"eu")


def write_snapshot(path: Path, target_bytes: int, seed: int = 0) -> int:
    """A snapshot of about `target_bytes` (one device); returns the trace entries written."""
    import pickle

    rng = random.Random(seed)
    segment_address = 0x7F00_0000_0000
    segments = [{"device": 0, "address": segment_address, "total_size": 1024 * MIB, "stream": 0,
                 "segment_type": "large", "segment_pool_id": (0, 0), "allocated_size": 0, "active_size": 0,
                 "blocks": [{"address": segment_address, "size": 1024 * MIB, "requested_size": 0,
                             "state": "inactive", "frames": []}]}]
    with open(path, "wb") as handle:
        import io

        head = io.BytesIO()
        pickler = pickle.Pickler(head, protocol=2)
        pickler.dump(segments)
        writer = _Writer(len(pickler.memo.copy()))
        handle.write(b"\x80\x02}(" + b"X\x08\x00\x00\x00segments" + head.getvalue()[2:-1]
                     + b"X\x0d\x00\x00\x00device_traces](]")
        cpp = [("/pytorch/c10/cuda/CUDACachingAllocator.cpp", 1000 + i, f"c10::cuda::malloc_{i}") for i in range(40)]
        python = [(f"/home/user/model/layer{i % 12}.py", 10 + i, f"forward_{i}") for i in range(400)]
        tracebacks = [rng.sample(cpp, 12) + rng.sample(python, 18) for _ in range(2000)]
        rendered: dict[int, bytes] = {}  # a traceback's bytes once all its frames are defined earlier in the file

        def traceback_bytes(index: int) -> bytes:
            found = rendered.get(index)
            if found is None:
                # Rendered in file order: a frame's first use defines it (memo put), later ones refer to it.
                found = b"".join(writer.frame(*frame) for frame in tracebacks[index])
                if b"}" not in found:
                    rendered[index] = found
            return found

        live: list[tuple[int, int, int]] = []
        entries, written, time_us, address, batch = 0, handle.tell(), 1_700_000_000_000_000, segment_address, []
        while written < target_bytes:
            time_us += rng.randint(1, 40)
            if live and (len(live) > 4000 or rng.random() < 0.48):
                addr, size, stack = live.pop(rng.randrange(len(live)))
                batch.append(writer.entry("free_requested", addr, size, time_us, traceback_bytes(stack)))
                batch.append(writer.entry("free_completed", addr, size, time_us + 1, traceback_bytes(stack)))
                entries += 2
            else:
                size = rng.choice((512, 4096, 65536, 2 * MIB, 8 * MIB))
                address = (address + size) % (1 << 47) or segment_address
                stack = rng.randrange(len(tracebacks))
                live.append((address, size, stack))
                batch.append(writer.entry("alloc", address, size, time_us, traceback_bytes(stack)))
                entries += 1
            if len(batch) >= 1000:
                data = b"(" + b"".join(batch) + b"e"
                handle.write(data)
                written += len(data)
                batch = []
        handle.write((b"(" + b"".join(batch) + b"e" if batch else b"") + b"eu.")
    return entries


def write_memory_trace(path: Path, events: int, seed: int = 0) -> None:
    """A Kineto trace of `events` `[memory]` instants with totals, inside CPU ops on one thread."""
    rng = random.Random(seed)
    pid = tid = 4100
    allocated, reserved, ts = 0, 64 * MIB, 1000.0
    live: list[tuple[int, int]] = []
    with open(path, "w") as handle:
        handle.write('{"schemaVersion": 1, "traceEvents": [\n')
        handle.write(json.dumps({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 999.0,
                                 "dur": 1.0, "args": {"correlation": 1, "device": 0, "stream": 7}}))
        address = 0x7F00_0000_0000
        for start in range(0, events, 64):
            ts += 1.0
            op_start = ts
            lines = []
            for _ in range(min(64, events - start)):
                ts += 0.05
                if live and rng.random() < 0.49:
                    addr, size = live.pop()
                    delta = -size
                else:
                    size = rng.choice((512, 4096, 65536, 2 * MIB))
                    address += size
                    addr, delta = address, size
                    live.append((addr, size))
                allocated += delta
                reserved = max(reserved, -(-allocated // (20 * MIB)) * 20 * MIB)
                lines.append(f'{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": {pid}, '
                             f'"tid": {tid}, "ts": {ts:.3f}, "args": {{"Device Type": 1, "Device Id": 0, '
                             f'"Addr": {addr}, "Bytes": {delta}, "Total Allocated": {allocated}, '
                             f'"Total Reserved": {reserved}}}}}')
            ts += 0.05
            op = (f'{{"ph": "X", "cat": "cpu_op", "name": "aten::op{start % 50}", "pid": {pid}, "tid": {tid}, '
                  f'"ts": {op_start:.3f}, "dur": {ts - op_start:.3f}, "args": {{"External id": {start}}}}}')
            handle.write(",\n" + op + ",\n" + ",\n".join(lines))
        handle.write("\n]}\n")


def _ingest(path: Path, module: str) -> dict | None:
    done = subprocess.run([sys.executable, "-c", _INGEST, str(path), module], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot-gb", type=float, default=2.0, help="snapshot size in GB (0 to skip)")
    parser.add_argument("--memory-events", type=int, default=10_000_000, help="[memory] events (0 to skip)")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "cuda_memory_bench")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    print(f"machine check: a fixed 10 M-step Python loop took {machine_check():.2f} s")
    if args.snapshot_gb > 0:
        snapshot = args.folder / f"snapshot_{args.snapshot_gb:g}gb.pickle"
        if not snapshot.exists():
            print(f"generating {snapshot} ...")
            print(f"  {write_snapshot(snapshot, int(args.snapshot_gb * 1e9)):,} trace entries")
        megabytes = snapshot.stat().st_size / 1e6
        result = _ingest(snapshot, "dashboard.collectors.torch_snapshot")
        if result:
            print(f"snapshot {megabytes:,.0f} MB: {result['wall']:.1f} s wall ({megabytes / result['wall']:.1f} MB/s), "
                  f"peak RSS {result['rss_mb']:,.0f} MB; rows {result['rows']}")
    if args.memory_events > 0:
        trace = args.folder / f"memory_{args.memory_events}.pt.trace.json"
        if not trace.exists():
            print(f"generating {trace} ...")
            write_memory_trace(trace, args.memory_events)
        megabytes = trace.stat().st_size / 1e6
        result = _ingest(trace, "dashboard.collectors.kineto.collector")
        if result:
            print(f"trace {megabytes:,.0f} MB ({args.memory_events:,} memory events): {result['wall']:.1f} s wall "
                  f"({megabytes / result['wall']:.0f} MB/s), peak RSS {result['rss_mb']:,.0f} MB; "
                  f"rows {result['rows']}")


if __name__ == "__main__":
    main()
