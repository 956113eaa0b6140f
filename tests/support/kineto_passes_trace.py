"""Kineto traces of a small training loop in every shape the pass rules must handle.

Per profiler step (`ProfilerStep#N` on the main thread), in this order:

* forward on the main thread: `aten::copy_` (one HtoD copy), `aten::conv2d`
  and `aten::relu` (one kernel each); `compiled`: a torch.compile region
  `CompiledFunction` (one Triton kernel);
* `Optimizer.zero_grad#SGD.zero_grad` (one kernel, `aten::zero_`);
* a `## backward ##` annotation on the main thread around the backward,
  holding one launch of its own (`aten::norm`, gradient clipping);
  `with_stack`: the Python frame `torch/_tensor.py(626): backward` instead,
  and a frame `train.py(30): <module>` around every step;
* on the autograd-engine thread (its own tid, no step): ReLU backward
  (`…Backward1`), convolution backward (two kernels),
  `AccumulateGrad` (one kernel), the engine's own gradient sum `aten::add`
  at the top level (one kernel); `compiled`: `CompiledFunctionBackward`
  (one kernel); `ddp`: an `nccl:all_reduce` under `AccumulateGrad` (one
  NCCL kernel on its own stream);
* `Optimizer.step#SGD.step` (two kernels).

After the last step: one launch outside every step (forward, no step) and
one kernel whose launch is missing (unattributed).

Modern traces write autograd nodes as `autograd::engine::evaluate_function:
XBackward0` around `XBackward0`, and link GPU events HTA-style (GPU
`External id` = correlation, so only time containment finds the op); legacy
(2021) traces use `Operator` / `Runtime` / `Kernel` / `Memcpy`, string tids,
lower-case `external id` equal to the launching op's id, and bare 2021 node
names (`CudnnConvolutionBackward`, `ReluBackward1`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PID = 4100
MAIN = 4100
AUTOGRAD = 4177
COMPUTE_STREAM = 7
NCCL_STREAM = 20
STEP_US = 1000.0


@dataclass(frozen=True)
class Shape:
    legacy: bool = False
    compiled: bool = False
    ddp: bool = False
    with_stack: bool = False
    steps: int = 2
    first_step: int = 5


def kernels_per_step(shape: Shape) -> dict[str, int]:
    """What one step launches, per pass (the generator's own bookkeeping, written out)."""
    forward = 2 + (1 if shape.compiled else 0)
    backward = 1 + 1 + 2 + 1 + 1 + (1 if shape.compiled else 0) + (1 if shape.ddp else 0)
    return {"forward": forward, "backward": backward, "optimizer": 1 + 2}


class _Writer:
    def __init__(self, shape: Shape, rank: int | None) -> None:
        self.shape = shape
        self.rank = rank
        self.events: list[dict[str, Any]] = []
        self.ext = 0
        self.correlation = 10_000 * (1 + (rank or 0))
        self.stack: dict[int, list[int]] = {MAIN: [], AUTOGRAD: []}
        self.gpu = {COMPUTE_STREAM: 0.0, NCCL_STREAM: 0.0}
        self.device = rank or 0

    def _cat(self, modern: str) -> str:
        legacy = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime",
                  "kernel": "Kernel", "gpu_memcpy": "Memcpy"}
        return legacy[modern] if self.shape.legacy else modern

    def _tid(self, tid: int) -> Any:
        return str(tid) if self.shape.legacy else tid

    def _stream(self, stream: int) -> Any:
        return f"stream {stream}" if self.shape.legacy else stream

    def frame(self, name: str, ts: float, dur: float) -> None:
        """A with_stack Python frame on the main thread (they carry no External id)."""
        self.events.append({"ph": "X", "cat": "python_function", "name": name, "pid": PID, "tid": self._tid(MAIN),
                            "ts": ts, "dur": dur, "args": {"Python id": len(self.events)}})

    @contextmanager
    def op(self, tid: int, name: str, ts: float, dur: float, cat: str = "cpu_op") -> Iterator[None]:
        self.ext += 1
        self.events.append({"ph": "X", "cat": self._cat(cat), "name": name, "pid": PID, "tid": self._tid(tid),
                            "ts": ts, "dur": dur, "args": {"External id": self.ext}})
        self.stack[tid].append(self.ext)
        yield
        self.stack[tid].pop()

    def launch(self, tid: int, at: float, kernel: str, stream: int = COMPUTE_STREAM, runtime: bool = True,
               copy_bytes: int | None = None) -> None:
        self.correlation += 1
        correlation = self.correlation
        op_ext = self.stack[tid][-1] if self.stack[tid] else 0
        external = {"external id": op_ext} if self.shape.legacy else {"External id": correlation}
        if runtime:
            api = "cudaMemcpyAsync" if copy_bytes is not None else "cudaLaunchKernel"
            self.events.append({"ph": "X", "cat": self._cat("cuda_runtime"), "name": api, "pid": PID,
                                "tid": self._tid(tid), "ts": at, "dur": 4.0,
                                "args": {"cbid": 211, "correlation": correlation, **external}})
        start = max(self.gpu[stream], at + 5.0)
        self.gpu[stream] = start + 6.0
        args: dict[str, Any] = {"device": self.device, "stream": stream, "correlation": correlation, **external}
        if copy_bytes is None:
            self.events.append({"ph": "X", "cat": self._cat("kernel"), "name": kernel, "pid": self.device,
                                "tid": self._stream(stream), "ts": start, "dur": 5.0,
                                "args": {**args, "grid": [1, 1, 1], "block": [128, 1, 1]}})
        else:
            self.events.append({"ph": "X", "cat": self._cat("gpu_memcpy"), "name": kernel, "pid": self.device,
                                "tid": self._stream(stream), "ts": start, "dur": 5.0,
                                "args": {**args, "bytes": copy_bytes}})

    def node(self, t: float, modern: str, legacy: str, dur: float) -> Any:
        """An autograd node: `evaluate_function: X` around `X` (modern) or the bare 2021 name."""
        if self.shape.legacy:
            return self.op(AUTOGRAD, legacy, t, dur)
        return _nested(self.op(AUTOGRAD, f"autograd::engine::evaluate_function: {modern}", t, dur),
                       self.op(AUTOGRAD, modern, t + 1, dur - 2))


@contextmanager
def _nested(outer: Any, inner: Any) -> Iterator[None]:
    with outer, inner:
        yield


def _step(w: _Writer, number: int, t0: float) -> None:
    shape = w.shape
    annotation = "user_annotation"
    with w.op(MAIN, f"ProfilerStep#{number}", t0, 900.0, cat=annotation):
        with w.op(MAIN, "aten::copy_", t0 + 2, 6):
            w.launch(MAIN, t0 + 3, "Memcpy HtoD (Pageable -> Device)", copy_bytes=4096)
        with w.op(MAIN, "aten::conv2d", t0 + 10, 40):
            w.launch(MAIN, t0 + 20, "fwd_conv_kernel")
        with w.op(MAIN, "aten::relu", t0 + 60, 20):
            w.launch(MAIN, t0 + 65, "fwd_relu_kernel")
        if shape.compiled:
            with w.op(MAIN, "CompiledFunction", t0 + 100, 30):
                w.launch(MAIN, t0 + 110, "triton_poi_fused_forward_0")
        with w.op(MAIN, "Optimizer.zero_grad#SGD.zero_grad", t0 + 150, 20, cat=annotation), \
                w.op(MAIN, "aten::zero_", t0 + 152, 10):
            w.launch(MAIN, t0 + 155, "zero_kernel")
        if shape.with_stack:
            w.frame("torch/_tensor.py(626): backward", t0 + 200, 420)
            _backward_body(w, t0)
        else:
            with w.op(MAIN, "## backward ##", t0 + 200, 420, cat=annotation):
                _backward_body(w, t0)
        with w.op(MAIN, "Optimizer.step#SGD.step", t0 + 700, 100, cat=annotation), \
                w.op(MAIN, "aten::_foreach_add_", t0 + 710, 50):
            w.launch(MAIN, t0 + 720, "sgd_foreach_kernel")
            w.launch(MAIN, t0 + 730, "sgd_foreach_kernel")


def _backward_body(w: _Writer, t0: float) -> None:
    _autograd_thread(w, t0)
    with w.op(MAIN, "aten::norm", t0 + 600, 10):
        w.launch(MAIN, t0 + 602, "clip_norm_kernel")


def _autograd_thread(w: _Writer, t0: float) -> None:
    shape = w.shape
    with w.node(t0 + 210, "ReluBackward1", "ReluBackward1", 40), w.op(AUTOGRAD, "aten::threshold_backward",
                                                                    t0 + 215, 20):
        w.launch(AUTOGRAD, t0 + 220, "bwd_threshold_kernel")
    with w.node(t0 + 260, "ConvolutionBackward0", "CudnnConvolutionBackward", 60), \
            w.op(AUTOGRAD, "aten::convolution_backward", t0 + 265, 50):
        w.launch(AUTOGRAD, t0 + 270, "dgrad_kernel")
        w.launch(AUTOGRAD, t0 + 290, "wgrad_kernel")
    if shape.compiled:
        with w.node(t0 + 330, "CompiledFunctionBackward", "CompiledFunctionBackward", 30):
            w.launch(AUTOGRAD, t0 + 340, "triton_poi_fused_backward_0")
    with w.node(t0 + 370, "torch::autograd::AccumulateGrad", "torch::autograd::AccumulateGrad", 60):
        with w.op(AUTOGRAD, "aten::add_", t0 + 375, 10):
            w.launch(AUTOGRAD, t0 + 378, "accumulate_grad_kernel")
        if shape.ddp:
            with w.op(AUTOGRAD, "nccl:all_reduce", t0 + 395, 20, cat="user_annotation"):
                w.launch(AUTOGRAD, t0 + 400, "ncclKernel_AllReduce_RING_LL_Sum_float", stream=NCCL_STREAM)
    # The engine sums the gradients of a tensor used twice outside any node.
    with w.op(AUTOGRAD, "aten::add", t0 + 450, 10):
        w.launch(AUTOGRAD, t0 + 452, "engine_add_kernel")


def trace(shape: Shape, rank: int | None = None) -> dict[str, Any]:
    """The trace document; `rank` adds `distributedInfo` (DDP over two ranks: call once per rank)."""
    w = _Writer(shape, rank)
    base = 1_700_000_000_000_000.0 + (rank or 0) * 7.0  # ranks share the clock, slightly apart
    for index in range(shape.steps):
        _step(w, shape.first_step + index, base + index * STEP_US)
    end = base + shape.steps * STEP_US
    if shape.with_stack:
        w.frame("train.py(30): <module>", base - 5, end - base + 200)
    with w.op(MAIN, "aten::item", end + 10, 20):
        w.launch(MAIN, end + 12, "after_steps_kernel")
    w.launch(MAIN, end + 40, "orphan_kernel", runtime=False)
    document: dict[str, Any] = {"schemaVersion": 1, "traceEvents": w.events}
    if rank is not None:
        document["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
    return document


def write(folder: Path, shape: Shape, rank: int | None = None) -> Path:
    name = f"passes_rank-{rank}.pt.trace.json" if rank is not None else "passes.pt.trace.json"
    path = folder / name
    path.write_text(json.dumps(trace(shape, rank)))
    return path
