"""A deterministic two-rank PyTorch-profiler (Kineto) trace of a small transformer.

What `torch.profiler.profile(record_shapes=True, with_stack=True,
with_modules=True)` writes for three training steps of a 4-block GPT on two
GPUs (DDP): `ProfilerStep#N` annotations; `nn.Module: X` Python frames around
ATen ops with `Input Dims`; `cudaLaunchKernel` / `cudaMemcpyAsync` /
`cudaMemsetAsync` calls and the kernels, copies and memsets they start, on a
compute stream and an NCCL stream; the autograd thread's backward nodes
(`autograd::engine::evaluate_function: XxxBackward0`) with the `Sequence
number` of their forward op and a non-zero `Fwd thread id`; `fwdbwd` and
`ac2g` flows; GPU-projected step annotations; metadata, `[memory]` instants
and the profiler span. Timestamps are relative to `baseTimeNanoseconds`.

`TraceTruth` counts what was written while it is written, so tests compare
the collector against the generator, not against itself.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from dashboard.demo.kineto_events import COMPUTE_STREAM, NCCL_STREAM, BackwardNode, TraceTruth, TraceWriter

BATCH, SEQ, DIM, HEADS, FFN, VOCAB, BLOCKS, STEPS = 8, 512, 1024, 16, 4096, 32000, 4, 3
TOKENS = BATCH * SEQ
BASE_NS = 1_714_000_000_000_000_000
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
GEMM_NT = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_nt"
_ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, {0}, at::detail::Array<char*, {1}> >"
    "(int, {0}, at::detail::Array<char*, {1}>)"
)
ADD_KERNEL = _ELEMENTWISE.format("at::native::CUDAFunctor_add<c10::BFloat16>", 3)
GELU_KERNEL = _ELEMENTWISE.format("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda()#1}", 2)
LAYER_NORM = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
)
LAYER_NORM_GRAD = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16, float>(...)"
FLASH_FWD = (
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"
)
FLASH_BWD = (
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, "
    "128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t>, false, true, false, false, false, false>"
    "(pytorch_flash::Flash_bwd_params)"
)
REDUCE = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, c10::BFloat16, 4> >(...)"
)
EMBEDDING = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int>(...)"
EMBEDDING_GRAD = "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float>(...)"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, {}>(...)"
NLL = "void at::native::(anonymous namespace)::nll_loss_{}_reduce_cuda_kernel_2d<c10::BFloat16, float, long>(...)"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ADAM = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, "
    "(at::native::ADAM_MODE)1, false>, double, double, double, double, double, double, bool, double*, double*>(...)"
)


def _gemm_us(flops: float) -> float:
    return 4.0 + flops / 180e12 * 1e6


_Inner = tuple[str, list[list[int]], list[tuple[str, float]], float]  # op, dims, kernels, flops


def _forward_op(trace: TraceWriter, outer: str, dims: list[list[int]], inner: _Inner, node: str,
                backward: list[_Inner]) -> None:
    """One differentiable op on the main thread (an ATen op around the one that launches) and its
    backward node to come; both ops carry the same sequence number, as nested ATen ops do."""
    sequence = trace.next("seq")
    inner_name, inner_dims, kernels, flops = inner
    with trace.op(trace.main, outer, dims=dims, sequence=sequence) as event:
        if inner_name == outer:
            trace.launch_all(trace.main, kernels, flops)
        else:
            with trace.op(trace.main, inner_name, dims=inner_dims, sequence=sequence):
                trace.launch_all(trace.main, kernels, flops)
    trace.nodes.append(BackwardNode(node, sequence, event["ts"], trace.layers[-1] if trace.layers else None, backward))


def _linear(trace: TraceWriter, module: str, fan_in: int, fan_out: int) -> None:
    flops = 2.0 * TOKENS * fan_in * fan_out
    gemm = [(GEMM, _gemm_us(flops))]
    backward = [
        ("aten::mm", [[TOKENS, fan_out], [fan_out, fan_in]], [(GEMM_NT, _gemm_us(flops))], flops),
        ("aten::mm", [[fan_out, TOKENS], [TOKENS, fan_in]], [(GEMM_NT, _gemm_us(flops))], flops),
        ("aten::sum", [[TOKENS, fan_out], [], [], []], [(REDUCE, 6.0)], 0.0),
    ]
    with trace.module(module):
        dims = [[BATCH, SEQ, fan_in], [fan_out, fan_in], [fan_out]]
        inner = ("aten::addmm", [[fan_out], [TOKENS, fan_in], [fan_in, fan_out]], gemm, flops)
        _forward_op(trace, "aten::linear", dims, inner, "AddmmBackward0", backward)


def _elementwise(trace: TraceWriter, op: str, kernel: str, node: str, backward_op: str | None) -> None:
    micros = 2 * TOKENS * DIM * 2 / 1.6e12 * 1e6
    dims = [[BATCH, SEQ, DIM], [BATCH, SEQ, DIM]]
    backward = [(backward_op, dims, [(kernel, micros)], 0.0)] if backward_op else []
    _forward_op(trace, op, dims, (op, dims, [(kernel, micros)], 0.0), node, backward)


def _block(trace: TraceWriter, index: int) -> None:
    qkv = [[BATCH, HEADS, SEQ, DIM // HEADS]] * 3
    attention = 4.0 * BATCH * HEADS * SEQ * SEQ * (DIM // HEADS)
    with trace.module(f"Block_{index}"):
        with trace.module(f"LayerNorm_{index}"):
            dims = [[BATCH, SEQ, DIM], [DIM], [DIM]]
            _forward_op(trace, "aten::layer_norm", dims, ("aten::native_layer_norm", dims, [(LAYER_NORM, 14.0)], 0.0),
                        "NativeLayerNormBackward0",
                        [("aten::native_layer_norm_backward", dims, [(LAYER_NORM, 22.0), (LAYER_NORM_GRAD, 8.0)], 0.0)])
        with trace.module(f"Attention_{index}"):
            _linear(trace, f"Linear_{4 * index}", DIM, 3 * DIM)
            inner = ("aten::_scaled_dot_product_flash_attention", qkv, [(FLASH_FWD, _gemm_us(attention))], attention)
            backward = [("aten::_scaled_dot_product_flash_attention_backward", [qkv[0]] * 5,
                         [(FLASH_BWD, _gemm_us(2.5 * attention))], 2.5 * attention)]
            _forward_op(trace, "aten::scaled_dot_product_attention", qkv, inner,
                        "ScaledDotProductFlashAttentionBackward0", backward)
            _linear(trace, f"Linear_{4 * index + 1}", DIM, DIM)
        _elementwise(trace, "aten::add", ADD_KERNEL, "AddBackward0", None)
        with trace.module(f"MLP_{index}"):
            _linear(trace, f"Linear_{4 * index + 2}", DIM, FFN)
            with trace.module(f"GELU_{index}"):
                _elementwise(trace, "aten::gelu", GELU_KERNEL, "GeluBackward0", "aten::gelu_backward")
            _linear(trace, f"Linear_{4 * index + 3}", FFN, DIM)
        _elementwise(trace, "aten::add", ADD_KERNEL, "AddBackward0", None)


def _model_forward(trace: TraceWriter) -> None:
    with trace.module("TinyGPT_0"):
        with trace.module("Embedding_0"):
            dims = [[VOCAB, DIM], [BATCH, SEQ]]
            _forward_op(trace, "aten::embedding", dims, ("aten::index_select", dims, [(EMBEDDING, 18.0)], 0.0),
                        "EmbeddingBackward0",
                        [("aten::embedding_dense_backward", [[BATCH, SEQ, DIM], [BATCH, SEQ]],
                          [(EMBEDDING_GRAD, 40.0)], 0.0)])
        for index in range(BLOCKS):
            _block(trace, index)
        _linear(trace, f"Linear_{4 * BLOCKS}", DIM, VOCAB)
    with trace.module("CrossEntropyLoss_0"):
        logits = [[TOKENS, VOCAB], [], []]
        _forward_op(trace, "aten::log_softmax", logits,
                    ("aten::_log_softmax", logits, [(SOFTMAX.format("LogSoftMaxForwardEpilogue"), 160.0)], 0.0),
                    "LogSoftmaxBackward0",
                    [("aten::_log_softmax_backward_data", [[TOKENS, VOCAB]] * 2,
                      [(SOFTMAX.format("LogSoftMaxBackwardEpilogue"), 170.0)], 0.0)])
        targets = [[TOKENS, VOCAB], [TOKENS], [], [], []]
        _forward_op(trace, "aten::nll_loss_nd", targets,
                    ("aten::nll_loss_forward", targets, [(NLL.format("forward"), 9.0)], 0.0), "NllLossBackward0",
                    [("aten::nll_loss_backward", [[], [TOKENS, VOCAB], [TOKENS]],
                      [(NLL.format("backward"), 12.0)], 0.0)])


def _backward(trace: TraceWriter) -> None:
    tid = trace.autograd
    trace.clock[tid] = max(trace.clock[tid], trace.clock[trace.main]) + 5.0
    trace.phase = "backward"
    for node in reversed(trace.nodes):
        trace.node_layer = node.layer
        name = f"autograd::engine::evaluate_function: {node.name}"
        with trace.op(tid, name, sequence=node.sequence, backward=True) as ev:
            flow = trace.next("flow")
            trace._flow("fwdbwd", flow, (trace.pid, trace.main, node.forward_ts), (trace.pid, tid, ev["ts"]))
            with trace.op(tid, node.name, sequence=node.sequence, backward=True):
                for op, dims, kernels, flops in node.inner:
                    with trace.op(tid, op, dims=dims):
                        trace.launch_all(tid, kernels, flops)
    trace.nodes.clear()
    trace.node_layer = None
    trace.clock[trace.main] = max(trace.clock[trace.main], trace.clock[tid]) + 3.0


def _step(trace: TraceWriter, step: int) -> None:
    main = trace.main
    gpu_start = max(trace.gpu.values())
    with trace.op(main, f"ProfilerStep#{step}", cat="user_annotation"):
        trace.phase = "forward"  # inside a step, outside backward and optimizer
        with trace.op(main, "aten::to", dims=[[BATCH, SEQ], [], [], [], []]), trace.op(main, "aten::_to_copy"), \
                trace.op(main, "aten::copy_"):
            trace.copy(main, "HtoD", "Pageable", "Device", TOKENS * 8 * 2, 11.8)
        trace.phase = "forward"
        _model_forward(trace)
        _backward(trace)
        trace.phase = "forward"  # launched from the main thread, outside any backward function
        with trace.op(main, "nccl:all_reduce", cat="user_annotation", dims=[[34_000_000]]), \
                trace.op(main, "record_param_comms"):
            trace.launch(main, NCCL, 2600.0, stream=NCCL_STREAM)
        trace.gpu[COMPUTE_STREAM] = max(trace.gpu.values())
        trace.phase = "optimizer"
        with trace.op(main, "Optimizer.step#AdamW.step", cat="user_annotation"), trace.op(main, "aten::_fused_adam_"):
            for _ in range(4):
                trace.launch(main, ADAM, 95.0)
        with trace.op(main, "Optimizer.zero_grad#AdamW.zero_grad", cat="user_annotation"):
            for nbytes in (8 * DIM * DIM, 2 * DIM * FFN, 2 * VOCAB * DIM):
                with trace.op(main, "aten::zero_"), trace.op(main, "aten::fill_"):
                    trace.memset(main, nbytes)
        trace.phase = "forward"
        with trace.op(main, "aten::item"), trace.op(main, "aten::_local_scalar_dense"):
            trace.copy(main, "DtoH", "Device", "Pageable", 4, 0.004)
            trace.sync(main)
        trace.free_all(main)  # activations die with the step
    gpu_end = max(trace.gpu.values())
    trace._x("gpu_user_annotation", f"ProfilerStep#{step}", trace.device, COMPUTE_STREAM, round(gpu_start + 0.5, 3),
             gpu_end - gpu_start - 1.0, {"External id": trace.next("ext")})
    trace.truth.ranges["gpu_user_annotation"] += 1


def _metadata(trace: TraceWriter) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for pid, label in ((trace.pid, "CPU"), (trace.device, f"GPU {trace.device}")):
        out.append({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}})
        out.append({"name": "process_labels", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": label}})
    for tid in (trace.main, trace.autograd):
        out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": trace.pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python3)"}})
    for stream in (COMPUTE_STREAM, NCCL_STREAM):
        out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": trace.device, "tid": stream,
                    "args": {"name": f"stream {stream} "}})
    out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": trace.pid,
                "tid": trace.main,
                "ts": 1001.0, "args": {"Device Type": 1, "Device Id": trace.device, "Addr": 139_800_000, "Bytes": 65536,
                                       "Total Allocated": 65536, "Total Reserved": 2_097_152}})
    out.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
                "ts": 999.0, "dur": round(trace.clock[trace.main] - 990.0, 3), "args": {"Op count": 0}})
    return out


def build_trace(rank: int, world_size: int = 2,
                slowdown: dict[str, float] | None = None) -> tuple[dict[str, Any], TraceTruth]:
    """The trace document of one rank and what it holds (`slowdown`: kernel name -> factor on its duration)."""
    trace = TraceWriter(rank, slowdown)
    trace.truth.memory_events, trace.truth.memory_peak = 1, trace.allocated  # the instant in the metadata
    for step in range(STEPS):
        _step(trace, 10 + step)
    device = {"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_100_000_000, "computeMajor": 8, "computeMinor": 0,
              "maxThreadsPerBlock": 1024, "numSms": 108, "warpSize": 32, "sharedMemPerBlock": 49152}
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": index, **device} for index in range(world_size)],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size},
        "record_shapes": 1,
        "with_stack": 1,
        "traceEvents": _metadata(trace) + trace.events,
        "traceName": f"tinygpt_rank{rank}.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": BASE_NS + rank * 37_000,
    }
    return document, trace.truth


_TAIL_KEYS = ("traceName", "displayTimeUnit", "baseTimeNanoseconds")


def write_trace(path: Path, rank: int, world_size: int = 2, slowdown: dict[str, float] | None = None) -> TraceTruth:
    """Write one rank's trace (gzip when the name ends in .gz), deterministically."""
    document, truth = build_trace(rank, world_size, slowdown)
    events = document.pop("traceEvents")
    # Kineto writes its metadata before the events and the time base after them.
    head = json.dumps({k: v for k, v in document.items() if k not in _TAIL_KEYS})
    tail = json.dumps({k: document[k] for k in _TAIL_KEYS})
    text = head[:-1] + ', "traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events) + "\n], " + tail[1:] + "\n"
    data = text.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, compresslevel=6, mtime=0) if path.name.endswith(".gz") else data)
    return truth


def write(folder: Path) -> list[Path]:
    """Two ranks of three training steps, one `.pt.trace.json.gz` per rank."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"tinygpt_rank{rank}.pt.trace.json.gz" for rank in range(2)]
    for rank, path in enumerate(paths):
        write_trace(path, rank)
    return paths
