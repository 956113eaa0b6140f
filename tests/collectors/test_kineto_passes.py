"""Pass and step of every kernel, copy and range, on generated traces of every shape (kineto_passes)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.base import Collected
from dashboard.collectors.kineto.collector import COLLECTOR
from tests.support.kineto_passes_trace import Shape, kernels_per_step, write


def _collect(*paths: Path) -> Collected:
    return COLLECTOR.collect(list(paths), lambda fraction, message: None)


def _per_pass(frame: pl.DataFrame) -> dict[str, int]:
    return dict(Counter(frame.get_column("pass").to_list()))


def _per_step(frame: pl.DataFrame) -> dict[tuple[int | None, str], int]:
    return {(step, pass_): n for step, pass_, n in frame.group_by("step", "pass").len().iter_rows()}


SHAPES = {
    "modern": Shape(),
    "legacy_2021": Shape(legacy=True),
    "compiled": Shape(compiled=True),
    "legacy_compiled_ddp": Shape(legacy=True, compiled=True, ddp=True),
    "with_stack": Shape(with_stack=True),
}
# Kernels per pass over two steps, plus the launch after the last step (forward, no step) and the
# kernel without a launch (unattributed): counted by hand from the generator's docstring.
EXPECTED = {
    "modern": {"forward": 2 * 2 + 1, "backward": 2 * 6, "optimizer": 2 * 3, "unattributed": 1},
    "legacy_2021": {"forward": 2 * 2 + 1, "backward": 2 * 6, "optimizer": 2 * 3, "unattributed": 1},
    "compiled": {"forward": 2 * 3 + 1, "backward": 2 * 7, "optimizer": 2 * 3, "unattributed": 1},
    "legacy_compiled_ddp": {"forward": 2 * 3 + 1, "backward": 2 * 8, "optimizer": 2 * 3, "unattributed": 1},
    "with_stack": {"forward": 2 * 2 + 1, "backward": 2 * 6, "optimizer": 2 * 3, "unattributed": 1},
}


@pytest.mark.parametrize("name", SHAPES)
def test_every_kernel_gets_the_pass_of_the_ops_enclosing_its_launch(tmp_path: Path, name: str) -> None:
    kernels = _collect(write(tmp_path, SHAPES[name])).tables["kernels"]
    assert _per_pass(kernels) == EXPECTED[name]
    per_step = kernels_per_step(SHAPES[name])
    assert _per_step(kernels) == {
        **{(step, pass_): n for step in (5, 6) for pass_, n in per_step.items()},
        (None, "forward"): 1, (None, "unattributed"): 1,
    }


@pytest.mark.parametrize("name", SHAPES)
def test_each_kernel_kind_lands_in_its_pass(tmp_path: Path, name: str) -> None:
    kernels = _collect(write(tmp_path, SHAPES[name])).tables["kernels"]
    by_name = {kernel: sorted(set(passes)) for kernel, passes in
               kernels.group_by("name").agg(pl.col("pass")).iter_rows()}
    expected = {
        "fwd_conv_kernel": ["forward"], "fwd_relu_kernel": ["forward"], "after_steps_kernel": ["forward"],
        "zero_kernel": ["optimizer"], "sgd_foreach_kernel": ["optimizer"],
        # under the main thread's `## backward ##` mark
        "clip_norm_kernel": ["backward"],
        # `…Backward1`, 2021 bare names, `AccumulateGrad`, on the autograd thread
        "bwd_threshold_kernel": ["backward"], "dgrad_kernel": ["backward"], "wgrad_kernel": ["backward"],
        "accumulate_grad_kernel": ["backward"],
        # on the autograd thread, under no backward function: the engine's gradient sum
        "engine_add_kernel": ["backward"],
        "orphan_kernel": ["unattributed"],
    }
    if SHAPES[name].compiled:
        expected |= {"triton_poi_fused_forward_0": ["forward"], "triton_poi_fused_backward_0": ["backward"]}
    if SHAPES[name].ddp:
        expected |= {"ncclKernel_AllReduce_RING_LL_Sum_float": ["backward"]}
    assert by_name == expected


def test_ddp_ranks_each_get_passes_per_step(tmp_path: Path) -> None:
    shape = Shape(ddp=True)
    result = _collect(write(tmp_path, shape, rank=0), write(tmp_path, shape, rank=1))
    kernels = result.tables["kernels"]
    for rank in (0, 1):
        mine = kernels.filter(pl.col("rank") == rank)
        assert _per_pass(mine) == {"forward": 5, "backward": 2 * 7, "optimizer": 6, "unattributed": 1}
        nccl = mine.filter(pl.col("name").str.starts_with("nccl"))
        assert nccl.select("pass", "step", "stream").rows() == [("backward", 5, 20), ("backward", 6, 20)]


def test_copies_take_the_pass_and_step_of_their_launch(tmp_path: Path) -> None:
    copies = _collect(write(tmp_path, Shape(legacy=True))).tables["memcpy"]
    assert copies.select("kind", "pass", "step").rows() == [("HtoD", "forward", 5), ("HtoD", "forward", 6)]


@pytest.mark.parametrize("name", ["modern", "legacy_2021"])
def test_ranges_get_a_pass_and_a_step(tmp_path: Path, name: str) -> None:
    ranges = _collect(write(tmp_path, SHAPES[name])).tables["ranges"]
    first = ranges.filter(pl.col("step") == 5)
    passes = {n: p for n, p in first.select("name", "pass").unique().iter_rows()}
    node = "CudnnConvolutionBackward" if SHAPES[name].legacy else "ConvolutionBackward0"
    assert passes["ProfilerStep#5"] == "unattributed"  # a step holds every pass
    assert {passes[n] for n in ("aten::copy_", "aten::conv2d", "aten::relu")} == {"forward"}
    assert {passes[n] for n in ("Optimizer.zero_grad#SGD.zero_grad", "aten::zero_", "Optimizer.step#SGD.step",
                                "aten::_foreach_add_")} == {"optimizer"}
    assert {passes[n] for n in ("## backward ##", "aten::norm", node, "aten::convolution_backward",
                                "torch::autograd::AccumulateGrad", "aten::add_", "aten::add")} == {"backward"}
    # The autograd thread's ranges fall in the step the main thread is in, by time.
    autograd = ranges.filter(pl.col("thread") == 4177)
    assert sorted(set(autograd.get_column("step").to_list())) == [5, 6]
    outside = ranges.filter(pl.col("name") == "aten::item")
    assert outside.select("pass", "step").rows() == [("forward", None)]
    assert set(ranges.get_column("pass").to_list()) == {"forward", "backward", "optimizer", "unattributed"}


def test_python_frames_the_backward_call_and_the_loop_around_the_steps(tmp_path: Path) -> None:
    ranges = _collect(write(tmp_path, Shape(with_stack=True))).tables["ranges"]
    passes = dict(ranges.select("name", "pass").unique().iter_rows())
    assert passes["torch/_tensor.py(626): backward"] == "backward"  # so the clip_norm launch under it is backward
    assert passes["aten::norm"] == "backward"
    assert passes["train.py(30): <module>"] == "unattributed"  # it encloses every step: every pass


def test_a_thread_with_forward_work_and_no_step_is_not_an_autograd_thread(tmp_path: Path) -> None:
    """Without steps, backward running on the main thread must not turn the forward ops there into backward."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
         "args": {"External id": 1, "Sequence number": 7, "Fwd thread id": 0}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 2,
         "args": {"correlation": 100, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 3,
         "args": {"correlation": 100, "External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 1, "ts": 50, "dur": 20,
         "args": {"External id": 2, "Sequence number": 7, "Fwd thread id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 52, "dur": 2,
         "args": {"correlation": 101, "External id": 2}},
        {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "pid": 0, "tid": 7, "ts": 60, "dur": 3,
         "args": {"correlation": 101, "External id": 2}},
    ]
    path = tmp_path / "no_steps.json"
    path.write_text(json.dumps({"traceEvents": events}))
    kernels = _collect(path).tables["kernels"].sort("start_ns")
    assert kernels.select("name", "pass", "step").rows() == [("gemm", "forward", None),
                                                             ("gemm_bwd", "backward", None)]


def test_a_torchrec_style_trace_takes_its_passes_from_the_trainers_annotations(tmp_path: Path) -> None:
    from dashboard.analysis.gpu_busy import merged_intervals
    from dashboard.analysis.timeline_lanes import pass_bands
    from tests.support.torchrec_trace import OTHER_PER_STEP, PER_STEP
    from tests.support.torchrec_trace import write as write_torchrec

    tables = _collect(write_torchrec(tmp_path)).tables
    kernels = tables["kernels"]
    assert _per_pass(kernels) == {name: 2 * count for name, count in PER_STEP.items()}
    assert _per_step(kernels) == {(step, name): count for step in (3, 4) for name, count in PER_STEP.items()}
    other = kernels.filter(pl.col("pass") == "other")
    assert dict(Counter(other.get_column("pass_annotation").to_list())) == {
        name: 2 * count for name, count in OTHER_PER_STEP.items()}
    # The next batch's all-to-all is not forward: it ran under `## sparse_data_dist ##`.
    nccl = kernels.filter(pl.col("name").str.starts_with("nccl"))
    assert nccl.select("pass", "pass_annotation").unique().rows() == [("other", "sparse_data_dist")]
    # The passes lane: each pass's bars are exactly the union of its kernels per step; the optimizer's
    # zero_grad and step are two bars per step, and no bar reaches over another pass's kernels.
    bands = pass_bands(tables["ranges"], kernels)
    for (step, name, annotation), mine in kernels.group_by("step", "pass", "pass_annotation"):
        union = merged_intervals(mine.select(pl.lit(0).alias("rank"), "start_ns", "end_ns"))
        bars = bands.filter(pl.col("step") == step, pl.col("pass") == name,
                            pl.col("pass_annotation").eq_missing(annotation)).sort("start_ns")
        assert bars.select("start_ns", "end_ns").rows() == union.select("start_ns", "end_ns").rows()
    optimizer = bands.filter(pl.col("pass") == "optimizer", pl.col("step") == 3)
    backward = bands.filter(pl.col("pass") == "backward", pl.col("step") == 3)
    assert optimizer.height >= 2
    assert not optimizer.filter(pl.col("start_ns") < backward["end_ns"].max(),
                                pl.col("end_ns") > backward["start_ns"].min()).height


def test_a_lone_backward_annotation_does_not_make_a_trainer_annotated_run(tmp_path: Path) -> None:
    """The modern shape marks only `## backward ##` around loss.backward(): no kernel becomes `other`."""
    kernels = _collect(write(tmp_path, SHAPES["modern"])).tables["kernels"]
    assert "other" not in _per_pass(kernels) and kernels["pass_annotation"].null_count() == kernels.height
