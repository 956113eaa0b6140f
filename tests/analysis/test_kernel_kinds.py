"""One list of communication kernels: a test per family, the near misses that stay compute, and memory."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis.breakdown import breakdown_by_rank, classified_intervals
from dashboard.analysis.kernel_kinds import LAUNCHED_BY_COLLECTIVE, family_of, kind_of, with_kernel_kinds
from tests.support.findings_trace import TraceBuilder


@pytest.mark.parametrize(("name", "family"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "NCCL"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "NCCL"),
    ("rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)", "RCCL"),
    ("void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*, int*)", "DeepEP"),
    ("void deep_ep::internode_ll::combine<7168, 9>(void*, void const*)", "DeepEP"),
    ("nvshmemi_transfer_rma_nbi_kernel(void*, void const*, unsigned long)", "NVSHMEM"),
    ("void nvshmemx_alltoall_block_kernel<float>(int, float*)", "NVSHMEM"),
    ("void c10d::symmetric_memory::multimem_all_reduce_kernel<__nv_bfloat16, 16>(...)", "symmetric-memory all-reduce"),
    ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(...)", "symmetric-memory all-reduce"),
    ("void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 8>(...)", "symmetric-memory all-reduce"),
    ("void vllm::cross_device_reduce_1stage<half, 8>(...)", "symmetric-memory all-reduce"),
    ("void all_to_all_kernel<float>(float*, float const*)", "collective by name"),
    ("fused_AllGather_matmul", "collective by name"),
    ("reduce_scatter_kernel", "collective by name"),
    ("void custom::allreduce_fusion_kernel<half>(...)", "collective by name"),
])
def test_each_communication_family_is_named(name: str, family: str) -> None:
    assert family_of(name) == family
    assert kind_of(name) == "communication"


@pytest.mark.parametrize("name", [
    "volta_sgemm_128x64_nn",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(...)",  # a reduction, not a collective
    "void at::native::(anonymous namespace)::small_gather_kernel<float>(...)",  # `all_gather` inside a word
    "void at::native::multi_tensor_apply_kernel<...>(...)",
    "void at::native::elementwise_kernel<128, 2, BroadcastFunctor>(...)",
])
def test_compute_kernels_with_near_miss_names_stay_compute(name: str) -> None:
    assert family_of(name) is None
    assert kind_of(name) == "compute"


def test_a_kernel_launched_by_a_collective_op_is_communication() -> None:
    for op in ("nccl:all_to_all", "c10d::allreduce_", "record_param_comms", "gloo:all_reduce"):
        assert family_of("void fused_pack_kernel<float>()", op) == LAUNCHED_BY_COLLECTIVE
        assert kind_of("void fused_pack_kernel<float>()", op) == "communication"
    assert kind_of("void fused_pack_kernel<float>()", "aten::add") == "compute"
    # A copy a collective launches is still a copy.
    assert kind_of("Memcpy DtoD (Device -> Device)", "nccl:all_to_all") == "memory"
    assert kind_of("Memset (Device)") == "memory"


def test_the_breakdown_counts_deepep_as_communication() -> None:
    """A DeepEP dispatch over most of the span was 0 ns of communication before the one list."""
    tables = (TraceBuilder().kernel(0, 0, 700, name="void deep_ep::intranode::dispatch<8, 768, 6144>()")
              .kernel(0, 700, 1000, name="volta_sgemm_128x64_nn").tables())
    row = breakdown_by_rank(classified_intervals(tables["kernels"], tables["memcpy"])).row(0, named=True)
    assert (row["communication_ns"], row["compute_ns"], row["span_ns"]) == (700, 300, 1000)


def test_with_kernel_kinds_reads_the_op_column_when_there_is_one() -> None:
    kernels = pl.DataFrame({"name": ["k", "k"], "op": ["record_param_comms", "aten::mm"]})
    assert with_kernel_kinds(kernels).get_column("kind").to_list() == ["communication", "compute"]
    assert with_kernel_kinds(kernels.drop("op")).get_column("kind").to_list() == ["compute", "compute"]
