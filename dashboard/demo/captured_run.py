"""A captured-style demo run: a small GPT trained for 5 steps on a simulated GPU.

`tables()` runs the real capture code path (CaptureSession, RecordSink,
RangeRecorder, StackRecorder, build_tables) over `FakeCuptiBackend` with a
virtual clock, driving it with a scripted workload: per step an input copy,
forward and backward through 12 transformer blocks (module ranges with
analytic FLOPs, 2 per multiply-add), an AdamW step, zero_grad memsets, a
blocking loss copy, and a `ProfilerStep#N` mark. The result is deterministic
(fixed seed, virtual clock, thread ids normalised) and holds ~2,500 GPU
activities.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType

import polars as pl

from dashboard.capture.cupti_fake import FakeCuptiBackend, VirtualClock
from dashboard.capture.markers import mark
from dashboard.capture.session import CaptureSession
from dashboard.capture.stacks import StackLimits

SEED = 20240611
STEPS = 5
BLOCKS = 12
BATCH, SEQ, D_MODEL, VOCAB = 8, 512, 1024, 32_000
TOKENS = BATCH * SEQ
DEMO_THREAD = 4242  # one normalised CPU thread id
GEMM_TFLOPS = 150.0  # sustained bf16 rate of the simulated GPU
MEMORY_TBPS = 2.0
COMPUTE_STREAM = 7
_THIS_FILE = str(Path(__file__).resolve())


def _mangle(namespaces: tuple[str, ...], name: str, template: str, params: str) -> str:
    encoded = "".join(f"{len(part)}{part}" for part in (*namespaces, name))
    return f"_ZN{encoded}I{template}EEv{params}"


_BF16 = "N3c108BFloat16E"
LAYER_NORM_FWD = _mangle(("at", "native"), "layer_norm_forward_kernel", _BF16 + "f", "iPKfPKfPfPf")
LAYER_NORM_BWD = _mangle(("at", "native"), "layer_norm_backward_kernel", _BF16 + "f", "iPKfPKfPf")
GAMMA_BETA_BWD = _mangle(("at", "native"), "gamma_beta_backward_kernel", _BF16 + "f", "iiPKfPfPf")
GELU_FWD = _mangle(("at", "native"), "vectorized_elementwise_kernel", "Li4EN2at6native11GeluFunctorE", "iPvPv")
GELU_BWD = _mangle(("at", "native"), "vectorized_elementwise_kernel", "Li4EN2at6native15GeluBackwardFunctorE", "iPvPv")
ADD = _mangle(("at", "native"), "vectorized_elementwise_kernel", "Li4EN2at6native10AddFunctorE", "iPvPv")
FLASH_FWD = _mangle(("flash",), "flash_fwd_kernel", "Lb1ELb0E", "PvPKvi")
FLASH_BWD = _mangle(("flash",), "flash_bwd_kernel", "Lb1ELb0E", "PvPKvi")
EMBEDDING_FWD = _mangle(("at", "native"), "index_select_kernel", _BF16 + "l", "PKvPKlPvi")
EMBEDDING_BWD = _mangle(("at", "native"), "embedding_backward_kernel", _BF16, "PKlPKvPvi")
CROSS_ENTROPY_FWD = _mangle(("at", "native"), "cross_entropy_forward_kernel", _BF16 + "f", "PKvPKlPfi")
CROSS_ENTROPY_BWD = _mangle(("at", "native"), "cross_entropy_backward_kernel", _BF16 + "f", "PKvPKlPvi")
ADAMW = _mangle(("at", "native", "_GLOBAL__N_1"), "multi_tensor_apply_kernel", "Li4EN2at6native9AdamWMathE", "PvPKvi")
GEMMS = {
    "fprop": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel__5x_cublas",
    "dgrad": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas",
    "wgrad": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize256x128x64_warpgroupsize2x1x1_execute_kernel__5x_cublas",
}


class SimulatedTraining:
    """The scripted workload: launches kernels and opens module ranges like torch would."""

    def __init__(self, gpu: FakeCuptiBackend, session: CaptureSession, rng: random.Random) -> None:
        self.gpu = gpu
        self.session = session
        self.rng = rng
        self.flop_stack: list[list[float]] = []

    @contextmanager
    def module(self, name: str, pass_: str) -> Iterator[None]:
        assert self.session.ranges is not None
        range_id = self.session.ranges.open(name, "module", pass_, layer=name)
        self.flop_stack.append([0.0])
        try:
            yield
        finally:
            flops = self.flop_stack.pop()[0]
            self.session.ranges.close(range_id, flops=flops or None)

    def _count(self, flops: float) -> None:
        for accumulator in self.flop_stack:  # inclusive: every enclosing module
            accumulator[0] += flops

    def _jitter(self) -> float:
        return self.rng.uniform(0.9, 1.15)

    def gemm(self, m: int, n: int, k: int, role: str = "fprop") -> None:
        flops = 2.0 * m * n * k
        self._count(flops)
        duration = flops / (GEMM_TFLOPS * 1e3) * self._jitter()
        self.gpu.launch_kernel(
            GEMMS[role],
            int(duration),
            COMPUTE_STREAM,
            (max(1, n // 256), max(1, m // 128), 1),
            (384, 1, 1),
            registers=168,
            dynamic_smem=213_000,
        )

    def elementwise(self, kernel: str, nbytes: int, flops: float = 0.0) -> None:
        self._count(flops)
        duration = nbytes / (MEMORY_TBPS * 1e3) * self._jitter()
        self.gpu.launch_kernel(kernel, int(duration) + 1500, COMPUTE_STREAM, (max(1, nbytes // 8192), 1, 1))

    def attention(self, backward: bool) -> None:
        flops = 4.0 * BATCH * SEQ * SEQ * D_MODEL / 2  # causal: half the score matrix
        flops *= 2.5 if backward else 1.0
        self._count(flops)
        duration = flops / (GEMM_TFLOPS * 0.6 * 1e3) * self._jitter()
        kernel = FLASH_BWD if backward else FLASH_FWD
        self.gpu.launch_kernel(
            kernel,
            int(duration),
            COMPUTE_STREAM,
            (SEQ // 128, BATCH * 16, 1),
            (128, 1, 1),
            registers=255,
            dynamic_smem=98_304,
        )


def block_forward(work: SimulatedTraining, index: int) -> None:
    prefix = f"GPT.blocks.{index}"
    activation = TOKENS * D_MODEL * 2
    with work.module(prefix, "forward"):
        with work.module(f"{prefix}.ln_1", "forward"):
            work.elementwise(LAYER_NORM_FWD, activation * 2)
        with work.module(f"{prefix}.attn", "forward"):
            with work.module(f"{prefix}.attn.c_attn", "forward"):
                work.gemm(TOKENS, 3 * D_MODEL, D_MODEL)
            work.attention(backward=False)
            with work.module(f"{prefix}.attn.c_proj", "forward"):
                work.gemm(TOKENS, D_MODEL, D_MODEL)
        work.elementwise(ADD, activation * 3)
        with work.module(f"{prefix}.ln_2", "forward"):
            work.elementwise(LAYER_NORM_FWD, activation * 2)
        with work.module(f"{prefix}.mlp", "forward"):
            with work.module(f"{prefix}.mlp.c_fc", "forward"):
                work.gemm(TOKENS, 4 * D_MODEL, D_MODEL)
            with work.module(f"{prefix}.mlp.gelu", "forward"):
                work.elementwise(GELU_FWD, activation * 8)
            with work.module(f"{prefix}.mlp.c_proj", "forward"):
                work.gemm(TOKENS, D_MODEL, 4 * D_MODEL)
        work.elementwise(ADD, activation * 3)


def linear_backward(work: SimulatedTraining, name: str, m: int, n: int, k: int) -> None:
    with work.module(name, "backward"):
        work.gemm(m, k, n, "dgrad")
        work.gemm(n, k, m, "wgrad")


def block_backward(work: SimulatedTraining, index: int) -> None:
    prefix = f"GPT.blocks.{index}"
    activation = TOKENS * D_MODEL * 2
    with work.module(prefix, "backward"):
        work.elementwise(ADD, activation * 3)
        with work.module(f"{prefix}.mlp", "backward"):
            linear_backward(work, f"{prefix}.mlp.c_proj", TOKENS, D_MODEL, 4 * D_MODEL)
            with work.module(f"{prefix}.mlp.gelu", "backward"):
                work.elementwise(GELU_BWD, activation * 12)
            linear_backward(work, f"{prefix}.mlp.c_fc", TOKENS, 4 * D_MODEL, D_MODEL)
        with work.module(f"{prefix}.ln_2", "backward"):
            work.elementwise(LAYER_NORM_BWD, activation * 3)
            work.elementwise(GAMMA_BETA_BWD, activation)
        work.elementwise(ADD, activation * 3)
        with work.module(f"{prefix}.attn", "backward"):
            linear_backward(work, f"{prefix}.attn.c_proj", TOKENS, D_MODEL, D_MODEL)
            work.attention(backward=True)
            linear_backward(work, f"{prefix}.attn.c_attn", TOKENS, 3 * D_MODEL, D_MODEL)
        with work.module(f"{prefix}.ln_1", "backward"):
            work.elementwise(LAYER_NORM_BWD, activation * 3)
            work.elementwise(GAMMA_BETA_BWD, activation)


def train_step(work: SimulatedTraining, step: int) -> None:
    gpu = work.gpu
    gpu.memcpy(TOKENS * 8 * 2, "HtoD", "Pinned", "Device", COMPUTE_STREAM, bandwidth_gbps=22.0)
    with work.module("GPT", "forward"):
        with work.module("GPT.wte", "forward"):
            work.elementwise(EMBEDDING_FWD, TOKENS * D_MODEL * 2)
        for index in range(BLOCKS):
            block_forward(work, index)
        with work.module("GPT.ln_f", "forward"):
            work.elementwise(LAYER_NORM_FWD, TOKENS * D_MODEL * 4)
        with work.module("GPT.lm_head", "forward"):
            work.gemm(TOKENS, VOCAB, D_MODEL)
    with work.module("CrossEntropyLoss", "forward"):
        work.elementwise(CROSS_ENTROPY_FWD, TOKENS * VOCAB * 2)
    with work.module("CrossEntropyLoss", "backward"):
        work.elementwise(CROSS_ENTROPY_BWD, TOKENS * VOCAB * 4)
    with work.module("GPT", "backward"):
        linear_backward(work, "GPT.lm_head", TOKENS, VOCAB, D_MODEL)
        with work.module("GPT.ln_f", "backward"):
            work.elementwise(LAYER_NORM_BWD, TOKENS * D_MODEL * 6)
        for index in reversed(range(BLOCKS)):
            block_backward(work, index)
        with work.module("GPT.wte", "backward"):
            gpu.memset(VOCAB * D_MODEL * 4, stream=COMPUTE_STREAM)
            work.elementwise(EMBEDDING_BWD, TOKENS * D_MODEL * 4)
    with mark("Optimizer.step#AdamW.step"):
        for _chunk in range(4):
            work.elementwise(ADAMW, 48 * 2**20)
    with mark("Optimizer.zero_grad#AdamW.zero_grad"):
        for _param in range(BLOCKS * 12 + 4):
            gpu.memset(D_MODEL * D_MODEL * 2, stream=COMPUTE_STREAM)
    gpu.memcpy(4, "DtoH", "Device", "Pageable", COMPUTE_STREAM, blocking=True)  # loss.item()


def train(work: SimulatedTraining) -> None:
    for step in range(STEPS):
        with mark(f"ProfilerStep#{step}", category="profiler_step"):
            train_step(work, step)


def _only_this_file(code: CodeType) -> bool:
    # Comprehension / lambda frames exist on 3.11 but not 3.12: keep the demo identical.
    return code.co_filename == _THIS_FILE and (code.co_name == "<module>" or not code.co_name.startswith("<"))


def tables() -> dict[str, pl.DataFrame]:
    """The demo run's canonical tables (deterministic)."""
    gpu = FakeCuptiBackend(clock=VirtualClock(), records_per_buffer=1024)
    session = CaptureSession(
        "captured-gpt-demo", backend=gpu, rank=0, layers=False, stacks=StackLimits(include=_only_this_file)
    )
    with session:
        train(SimulatedTraining(gpu, session, random.Random(SEED)))
    result = session.tables()
    for name in ("ranges", "api_calls", "stack"):
        if name in result:  # the real thread id changes per process
            result[name] = result[name].with_columns(pl.lit(DEMO_THREAD, dtype=pl.Int64).alias("thread"))
    return result
