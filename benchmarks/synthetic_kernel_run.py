"""A large synthetic training run as canonical tables, for benchmarks and tests.

`make_tables(n_kernels, ranks, seed)` models a GPT-like training loop on
`ranks` GPUs: each profiler step runs forward and backward through the
model's layers (embedding, N transformer blocks split into attention and
MLP, final norm, LM head, loss), an all-reduce of the gradients on a
separate stream and a fused optimizer. The result has:

- kernels: ~200 distinct realistic kernel names with a heavy-tailed launch
  count (a few GEMM / flash-attention kernels hold most of the time, a long
  tail of elementwise kernels appears rarely), `op` / `layer` / `pass`
  attribution and FLOPs for matmuls and attention (null elsewhere: unknown);
- memcpy: the input batch copied in, the loss copied out, a gradient memset;
- ranges: one `profiler_step` and one `cpu_op` per kernel launch on the CPU
  thread, and one `module` range per layer occurrence and pass on the
  compute stream (its interval spans the layer's kernels; flops summed).

Everything is vectorised: one step's launch program is built in Python
(~1,000 entries), then tiled over steps and ranks with numpy; 1 M kernels
take a few seconds. Deterministic for a given seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from benchmarks.synthetic_kernel_names import (
    ADAM,
    ADD,
    ALL_REDUCE,
    EMBED,
    EMBED_BWD,
    FLASH_BWD,
    FLASH_BWD_CONVERT,
    FLASH_BWD_DOT,
    FLASH_FWD,
    GAMMA_BETA_BWD,
    GELU,
    GELU_BWD,
    GEMM_DGRAD,
    GEMM_FC1,
    GEMM_FC2,
    GEMM_HEAD,
    GEMM_HEAD_BWD,
    GEMM_OUT,
    GEMM_QKV,
    GEMM_WGRAD,
    LAYER_NORM,
    LAYER_NORM_BWD,
    NLL,
    NLL_BWD,
    REDUCE_SUM,
    SOFTMAX,
    SOFTMAX_BWD,
    tail_kernel_names,
)
from dashboard.schema import conform

COMPUTE_STREAM = 7
NCCL_STREAM = 20
COPY_STREAM = 24
CPU_THREAD = 4037
BLOCKS = 12
HIDDEN = 4096
TOKENS = 8192  # batch x sequence
SEQ = 2048
HEADS = 32
VOCAB = 32000
GEMM_TFLOPS = 620e12  # achieved rate around which GEMM durations are drawn (H100 bf16)
ATTN_TFLOPS = 410e12

@dataclass(frozen=True)
class Launch:
    """One entry of a step's launch program."""

    name: str  # "" = draw from the heavy-tailed pool
    layer: str | None
    pass_: str
    op: str
    duration_ns: float  # mean; GEMMs derive it from flops
    flops: float | None = None
    stream: int = COMPUTE_STREAM


def _gemm_launch(name: str, layer: str, pass_: str, op: str, m: int, n: int, k: int) -> Launch:
    flops = 2.0 * m * n * k
    return Launch(name, layer, pass_, op, flops / GEMM_TFLOPS * 1e9, flops)


def _block_program(block: int) -> list[Launch]:
    attn, mlp = f"blocks.{block}.attn", f"blocks.{block}.mlp"
    h, t = HIDDEN, TOKENS
    attn_flops = 4.0 * TOKENS * SEQ * HIDDEN  # QK^T and PV, causal halves the full 8x
    fwd = [
        Launch(LAYER_NORM, attn, "forward", "aten::native_layer_norm", 28_000),
        _gemm_launch(GEMM_QKV, attn, "forward", "aten::addmm", t, 3 * h, h),
        Launch(FLASH_FWD, attn, "forward", "FlashAttnFunc", attn_flops / ATTN_TFLOPS * 1e9, attn_flops),
        _gemm_launch(GEMM_OUT, attn, "forward", "aten::addmm", t, h, h),
        Launch(ADD, attn, "forward", "aten::add", 30_000),
        Launch("", attn, "forward", "aten::mul", 6_000),
        Launch(LAYER_NORM, mlp, "forward", "aten::native_layer_norm", 28_000),
        _gemm_launch(GEMM_FC1, mlp, "forward", "aten::addmm", t, 4 * h, h),
        Launch(GELU, mlp, "forward", "aten::gelu", 95_000),
        _gemm_launch(GEMM_FC2, mlp, "forward", "aten::addmm", t, h, 4 * h),
        Launch(ADD, mlp, "forward", "aten::add", 30_000),
        Launch("", mlp, "forward", "aten::copy_", 5_000),
    ]
    bwd_mlp = [
        Launch(ADD, mlp, "backward", "AddBackward0", 30_000),
        _gemm_launch(GEMM_DGRAD, mlp, "backward", "AddmmBackward0", t, 4 * h, h),
        _gemm_launch(GEMM_WGRAD, mlp, "backward", "AddmmBackward0", h, 4 * h, t),
        Launch(REDUCE_SUM, mlp, "backward", "AddmmBackward0", 18_000),
        Launch(GELU_BWD, mlp, "backward", "GeluBackward0", 140_000),
        _gemm_launch(GEMM_DGRAD, mlp, "backward", "AddmmBackward0", t, h, 4 * h),
        _gemm_launch(GEMM_WGRAD, mlp, "backward", "AddmmBackward0", 4 * h, h, t),
        Launch(REDUCE_SUM, mlp, "backward", "AddmmBackward0", 22_000),
        Launch(LAYER_NORM_BWD, mlp, "backward", "NativeLayerNormBackward0", 45_000),
        Launch(GAMMA_BETA_BWD, mlp, "backward", "NativeLayerNormBackward0", 35_000),
        Launch("", mlp, "backward", "aten::add_", 5_000),
    ]
    bwd_attn = [
        _gemm_launch(GEMM_DGRAD, attn, "backward", "AddmmBackward0", t, h, h),
        _gemm_launch(GEMM_WGRAD, attn, "backward", "AddmmBackward0", h, h, t),
        Launch(FLASH_BWD_DOT, attn, "backward", "FlashAttnFuncBackward", 25_000),
        Launch(FLASH_BWD, attn, "backward", "FlashAttnFuncBackward", 2.5 * attn_flops / ATTN_TFLOPS * 1e9,
               2.5 * attn_flops),
        Launch(FLASH_BWD_CONVERT, attn, "backward", "FlashAttnFuncBackward", 12_000),
        _gemm_launch(GEMM_DGRAD, attn, "backward", "AddmmBackward0", t, h, 3 * h),
        _gemm_launch(GEMM_WGRAD, attn, "backward", "AddmmBackward0", 3 * h, h, t),
        Launch(REDUCE_SUM, attn, "backward", "AddmmBackward0", 20_000),
        Launch(LAYER_NORM_BWD, attn, "backward", "NativeLayerNormBackward0", 45_000),
        Launch(GAMMA_BETA_BWD, attn, "backward", "NativeLayerNormBackward0", 35_000),
        Launch("", attn, "backward", "aten::add_", 5_000),
    ]
    return fwd, bwd_mlp + bwd_attn


def step_program() -> list[Launch]:
    """The launches of one training step, in issue order."""
    forward: list[Launch] = [Launch(EMBED, "embedding", "forward", "aten::embedding", 40_000)]
    backward_blocks: list[list[Launch]] = []
    for block in range(BLOCKS):
        fwd, bwd = _block_program(block)
        forward += fwd
        backward_blocks.append(bwd)
    forward += [
        Launch(LAYER_NORM, "norm", "forward", "aten::native_layer_norm", 28_000),
        _gemm_launch(GEMM_HEAD, "lm_head", "forward", "aten::mm", TOKENS, VOCAB, HIDDEN),
        Launch(SOFTMAX, "loss", "forward", "aten::_log_softmax", 220_000),
        Launch(NLL, "loss", "forward", "aten::nll_loss_forward", 15_000),
    ]
    backward: list[Launch] = [
        Launch(NLL_BWD, "loss", "backward", "NllLossBackward0", 60_000),
        Launch(SOFTMAX_BWD, "loss", "backward", "LogSoftmaxBackward0", 230_000),
        _gemm_launch(GEMM_HEAD_BWD, "lm_head", "backward", "MmBackward0", TOKENS, HIDDEN, VOCAB),
        _gemm_launch(GEMM_HEAD_BWD, "lm_head", "backward", "MmBackward0", VOCAB, HIDDEN, TOKENS),
        Launch(LAYER_NORM_BWD, "norm", "backward", "NativeLayerNormBackward0", 45_000),
        Launch(GAMMA_BETA_BWD, "norm", "backward", "NativeLayerNormBackward0", 35_000),
    ]
    for block in reversed(range(BLOCKS)):
        backward += backward_blocks[block]
        if block % 3 == 0:  # a gradient bucket is ready: all-reduce it on the NCCL stream
            backward.append(Launch(ALL_REDUCE, None, "backward", "nccl:all_reduce", 900_000, stream=NCCL_STREAM))
    backward.append(Launch(EMBED_BWD, "embedding", "backward", "EmbeddingBackward0", 120_000))
    optimizer = [Launch(ADAM, None, "none", "Optimizer.step#AdamW.step", 160_000) for _ in range(24)]
    optimizer += [Launch("", None, "none", "aten::zero_", 4_000) for _ in range(40)]
    return forward + backward + optimizer


def _program_arrays(program: list[Launch], names: list[str]) -> dict[str, np.ndarray]:
    index = {name: i for i, name in enumerate(names)}
    layers = sorted({p.layer for p in program if p.layer is not None})
    ops = sorted({p.op for p in program})
    # A layer occurrence is a maximal run of launches with one (layer, pass).
    keys = [(p.layer, p.pass_) for p in program]
    occurrence = np.cumsum([0] + [int(keys[i] != keys[i - 1]) for i in range(1, len(keys))])
    return {
        "name": np.array([index.get(p.name, -1) for p in program], dtype=np.int32),
        "layer": np.array([layers.index(p.layer) if p.layer else -1 for p in program], dtype=np.int32),
        "pass": np.array([("forward", "backward", "none").index(p.pass_) for p in program], dtype=np.int8),
        "op": np.array([ops.index(p.op) for p in program], dtype=np.int32),
        "duration": np.array([p.duration_ns for p in program], dtype=np.float64),
        "flops": np.array([np.nan if p.flops is None else p.flops for p in program], dtype=np.float64),
        "stream": np.array([p.stream for p in program], dtype=np.int64),
        "occurrence": occurrence.astype(np.int64),
        "_layers": np.array(layers, dtype=object),
        "_ops": np.array(ops, dtype=object),
    }


def _launch_shapes(names: list[str], rng: np.random.Generator) -> pl.DataFrame:
    """Grid, block, registers and shared memory per kernel name (fixed per name)."""
    n = len(names)
    gemm = np.array(["gemm" in s or "flash" in s for s in names])
    return pl.DataFrame({
        "name": names,
        "grid_x": np.where(gemm, rng.integers(32, 264, n), rng.integers(256, 65536, n)).astype(np.int32),
        "grid_y": np.where(gemm, rng.integers(1, 32, n), 1).astype(np.int32),
        "grid_z": np.ones(n, dtype=np.int32),
        "block_x": np.where(gemm, 384, rng.choice([128, 256, 512], n)).astype(np.int32),
        "block_y": np.ones(n, dtype=np.int32),
        "block_z": np.ones(n, dtype=np.int32),
        "registers": np.where(gemm, rng.choice([154, 168, 255], n), rng.integers(16, 64, n)).astype(np.int32),
        "shared_memory": np.where(gemm, rng.choice([98304, 147456, 232448], n), 0).astype(np.int64),
    })


def make_tables(n_kernels: int = 1_000_000, ranks: int = 2, seed: int = 0) -> dict[str, pl.DataFrame]:
    """Canonical `kernels`, `memcpy` and `ranges` tables of a synthetic training run.

    `n_kernels` is the total over all ranks (split evenly); the last step of
    each rank is cut short so the count is exact.
    """
    if n_kernels < ranks or ranks < 1:
        raise ValueError("need at least one kernel per rank and at least one rank")
    rng = np.random.default_rng(seed)
    program = step_program()
    tail = tail_kernel_names()
    names = sorted({p.name for p in program if p.name}) + tail
    arrays = _program_arrays(program, names)
    n_core = len(names) - len(tail)
    # Heavy tail: Zipf-like weights over the tail pool.
    tail_weights = 1.0 / np.arange(1, len(tail) + 1) ** 1.3
    tail_weights /= tail_weights.sum()
    tail_duration = 3_000 + 40_000 * rng.pareto(2.5, len(tail))

    per_rank = [n_kernels // ranks + (1 if r < n_kernels % ranks else 0) for r in range(ranks)]
    steps = math.ceil(max(per_rank) / len(program))
    kernels, ranges, memcpy = [], [], []
    for rank, count in enumerate(per_rank):
        slot = np.tile(np.arange(len(program)), steps)[:count]
        step = np.repeat(np.arange(steps), len(program))[:count]
        name = arrays["name"][slot].copy()
        drawn = name < 0
        name[drawn] = n_core + rng.choice(len(tail), int(drawn.sum()), p=tail_weights)
        base = arrays["duration"][slot].copy()
        base[drawn] = tail_duration[name[drawn] - n_core]
        # Rank 1+ runs a little slower and one in ~200 launches is a straggler.
        slowdown = 1.0 + 0.04 * rank + (rng.random(count) < 0.005) * rng.exponential(1.5, count)
        duration = np.maximum(base * rng.lognormal(0.0, 0.12, count) * slowdown, 1_000).astype(np.int64)
        stream = arrays["stream"][slot]
        on_compute = stream == COMPUTE_STREAM
        # CPU launch clock within a step: ~6 µs per launch after a data-loading pause.
        new_step = np.r_[True, step[1:] != step[:-1]]
        cpu_cost = rng.integers(3_000, 9_000, count) + new_step * rng.integers(800_000, 1_500_000, count)
        cpu_total = np.cumsum(cpu_cost)
        step_first = np.flatnonzero(new_step)
        cpu_rel = cpu_total - np.repeat(cpu_total[step_first] - cpu_cost[step_first], np.diff(np.r_[step_first, count]))
        # Compute-stream kernels queue behind each other: start = P + cummax(issue + latency - P),
        # where P is the prefix sum of (duration + gap) of earlier compute kernels of the step.
        # Adding step * BIG restarts the running maximum at every step.
        big = np.int64(10**13)
        latency = 5_000
        busy = np.where(on_compute, duration + 1_200, 0)
        prefix_all = np.cumsum(busy) - busy
        prefix = prefix_all - np.repeat(prefix_all[step_first], np.diff(np.r_[step_first, count]))
        queued = np.maximum.accumulate(np.where(on_compute, cpu_rel + latency - prefix, -10**12) + step * big)
        start_rel = np.where(on_compute, prefix + queued - step * big, cpu_rel + latency)
        # A step begins after the GPU finished the previous one (loss.item() syncs).
        step_len = np.zeros(steps, dtype=np.int64)
        np.maximum.at(step_len, step, np.maximum(start_rel + duration, cpu_rel + 2_500))
        step_origin = np.r_[0, np.cumsum(step_len + 200_000)[:-1]] + rank * 50_000
        start = start_rel + step_origin[step]
        cpu_issue = cpu_rel + step_origin[step]
        correlation = np.arange(count, dtype=np.int64) + 1 + rank * 10_000_000
        occurrence = step * (int(arrays["occurrence"][-1]) + 1) + arrays["occurrence"][slot]
        frame = pl.DataFrame({
            "rank": np.full(count, rank, dtype=np.int32),
            "device": np.full(count, rank, dtype=np.int32),
            "stream": stream,
            "correlation": correlation,
            "name_index": name,
            "start_ns": start.astype(np.int64),
            "end_ns": (start + duration).astype(np.int64),
            "layer_index": arrays["layer"][slot],
            "pass_index": arrays["pass"][slot],
            "op_index": arrays["op"][slot],
            "flops": arrays["flops"][slot],
            "step": step,
            "occurrence": occurrence,
            "cpu_issue": cpu_issue.astype(np.int64),
        })
        kernels.append(frame)
    raw = pl.concat(kernels)
    lookup = {
        "name": pl.Series(names, dtype=pl.String),
        "layer": pl.Series(list(arrays["_layers"]), dtype=pl.String),
        "pass": pl.Series(["forward", "backward", "none"], dtype=pl.String),
        "op": pl.Series(list(arrays["_ops"]), dtype=pl.String),
    }
    raw = raw.with_columns(
        lookup["name"].gather(raw["name_index"]).alias("name"),
        pl.when(pl.col("layer_index") >= 0).then(
            lookup["layer"].gather(raw["layer_index"].clip(0))).alias("layer"),
        lookup["pass"].gather(raw["pass_index"].cast(pl.Int64)).alias("pass"),
        lookup["op"].gather(raw["op_index"]).alias("op"),
        pl.col("flops").fill_nan(None),
    )
    shapes = _launch_shapes(names, rng)
    kernel_table = conform("kernels", raw.join(shapes, on="name", how="left").drop(
        "name_index", "layer_index", "pass_index", "op_index", "step", "occurrence", "cpu_issue"))
    ranges.append(_cpu_ranges(raw))
    ranges.append(_module_ranges(raw))
    memcpy.append(_memcpy(raw))
    range_table = pl.concat([conform("ranges", r) for r in ranges]).sort("rank", "start_ns")
    range_table = range_table.with_columns(pl.int_range(pl.len()).over("rank").cast(pl.Int64).alias("id_new"))
    # Renumber ids per rank in time order and map parents through the renumbering.
    mapping = range_table.select("rank", pl.col("id").alias("parent"), pl.col("id_new").alias("parent_new"))
    range_table = (range_table.join(mapping, on=["rank", "parent"], how="left")
                   .with_columns(pl.col("id_new").alias("id"), pl.col("parent_new").alias("parent"))
                   .drop("id_new", "parent_new"))
    return {
        "kernels": kernel_table.sort("rank", "start_ns"),
        "memcpy": conform("memcpy", pl.concat(memcpy)).sort("rank", "start_ns"),
        "ranges": conform("ranges", range_table),
    }


def _cpu_ranges(raw: pl.DataFrame) -> pl.DataFrame:
    """A profiler step per step and a cpu_op per launch, on the CPU thread."""
    ops = raw.select(
        "rank", "step", pl.col("cpu_issue").alias("start_ns"),
        (pl.col("cpu_issue") + 2_500).alias("end_ns"), pl.col("op").alias("name"), "pass", "layer",
        "correlation", "flops",
    ).with_columns(pl.lit("cpu_op").alias("category"), pl.lit(1, dtype=pl.Int32).alias("depth"))
    steps = raw.group_by("rank", "step").agg(
        (pl.col("cpu_issue").min() - 100_000).alias("start_ns"),
        pl.max_horizontal(pl.col("end_ns").max(), pl.col("cpu_issue").max() + 2_500).alias("end_ns"),
    ).with_columns(
        pl.format("ProfilerStep#{}", pl.col("step")).alias("name"),
        pl.lit("profiler_step").alias("category"), pl.lit(0, dtype=pl.Int32).alias("depth"),
        pl.lit("none").alias("pass"),
    )
    # Temporary ids: steps are negative -(step+1), ops are their correlation; renumbered later.
    steps = steps.with_columns((-(pl.col("step") + 1)).cast(pl.Int64).alias("id"),
                               pl.lit(None, pl.Int64).alias("parent"))
    ops = ops.with_columns(pl.col("correlation").alias("id"), (-(pl.col("step") + 1)).cast(pl.Int64).alias("parent"))
    both = pl.concat([steps.drop("step"), ops.drop("step")], how="diagonal_relaxed")
    return both.with_columns(pl.lit(CPU_THREAD, dtype=pl.Int64).alias("thread"))


def _module_ranges(raw: pl.DataFrame) -> pl.DataFrame:
    """One range per layer occurrence and pass, on the compute stream (GPU span of its kernels)."""
    modules = (raw.filter(pl.col("layer").is_not_null(), pl.col("stream") == COMPUTE_STREAM)
               .group_by("rank", "occurrence")
               .agg(pl.col("layer").first(), pl.col("pass").first(), pl.col("start_ns").min(),
                    pl.col("end_ns").max(), pl.col("flops").sum().alias("flops_sum"),
                    pl.col("flops").is_not_null().any().alias("has_flops"), pl.col("step").first()))
    return modules.select(
        "rank", pl.col("rank").alias("device"), pl.lit(COMPUTE_STREAM, dtype=pl.Int64).alias("thread"),
        pl.col("layer").alias("name"), pl.lit("module").alias("category"), "start_ns", "end_ns",
        pl.lit(0, dtype=pl.Int32).alias("depth"), "pass", "layer",
        pl.when(pl.col("has_flops")).then(pl.col("flops_sum")).alias("flops"),
        # Temporary ids above every correlation; renumbered later.
        (pl.col("occurrence") + 1_000_000_000).alias("id"),
    )


def _memcpy(raw: pl.DataFrame) -> pl.DataFrame:
    """Per step: the batch in (HtoD), the loss out (DtoH), and a memset of the gradients."""
    steps = raw.group_by("rank", "step").agg(pl.col("start_ns").min().alias("first"),
                                             pl.col("end_ns").max().alias("last"))
    batch = steps.select("rank", (pl.col("first") - 90_000).alias("start_ns"),
                         (pl.col("first") - 20_000).alias("end_ns"), pl.lit("HtoD").alias("kind"),
                         pl.lit("Pinned").alias("src_kind"), pl.lit("Device").alias("dst_kind"),
                         pl.lit(TOKENS * 8 * 2).alias("bytes"), pl.lit(COPY_STREAM).alias("stream"))
    loss = steps.select("rank", pl.col("last").alias("start_ns"), (pl.col("last") + 3_000).alias("end_ns"),
                        pl.lit("DtoH").alias("kind"), pl.lit("Device").alias("src_kind"),
                        pl.lit("Pageable").alias("dst_kind"), pl.lit(4).alias("bytes"),
                        pl.lit(COMPUTE_STREAM).alias("stream"))
    memset = steps.select("rank", (pl.col("first") - 15_000).alias("start_ns"),
                          (pl.col("first") - 5_000).alias("end_ns"), pl.lit("Memset").alias("kind"),
                          pl.lit("Device").alias("src_kind"), pl.lit("Device").alias("dst_kind"),
                          pl.lit(2 * 1_300_000_000).alias("bytes"), pl.lit(COMPUTE_STREAM).alias("stream"))
    return pl.concat([batch, loss, memset], how="vertical_relaxed").with_columns(pl.col("rank").alias("device"))
