"""A Kineto trace of a torchrec-style pipelined training loop, marked with the trainer's own annotations.

Per profiler step on the main thread, in this order (times in µs from the step's start):

* `## optimizer ##` around `zero_grad` (one kernel) at the start of the step;
* `## load_batch ##` (one kernel: the next batch's copy-to-GPU preparation);
* `## sparse_data_dist ##`: the *next* batch's input distribution: a permute kernel and an all-to-all
  (`nccl:all_to_all`, NCCL kernel on its own stream);
* `## forward ##`: three kernels (embedding lookup, two MLP GEMMs);
* `## backward ##` around `loss.backward()`: one kernel of its own (gradient clipping) while the autograd
  thread (no annotation of its own) launches four (two MLP dgrad/wgrad, embedding backward, AccumulateGrad);
* `## optimizer ##` around the optimizer step (two kernels).

Between `## forward ##` and `## backward ##`, `aten::item` logs the loss (one kernel, under no annotation).

Kernels per step: forward 3, backward 5, optimizer 3 (zero_grad + step), other 4 (load_batch 1,
sparse_data_dist 2, the loss log 1 with no annotation). The optimizer's kernels come in two runs per step, so
its bars on the passes lane are two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.kineto_passes_trace import AUTOGRAD, MAIN, NCCL_STREAM, Shape, _Writer

STEP_US = 2000.0
PER_STEP = {"forward": 3, "backward": 5, "optimizer": 3, "other": 4}
OTHER_PER_STEP = {"load_batch": 1, "sparse_data_dist": 2, None: 1}


def _step(w: _Writer, number: int, t0: float) -> None:
    mark = "user_annotation"
    with w.op(MAIN, f"ProfilerStep#{number}", t0, 1900.0, cat=mark):
        with w.op(MAIN, "## optimizer ##", t0 + 5, 30, cat=mark), w.op(MAIN, "aten::zero_", t0 + 10, 10):
            w.launch(MAIN, t0 + 12, "zero_grad_kernel")
        with w.op(MAIN, "## load_batch ##", t0 + 50, 60, cat=mark), w.op(MAIN, "aten::copy_", t0 + 60, 20):
            w.launch(MAIN, t0 + 65, "pin_and_copy_kernel")
        with w.op(MAIN, "## sparse_data_dist ##", t0 + 120, 100, cat=mark):
            with w.op(MAIN, "fbgemm::permute_2D_sparse_data", t0 + 125, 20):
                w.launch(MAIN, t0 + 130, "permute_2D_lengths_kernel")
            with w.op(MAIN, "nccl:all_to_all", t0 + 150, 40, cat=mark):
                w.launch(MAIN, t0 + 160, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
                         stream=NCCL_STREAM)
        with w.op(MAIN, "## forward ##", t0 + 250, 300, cat=mark):
            for index, (op, kernel) in enumerate((("fbgemm::split_embedding_codegen_lookup", "embedding_fwd"),
                                                  ("aten::addmm", "mlp_gemm_0"), ("aten::addmm", "mlp_gemm_1"))):
                with w.op(MAIN, op, t0 + 260 + index * 80, 40):
                    w.launch(MAIN, t0 + 270 + index * 80, kernel)
        with w.op(MAIN, "aten::item", t0 + 560, 20):  # the loss, logged between the annotations
            w.launch(MAIN, t0 + 565, "loss_reduce_kernel")
        with w.op(MAIN, "## backward ##", t0 + 600, 700, cat=mark):
            for index, (node, kernel) in enumerate((("AddmmBackward0", "mlp_dgrad"), ("AddmmBackward0", "mlp_wgrad"),
                                                    ("SplitLookupFunction_sgd_Op", "embedding_bwd"),
                                                    ("torch::autograd::AccumulateGrad", "accumulate_grad"))):
                with w.node(t0 + 620 + index * 120, node, node, 80):
                    w.launch(AUTOGRAD, t0 + 640 + index * 120, kernel)
            with w.op(MAIN, "aten::norm", t0 + 1200, 20):
                w.launch(MAIN, t0 + 1205, "clip_norm_kernel")
        with w.op(MAIN, "## optimizer ##", t0 + 1400, 300, cat=mark), \
                w.op(MAIN, "aten::_foreach_add_", t0 + 1410, 100):
            w.launch(MAIN, t0 + 1420, "adam_foreach_kernel")
            w.launch(MAIN, t0 + 1450, "adam_foreach_kernel")


def trace(steps: int = 2, first_step: int = 3) -> dict[str, Any]:
    w = _Writer(Shape(), None)
    base = 1_700_000_000_000_000.0
    for index in range(steps):
        _step(w, first_step + index, base + index * STEP_US)
    return {"schemaVersion": 1, "traceEvents": w.events}


def write(folder: Path, steps: int = 2) -> Path:
    path = folder / "torchrec_pipeline.pt.trace.json"
    path.write_text(json.dumps(trace(steps)))
    return path
